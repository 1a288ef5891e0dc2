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
RELEASE := -c release --static-swift-stdlib
BIN_PATH = $$($(SWIFT) build $(RELEASE) --show-bin-path)
# The capability packages under Packages/. The root package owns their test targets too
# (same names and directories), so `make test` builds one graph: each dependency once.
PACKAGES := $(sort $(notdir $(patsubst %/Package.swift,%,$(wildcard Packages/*/Package.swift))))
PACKAGE_TESTS := $(addsuffix Tests,$(PACKAGES))
# Test targets run in a process of their own: each package's, and the client library's,
# whose tests time deadlines and cancellation to the tenth of a second. In the root
# package's process dozens of child processes start at once (the integration tests, on
# threads of their own: Tests/IntegrationTests/Support/OwnThreads.swift); a deadline
# measured there measures that CPU contention too.
OWN_PROCESS_TESTS := $(PACKAGE_TESTS) SuiteClientTests
empty :=
space := $(empty) $(empty)
export SHOPFLOOR_CORPUS ?= $(abspath $(CURDIR)/../shared/corpus)
# libtesseract uses OpenMP; our engines are pooled per thread, so one OpenMP thread each.
export OMP_THREAD_LIMIT ?= 1

# Sources only: never the checkouts under .build directories.
FORMAT_PATHS := Package.swift Apps Sources Tests Fuzz Benchmarks/Package.swift Benchmarks/Benchmarks Benchmarks/Tools \
  $(foreach p,$(PACKAGES),Packages/$(p)/Package.swift Packages/$(p)/Sources Packages/$(p)/Tests)

.PHONY: help deps build test test-packages stress fuzz demo bench bench-thresholds bench-network format release install uninstall clean

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
	@echo "binaries in $(BIN_PATH)"

test: deps ## build everything once, then each package's tests and the root package's, each in its own process
	@echo "==> swift build --build-tests: the apps, every package and all their tests, one graph"
	$(SWIFT) build --build-tests
	@failed=(); \
	for t in $(OWN_PROCESS_TESTS); do \
	  echo "==> swift test: $$t"; \
	  $(SWIFT) test --skip-build --disable-xctest --filter "^$$t\." || failed+=("$$t"); \
	done; \
	echo "==> swift test: the root package's tests (apps and integration)"; \
	$(SWIFT) test --skip-build --disable-xctest \
	  --skip '^($(subst $(space),|,$(OWN_PROCESS_TESTS)))\.' || failed+=("root package"); \
	echo "==> Tests/Rig/run.sh: make install's files, the unit, libcurl, and the namespace rig (https, HAProxy, PostgreSQL)"; \
	bash Tests/Rig/run.sh "$$($(SWIFT) build --show-bin-path)" || failed+=("deployment (Tests/Rig)"); \
	if (( $${#failed[@]} )); then echo "error: tests failed in: $${failed[*]}" >&2; exit 1; fi; \
	echo "all test suites passed: $(OWN_PROCESS_TESTS), the root package's and the deployment tests"

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
