#!/usr/bin/env bash
# The Swift compiler frontend of make test's debug build: `test-swift-frontend.sh FRONTEND
# ARGUMENTS...` runs the toolchain's FRONTEND with ARGUMENTS, with two changes.
# - swift-argument-parser is compiled without `DEBUG`, as in the release build users run.
#   With `DEBUG` it validates every command's whole definition (through Mirror and dynamic
#   casts) each time a process parses its arguments: a debug app's `--help` took 77 ms
#   against 13.5 ms without it, and make test starts the apps some 1,300 times (2 cores,
#   2026-12-07).
# - The event-loop core of SwiftNIO and the small modules under it (OPTIMIZED) are compiled
#   with `-O`, as in the release build. At `-Onone` they were the largest part of the suites'
#   CPU: in the shared test process NIOCore 16 % and NIOPosix 6.6 % of the samples, with the
#   runtime's generic-metadata lookups they call, and the same code runs in every
#   `store-server` the tests start. They cost 26 more CPU-seconds to compile and saved 44
#   in the suites (make test-run on one tree: 157 -> 134 s; 2 cores, 2026-12-08). Their
#   `assert`s go, as in a release; NIO's preconditions stay, and Swift 6's checking already
#   keeps a channel handler's context on its event loop. Kept (`-assert-config Debug`), the
#   suites took 177 and 165 s against 156 and 159 s without, run in turns on two trees.
#   PostgresNIO (43 CPU-s more to compile for about 5 in the suites) and SQLKit (13 for 2)
#   stay as they are.
# Every other module, ours included, keeps `-Onone`, every module but ArgumentParser keeps
# `DEBUG`, and a plain `swift build` uses the toolchain's frontend as it is, so the
# validation and NIO's asserts still run there. From fresh clones on one machine (2 cores),
# `bash .ci/run` took 738 s before this change and the Makefile's metadata flag (the suites
# 187 s) and 716 s after them (150 s), two hours apart.
# The Makefile's test-frontend target writes .build/test-toolchain/bin/swift-frontend, which
# calls this, and names it in SWIFT_DRIVER_SWIFT_FRONTEND_EXEC: the driver finds the
# toolchain's lib directory beside it (../lib, a link), as beside the real frontend.
set -euo pipefail
frontend=$1
shift
module=
previous=
for argument in "$@"; do
  [[ $previous == -module-name ]] && module=$argument
  previous=$argument
done
OPTIMIZED=" NIOCore NIOPosix NIOConcurrencyHelpers _NIODataStructures DequeModule Logging "
if [[ $OPTIMIZED == *" $module "* ]]; then
  optimized=()
  for argument in "$@"; do
    if [[ $argument == -Onone ]]; then optimized+=(-O); else optimized+=("$argument"); fi
  done
  exec "$frontend" "${optimized[@]}"
fi
[[ $module == ArgumentParser ]] || exec "$frontend" "$@"
kept=()
previous=
for argument in "$@"; do
  if [[ $argument == -DDEBUG ]] || [[ $previous == -D && $argument == DEBUG ]]; then
    [[ $previous == -D ]] && unset 'kept[-1]'
  else
    kept+=("$argument")
  fi
  previous=$argument
done
exec "$frontend" "${kept[@]}"
