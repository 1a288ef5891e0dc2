#!/usr/bin/env bash
# SharedStore (Packages/SharedDefaults) against Foundation's UserDefaults(suiteName:) in one
# run, with real processes: read, durable write, 8-process increments kept, cross-process
# change notification, kill -9 during writes. $1 (the root's release bin path) is unused: the
# comparison is its own small executable in the Benchmarks package.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product SharedDefaultsCompare >&2
"$(swift build -c release --show-bin-path)/SharedDefaultsCompare"
