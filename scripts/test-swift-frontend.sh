#!/usr/bin/env bash
# The Swift compiler frontend of make test's debug build: `test-swift-frontend.sh FRONTEND
# ARGUMENTS...` runs the toolchain's FRONTEND with ARGUMENTS, with one change.
# swift-argument-parser is compiled without `DEBUG`, as in the release build users run. With
# `DEBUG` it validates every command's whole definition (through Mirror and dynamic casts)
# each time a process parses its arguments: a debug app's `--help` took 77 ms against
# 13.5 ms without it, and make test starts the apps some 1,300 times (2 cores, 2026-12-07).
# Every other module, ours included, keeps `DEBUG`, and a plain `swift build` uses the
# toolchain's frontend as it is, so the validation still runs there.
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
