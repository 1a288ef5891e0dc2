# Shopfloor: one Makefile for the whole workspace. `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

SWIFT ?= swift
# How the apps ship: a release build with the Swift runtime (stdlib, Foundation, ICU) linked
# statically. A command then starts without loading and relocating a dozen Swift shared
# libraries: `reservations show` on loopback is about 40 % less CPU than with the shared
# runtime (README, "Launch time"). `make build`, `make release`, `make demo` and `make bench`
# all use it, so they share one build and measure what users run.
# Every module also reaches the metadata of the generic types it names through accessors, not
# by mangled name: a mangled name is resolved at first use by checking the type's generic
# requirements, and each conformance not yet seen scans all ~7,000 conformance records of the
# static binary (a `KeyedDecodingContainer` per Codable type, ArgumentParser's sets and
# dictionaries). `reservations show` on loopback: 19.8 -> 15.7 ms CPU, 22.8 -> 17.6 ms
# (perf stat -r 60, 2 cores, 2026-12-07; Benchmarks/README.md, "Launch time").
METADATA_ACCESSORS := -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors
RELEASE := -c release --static-swift-stdlib $(METADATA_ACCESSORS)
BIN_PATH = $$($(SWIFT) build $(RELEASE) --show-bin-path)
# The capability packages under Packages/. The root package owns their test targets too
# (same names and directories), so `make test` builds one graph: each dependency once.
PACKAGES := $(sort $(notdir $(patsubst %/Package.swift,%,$(wildcard Packages/*/Package.swift))))
# Where a test suite runs is decided here, and only here. Every test target runs in one test
# process (the built bundle, ShopfloorPackageTests.xctest), where Swift Testing runs suites
# in parallel: a suite whose tests must not overlap says `.serialized`, and every child
# process starts through ChildProcesses (Packages/ChildProcesses), which waits without
# holding a thread. A target is listed here, to run in a process of its own (when: below),
# only with its reason:
# - AuthTests and SuiteClientTests: their tests time deadlines, retries and cancellation to
#   the tenth of a second (`elapsed < 0.8`); in one process with the integration tests,
#   whose dozens of child processes its two pool threads served, such a time measured that
#   contention too.
# - IntegrationTests: the apps as real processes, whose deadlines they check (a command on a
#   dead network ends within the connect timeout + 1 s); beside StoreServerTests' sign-in
#   floods and the OCR those seconds stretch by half.
# - ImageCacheTests: its pipeline tests wait on a local image server whose answers starved
#   beside the shared process's load (2 minutes without an answer, seen 2026-11-27).
# - StoreServerTests.ConnectionLimitTests (one suite): it opens hundreds of connections
#   from one address at a server at its cap; beside the other suites' in-process servers
#   their requests timed out (CI, 2026-11-27).
# - ScannerTests: decoding and OCR are half a minute of synchronous CPU work on the
#   concurrency pool's two threads (with Scanner's pixel loops optimised in debug builds
#   too; see Packages/Scanner/Package.swift); in the shared process they would hold both,
#   and every test waiting on a child or a socket (and timing it) would wait for a thread.
OWN_PROCESS_TESTS := IntegrationTests ImageCacheTests AuthTests SuiteClientTests StoreServerTests.ConnectionLimitTests ScannerTests
# When the processes run: the shared one with BESIDE_SHARED beside it, then IntegrationTests
# (after, for its reason above) with BESIDE_INTEGRATION beside it, each suite in a process of
# its own. A word is a lane: the suites joined by + run one after another, the lanes side
# by side. Every target of OWN_PROCESS_TESTS is in exactly one place here (test-run checks).
# - ScannerTests, beside the shared process from its start: half a minute of CPU on its own
#   two threads, while the shared process mostly waits on servers and children.
# - ImageCacheTests, AuthTests, SuiteClientTests and ConnectionLimitTests: one after another
#   after the integration tests, they left both cores idle for most of their 29 s, waiting on
#   deadlines, stalls and their own servers (2026-11-30). In processes of their own, what they
#   time is not held up by another suite's threads, and their bounds (0.65-1.7 s, under
#   0.8 s) leave half a second or more. The phase is CPU-bound on 2 cores (about 210
#   CPU-seconds of suites), so each goes where the cores have room: ImageCacheTests after
#   ScannerTests (it ends before the shared process), the others beside the integration
#   tests. Test phase on a built tree: 142 s before, 116 s so; 119 s with all four beside
#   the integration tests, 127 s in two lanes there, and all four started at once there
#   SuiteClientTests' deadline checks measured 3.5 s for 3 (the one layout that failed).
BESIDE_SHARED := ScannerTests+ImageCacheTests
BESIDE_INTEGRATION := AuthTests+SuiteClientTests+StoreServerTests.ConnectionLimitTests
# The targets that run in processes of their own, by when they run: the shared process skips
# these, and they must be OWN_PROCESS_TESTS (no more, no fewer).
SHARED_SKIPS = $(sort IntegrationTests $(subst +,$(space),$(BESIDE_SHARED) $(BESIDE_INTEGRATION)))
# How every debug build of the workspace's tests is made (make test, test-run and check share
# it, so they share one build): no debug information. The tests' source locations come from
# Swift Testing's macros, not from DWARF, and a crash's backtrace still names its functions.
# In make test on a new clone, `swift build` took 246 s without it against 261 s with it, and
# `--build-tests` 89 s against 100 s (2 cores, 2026-11-30); line tables only saved a third
# as much. And each module compiled as a whole (`-wmo` at -Onone: one compiler job parses and
# type-checks every file once, and writes the module itself, where SwiftPM's debug default
# is a job per core plus one that emits the module, each parsing every file again; two LLVM
# threads, one object per file as SwiftPM and the index store expect). On a new clone, one
# after the other with nothing else running (2 cores, 2026-12-07): `swift build` 310 s
# against 365 s with the former `-driver-batch-count 1` (one job per module; SwiftPM's
# default was slower still), `--build-tests` 93 s against 104 s; an edit in one StoreServer
# file rebuilt the tests in 12.6 s against 16.1 s. With the module emitted by a job of its
# own, 332 s. And generic metadata reached through accessors, as in the release build
# (RELEASE says why): each process the suites start, the apps' some 1,300 and the test
# processes', otherwise resolves mangled names and scans the conformance records of a debug
# binary at each first use. On one tree, one build after the other (2 cores, 2026-12-08):
# make test-run 181 -> 157 s (346 -> 300 CPU-s), and the two builds no slower (355 -> 312 s).
# For a debugger, build with `make test TEST_BUILD_FLAGS=` (or plain `swift build`).
TEST_BUILD_FLAGS ?= -debug-info-format none -Xswiftc -wmo -Xswiftc -num-threads -Xswiftc 2 \
  -Xswiftc -no-emit-module-separately-wmo -Xswiftc -disable-batch-mode $(METADATA_ACCESSORS)
# The Swift of those builds: the toolchain's, but for swift-argument-parser compiled without
# `DEBUG` (scripts/test-swift-frontend.sh says why: a debug app's launch 77 ms against
# 13.5 ms; make test-run on one built tree 218 s (380 CPU-s) with it, 188 s (312 CPU-s)
# without, 2 cores, 2026-12-07) and SwiftNIO's event-loop core compiled with `-O` (the
# script says why and which modules). test-frontend sets it up.
# And its C and C++ compiler: the toolchain's clang, but for the two BoringSSL copies' C++
# files compiled with a precompiled header of libstdc++'s and BoringSSL's public headers,
# its templates instantiated once (scripts/test-cc.sh says why and how the objects were
# compared): those copies took 316 of the build's 855 CPU-seconds, 113 with it (2 cores,
# 2026-12-07).
TOOLCHAIN_BIN = $(dir $(realpath $(shell command -v $(SWIFT))))
TEST_FRONTEND = $(CURDIR)/.build/test-toolchain/bin/swift-frontend
TEST_CC = $(CURDIR)/.build/test-toolchain/bin/clang
TEST_SWIFT = env SWIFT_DRIVER_SWIFT_FRONTEND_EXEC=$(TEST_FRONTEND) CC=$(TEST_CC) $(SWIFT)
# Every SwiftPM command of make test and make check goes through TEST_SWIFT, the package
# resolution and `swift test` too: SwiftPM keys its cache of compiled manifests by the whole
# environment, so a resolve without these two variables left the build to compile the graph's
# manifests again (12.7 CPU-s, about 8 s at the build's start on 2 cores, 2026-12-07).
# The driver's remark, once per module, that `-wmo` builds are never incremental.
WMO_REMARKS = 2>&1 | { grep -v '^remark: Incremental compilation has been disabled' || true; }
TEST_BUNDLE = $$($(SWIFT) build $(TEST_BUILD_FLAGS) --show-bin-path)/ShopfloorPackageTests.xctest
# `make check`: the quick local loop, suites that need no PostgreSQL, no app or server
# process, no shaped link and no OCR.
CHECK_TESTS := ModelsTests PlumbingTests PNGTests ChildProcessesTests AuthTests ProductImagesTests SuiteClientTests
empty :=
space := $(empty) $(empty)
export SHOPFLOOR_CORPUS ?= $(abspath $(CURDIR)/../shared/corpus)
# libtesseract uses OpenMP; our engines are pooled per thread, so one OpenMP thread each.
export OMP_THREAD_LIMIT ?= 1

# Sources only: never the checkouts under .build directories.
FORMAT_PATHS := Package.swift Apps Sources Tests Fuzz Benchmarks/Package.swift Benchmarks/Benchmarks Benchmarks/Tools \
  $(foreach p,$(PACKAGES),Packages/$(p)/Package.swift Packages/$(p)/Sources Packages/$(p)/Tests)

.PHONY: help deps build test test-frontend test-run check test-packages stress fuzz demo bench bench-thresholds bench-network format release install uninstall clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 15

deps: ## install missing Debian packages (apt-get) and pinned source builds
	@scripts/deps.sh

# The shipped apps, product by product: a plain `swift build` would also link the packages'
# test helper executables (their stress tools and AuthPeer), which nobody ships.
APPS := scan suite-defaults reservations catalog store-server

build: deps ## release build of the five apps only, Swift runtime linked statically (binaries in `swift build -c release --show-bin-path`)
	@for app in $(APPS); do \
	  echo "==> swift build $(RELEASE) --product $$app"; \
	  $(SWIFT) build $(RELEASE) --product $$app; \
	done
	@bash scripts/check-start-libraries.sh "$(BIN_PATH)"
	@echo "binaries in $(BIN_PATH)"

# Beside the build, in the cores it leaves idle or at a lower priority than what it shares
# them with:
# - the barcode fixture sets ScannerTests read (scripts/fixtures: ImageMagick and zint, about
#   a minute of CPU on a new machine, cached per machine after that), generated at a lower
#   priority from the moment Debian's packages are in, beside the ZXing build too: started
#   with the build, they ended 14 s after it (2026-11-30), and generated inside the test
#   phase they held ScannerTests half a minute past the shared process. A set that fails
#   here is generated again, with its error, by ScannerTests.
# - the deployment rig (Tests/Rig/run.sh: about a minute, 24 CPU-seconds, mostly waiting on
#   namespaces, HAProxy and PostgreSQL), once the apps are built, while the tests compile at
#   a lower priority than the rig's processes. Its two groups (install, rig) run side by
#   side: one after the other they took 96 s there, 10 s more than compiling the tests
#   (2026-11-30). The suites start after the rig ends, so no timed test meets it.
FIXTURE_SETS := scripts/fixtures/degraded-barcodes.py scripts/fixtures/rotated-barcodes.py \
  scripts/fixtures/maxicode-photos.py scripts/fixtures/families-barcodes.py

# make deps, with the package graph resolved beside it: resolving clones some thirty
# packages from SwiftPM's cache (24 s on a new clone), which waits on the disk while the
# pinned ZXing build (52 s on a new machine) keeps the cores busy.
test: test-frontend ## build everything once, then run every test suite (make test-run)
	@mkdir -p .build; set -m; rm -f .build/rig.status; \
	echo "==> swift package resolve, beside make deps (log in .build/resolve.log)"; \
	$(TEST_SWIFT) package resolve > .build/resolve.log 2>&1 & resolve=$$!; \
	scripts/deps.sh apt || { wait $$resolve; exit 1; }; \
	echo "==> the barcode fixture sets, at a lower priority from here on (once per machine; log in .build/fixtures.log)"; \
	( for set in $(FIXTURE_SETS); do nice -n 10 python3 "$$set" || exit 1; done ) \
	  > .build/fixtures.log 2>&1 & fixtures=$$!; \
	stop() { kill $$fixtures 2>/dev/null; wait $$fixtures $$resolve; exit 1; }; \
	scripts/deps.sh sources || stop; \
	wait $$resolve || { cat .build/resolve.log >&2; echo "error: swift package resolve failed (.build/resolve.log)" >&2; stop; }; \
	echo "==> scripts/check-test-mirror.py: the root's copies of the packages' test targets"; \
	python3 scripts/check-test-mirror.py || stop; \
	echo "==> swift build $(TEST_BUILD_FLAGS): the apps, every package and the test helpers, one graph"; \
	$(TEST_SWIFT) build $(TEST_BUILD_FLAGS) $(WMO_REMARKS) || stop; \
	echo "==> Tests/Rig/run.sh beside the build of the tests (its output after the suites)"; \
	( status=0; bin="$$($(SWIFT) build $(TEST_BUILD_FLAGS) --show-bin-path)"; \
	  bash Tests/Rig/run.sh "$$bin" install > .build/rig-install.log 2>&1 & install=$$!; \
	  bash Tests/Rig/run.sh "$$bin" rig > .build/rig-rig.log 2>&1 || status=$$?; \
	  wait $$install || status=$$?; \
	  cat .build/rig-install.log .build/rig-rig.log; echo "$$status" > .build/rig.status ) \
	  > .build/rig.log 2>&1 & rig=$$!; \
	echo "==> swift build --build-tests $(TEST_BUILD_FLAGS): every test target, at a lower priority than the rig"; \
	nice -n 10 $(TEST_SWIFT) build --build-tests $(TEST_BUILD_FLAGS) $(WMO_REMARKS) || { wait $$rig; stop; }; \
	wait $$fixtures || echo "warning: the barcode fixture sets were not generated (.build/fixtures.log); ScannerTests will try again" >&2; \
	wait $$rig
	@$(MAKE) --no-print-directory test-run RIG_STATUS=.build/rig.status

test-frontend: # the frontend and C compiler of the tests' builds (TEST_SWIFT), for the toolchain in use now
	@mkdir -p $(dir $(TEST_FRONTEND))
	@ln -sfn "$(TOOLCHAIN_BIN)../lib" "$(dir $(TEST_FRONTEND))../lib"
	@printf '#!/bin/sh\nexec "%s" "%s" "$$@"\n' "$(CURDIR)/scripts/test-swift-frontend.sh" \
	  "$(TOOLCHAIN_BIN)swift-frontend" > "$(TEST_FRONTEND)"
	@printf '#!/bin/sh\nexec "%s" "%s" "%s" "$$@"\n' "$(CURDIR)/scripts/test-cc.sh" \
	  "$(TOOLCHAIN_BIN)clang" "$(CURDIR)/.build/test-toolchain/pch" > "$(TEST_CC)"
	@chmod +x "$(TEST_FRONTEND)" "$(TEST_CC)"

# RIG_STATUS: a file holding the exit status of a rig run already made, its output beside it
# in the same name ending .log (make test runs the rig beside its build); without it,
# test-run runs the rig last.
# Every test process runs the built bundle itself, as `swift test --skip-build` would (that
# reloads the package graph first: 3 s a process), and like it in a process group of its own
# (`set -m`): in the caller's group, which may be orphaned (a CI job whose starter has
# exited), the kernel discards SIGTSTP, and the tests that stop a child would wait in vain.
test-run: ## the test phase of make test on what is built: the shared process with BESIDE_SHARED beside it, then IntegrationTests with BESIDE_INTEGRATION beside it
	@set -m; failed=(); bundle="$(TEST_BUNDLE)"; \
	if [[ ! -x "$$bundle" ]]; then echo "error: $$bundle is not built: run make test (or swift build --build-tests $(TEST_BUILD_FLAGS))" >&2; exit 1; fi; \
	if [[ "$(SHARED_SKIPS)" != "$(sort $(OWN_PROCESS_TESTS))" ]]; then \
	  echo "error: OWN_PROCESS_TESTS ($(sort $(OWN_PROCESS_TESTS))) and the targets BESIDE_SHARED, BESIDE_INTEGRATION and IntegrationTests run ($(SHARED_SKIPS)) differ" >&2; exit 1; fi; \
	rm -f .build/beside.failed; \
	beside=(); beside_tests=(); \
	start() { for lane in "$$@"; do \
	    ( IFS=+; for t in $$lane; do \
	        "$$bundle" --testing-library swift-testing --filter "^$$t[./]" > ".build/$$t.log" 2>&1 \
	          || echo "$$t" >> .build/beside.failed; \
	      done ) & beside+=($$!); beside_tests+=($${lane//+/ }); \
	  done; }; \
	finish() { for pid in "$${beside[@]}"; do wait $$pid || failed+=("a lane beside (exit $$?)"); done; \
	  for t in "$${beside_tests[@]}"; do echo "==> $$t:"; cat ".build/$$t.log"; done; \
	  if [[ -s .build/beside.failed ]]; then mapfile -t more < .build/beside.failed; failed+=("$${more[@]}"); fi; \
	  rm -f .build/beside.failed; beside=(); beside_tests=(); }; \
	echo "==> $(BESIDE_SHARED): beside the shared process, each in a process of its own (their output when it ends)"; \
	start $(BESIDE_SHARED); \
	echo "==> every test target but $(SHARED_SKIPS), in one process"; \
	"$$bundle" --testing-library swift-testing \
	  --skip '^($(subst $(space),|,$(SHARED_SKIPS)))[./]' || failed+=("the shared process"); \
	finish; \
	echo "==> $(BESIDE_INTEGRATION): beside IntegrationTests, each in a process of its own (their output when it ends)"; \
	start $(BESIDE_INTEGRATION); \
	echo "==> IntegrationTests, in a process of its own"; \
	"$$bundle" --testing-library swift-testing --filter "^IntegrationTests[./]" || failed+=("IntegrationTests"); \
	finish; \
	echo "==> Tests/Rig/run.sh: make install's files, the unit, libcurl, and the namespace rig (https, HAProxy, PostgreSQL)"; \
	if [[ -n "$(RIG_STATUS)" ]]; then \
	  echo "(it ran beside the build of the tests: $(basename $(RIG_STATUS)).log)"; \
	  cat "$(basename $(RIG_STATUS)).log"; \
	  [[ "$$(cat "$(RIG_STATUS)" 2>/dev/null)" == 0 ]] || failed+=("deployment (Tests/Rig)"); \
	else \
	  bash Tests/Rig/run.sh "$$($(SWIFT) build $(TEST_BUILD_FLAGS) --show-bin-path)" || failed+=("deployment (Tests/Rig)"); \
	fi; \
	if (( $${#failed[@]} )); then echo "error: tests failed in: $${failed[*]}" >&2; exit 1; fi; \
	echo "all test suites passed, the deployment tests too"

check: test-frontend ## quick local loop: the build with its tests, then the fast unit suites (CHECK_TESTS: no PostgreSQL, no app or server processes, no shaped links, no OCR)
	@python3 scripts/check-test-mirror.py
	$(TEST_SWIFT) build --build-tests $(TEST_BUILD_FLAGS) $(WMO_REMARKS)
	$(TEST_SWIFT) test --skip-build --disable-xctest $(TEST_BUILD_FLAGS) --filter '^($(subst $(space),|,$(CHECK_TESTS)))\.'

test-packages: deps ## each package's tests on its own (`swift test --package-path`), as its users build it
	@failed=(); \
	for p in $(PACKAGES); do \
	  echo "==> swift test: Packages/$$p"; \
	  $(SWIFT) test --package-path Packages/$$p --disable-xctest || failed+=("Packages/$$p"); \
	done; \
	if (( $${#failed[@]} )); then echo "error: tests failed in: $${failed[*]}" >&2; exit 1; fi; \
	echo "all package test suites passed on their own: $(PACKAGES)"

stress: deps ## SharedDefaults' multi-process tests at full size (24,000 commits, about 4 minutes)
	SHOPFLOOR_STRESS=1 $(SWIFT) test --disable-xctest --filter 'SharedDefaultsTests\.ProcessTests'

fuzz: deps ## libFuzzer on the store decoder, the JSON parser and the image decoders (FUZZ_SECONDS each, default 60)
	@scripts/fuzz.sh

demo: deps build ## the suite's main job on the embedded defaults
	@scripts/demo.sh "$(BIN_PATH)"

bench: deps build ## package-benchmark suites, their regression thresholds, then comparisons against the tools users pick instead
	cd Benchmarks && $(SWIFT) package --disable-sandbox benchmark --no-progress
	@for s in Benchmarks/compare/*.sh; do \
	  [[ -e "$$s" ]] || continue; \
	  echo "==> $$s"; \
	  bash "$$s" "$(BIN_PATH)"; \
	done
	@echo "==> Benchmarks/thresholds.sh check (fails on a p90 regression of more than 10%)"
	bash Benchmarks/thresholds.sh check

bench-thresholds: deps ## record Benchmarks/Thresholds from a run on this machine (run it idle, then commit)
	bash Benchmarks/thresholds.sh update

bench-network: deps build ## client flows over shaped links (3G, Edge, 2% loss, down) between network namespaces (root)
	@bash Benchmarks/network/bench-network.sh "$(BIN_PATH)"

format: ## format all Swift sources with swift-format and .swift-format
	$(SWIFT) format --in-place --recursive --configuration .swift-format $(FORMAT_PATHS)

release: build ## the same as build: the apps as they ship (Swift runtime linked statically)

# Where `make install` puts the apps; DESTDIR stages them for a package (`make install
# DESTDIR=/tmp/stage`). The unit and the sample environment file name BINDIR and SYSCONFDIR.
PREFIX ?= /usr/local
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
DESTDIR ?=
INSTALL_ENV = PREFIX="$(PREFIX)" SYSCONFDIR="$(SYSCONFDIR)" UNITDIR="$(UNITDIR)" DESTDIR="$(DESTDIR)" APPS="$(APPS)"

install: build ## the apps stripped, with man pages, bash/zsh/fish completions, the store-server unit and sample configuration (PREFIX, DESTDIR)
	@$(INSTALL_ENV) scripts/install.sh install "$(BIN_PATH)"

uninstall: ## remove what `make install` put in place (same PREFIX, DESTDIR)
	@$(INSTALL_ENV) scripts/install.sh uninstall

clean: ## remove build products
	rm -rf .build .build-* Benchmarks/.build $(foreach p,$(PACKAGES),Packages/$(p)/.build) .deps
