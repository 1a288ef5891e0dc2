#!/usr/bin/env bash
# The C and C++ compiler of make test's debug build: `test-cc.sh CLANG PCH-DIRECTORY
# ARGUMENTS...` runs the toolchain's CLANG with ARGUMENTS, with one change.
# The two copies of BoringSSL in the graph (swift-nio-ssl's CNIOBoringSSL for TLS and
# swift-crypto's CCryptoBoringSSL for PostgresNIO's SCRAM) are 526 C++ files, and each
# parses some 40,000 lines of libstdc++'s headers before its own code: at -O0 that parse is
# most of a file's time, and the two copies were 316 of the 855 CPU-seconds of the tests'
# whole build (2 cores, 2026-12-07). Their C++ files are compiled here with those standard
# headers precompiled once per target (`-include-pch`; the headers are guarded, so a file's
# own includes of them cost nothing): 202 CPU-seconds. Every object is the same, byte for
# byte, as without it (all 526 compared, 2026-12-07); should a compile with the header
# fail, the file is compiled again without.
# Every other file is compiled as it is. SwiftPM takes the compiler from CC (and, given a
# compiler of its own, writes no index store for C, which only Swift's test discovery
# reads); a plain `swift build` uses the toolchain's clang as it is.
# The Makefile's test-frontend target writes .build/test-toolchain/bin/clang, which calls
# this.
set -euo pipefail
clang=$1
pch_directory=$2
shift 2
source_file=
previous=
for argument in "$@"; do
  [[ $previous == -c ]] && source_file=$argument
  previous=$argument
done
case $source_file in
*/Sources/CNIOBoringSSL/*.cc | */Sources/CCryptoBoringSSL/*.cc) ;;
*) exec "$clang" "$@" ;;
esac
# A file that defines or undefines a macro before its first include (crypto/bio/file.cc's
# `_FILE_OFFSET_BITS`, the `_GNU_SOURCE` of others) would see headers the precompiled ones
# did not: it is compiled as it is.
defines_first='/^[ \t]*#[ \t]*include/ { exit 0 } /^[ \t]*#[ \t]*(define|undef)/ { exit 1 }'
if [[ ! -r $source_file ]] || ! awk "$defines_first" "$source_file"; then
  exec "$clang" "$@"
fi
# The target's own arguments, without the file's: they decide the header's key, so each
# target (and each change of its flags) gets a header of its own.
shared=()
skip=0
for argument in "$@"; do
  if ((skip)); then
    skip=0
    continue
  fi
  case $argument in
  -c | -o | -MT | -MF) skip=1 ;;
  -MD) ;;
  *) shared+=("$argument") ;;
  esac
done
key=$(printf '%s\n' "$clang" "${shared[@]}" | sha256sum | cut -c1-16)
pch=$pch_directory/std-$key.pch
if [[ ! -e $pch && ! -e $pch.failed ]]; then
  mkdir -p "$pch_directory"
  exec 9> "$pch.lock"
  flock 9
  if [[ ! -e $pch && ! -e $pch.failed ]]; then
    header=$pch_directory/std-$key.hpp
    printf '#include <%s>\n' algorithm array atomic bitset cstdint functional initializer_list \
      iterator limits memory optional string_view tuple type_traits utility variant > "$header"
    if "$clang" "${shared[@]}" -x c++-header "$header" -o "$pch.$$" 2> "$pch.log"; then
      mv "$pch.$$" "$pch"
    else
      rm -f "$pch.$$"
      : > "$pch.failed"
    fi
  fi
  exec 9>&-
fi
if [[ -e $pch ]] && "$clang" "$@" -include-pch "$pch" 2> /dev/null; then
  exit 0
fi
exec "$clang" "$@"
