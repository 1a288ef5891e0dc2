#!/usr/bin/env bash
# The C and C++ compiler of make test's debug build: `test-cc.sh CLANG PCH-DIRECTORY
# ARGUMENTS...` runs the toolchain's CLANG with ARGUMENTS, with one change.
# The two copies of BoringSSL in the graph (swift-nio-ssl's CNIOBoringSSL for TLS and
# swift-crypto's CCryptoBoringSSL for PostgresNIO's SCRAM) are 526 C++ files, and at -O0
# each spends nearly all its time parsing the same headers (libstdc++'s, then BoringSSL's
# own) and instantiating the same templates (a `std::unique_ptr` with BoringSSL's deleter for
# every type its headers declare): the two copies were 316 of the 855 CPU-seconds of the
# tests' whole build (2 cores, 2026-12-07). Their C++ files are compiled here with a header
# precompiled once per target that holds the standard headers they use and the target's
# umbrella header (all of BoringSSL's public headers), with its templates instantiated in it
# (`-fpch-instantiate-templates`); the headers are guarded, so a file's own includes of them
# cost nothing. The two copies took 214 CPU-seconds with a header of the standard headers
# alone, 113 with this one (all 526 files, two at a time, 2026-12-07).
# Checked the same code (2026-12-07, scripts/compare-objects.py on the objects of all 526
# files compiled with and without the header): 485 identical byte for byte, 39 equivalent,
# with every function's instructions and relocations, every data section and relocation, and
# the exception tables' sizes the same (only the numbering of local exception-table labels
# and the order of template sections differ), and one, crypto/bio/file.cc in each copy,
# different: it defines `_FILE_OFFSET_BITS` before its includes, and with the header it
# would have called `fopen`, not `fopen64`. So a file that defines or undefines a macro
# before any of its includes is compiled as it is (19 files in the two copies), and a
# compile that fails with the header is compiled again without it.
# BoringSSL's internal headers (crypto/internal.h, ssl/internal.h and four more) stay out
# (measured 2026-12-07, the checks above with `__FILE__` held fixed on both sides): with
# their templates instantiated in the header the two copies took 52 CPU-seconds, but four
# files came out with different code (calls of `bssl::Array`'s members compiled as calls
# that cannot throw), and in a second header on top of this one, their templates left to
# each file, the code was the same but the saving 7 to 14 CPU-seconds, with every internal
# header's `__FILE__` spelled from the header, not from the file.
# Files outside the two copies are compiled as they are. SwiftPM takes the compiler from CC
# (and, given a compiler of its own, writes no index store for C, which only Swift's test
# discovery reads); a plain `swift build` uses the toolchain's clang as it is.
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
*/Sources/CNIOBoringSSL/*.cc) target=CNIOBoringSSL ;;
*/Sources/CCryptoBoringSSL/*.cc) target=CCryptoBoringSSL ;;
*) exec "$clang" "$@" ;;
esac
# A file that defines or undefines a macro before any of its includes (crypto/bio/file.cc's
# `_FILE_OFFSET_BITS`, the `_GNU_SOURCE` of others) would see headers the precompiled ones
# did not: it is compiled as it is.
defines_before_include='/^[ \t]*#[ \t]*(define|undef)/ { defined = 1 }
  /^[ \t]*#[ \t]*include/ && defined { exit 1 }'
if [[ ! -r $source_file ]] || ! awk "$defines_before_include" "$source_file"; then
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
key=$(printf '%s\n' "$clang" "$target" "${shared[@]}" | sha256sum | cut -c1-16)
pch=$pch_directory/$target-$key.pch
if [[ ! -e $pch && ! -e $pch.failed ]]; then
  mkdir -p "$pch_directory"
  exec 9> "$pch.lock"
  flock 9
  if [[ ! -e $pch && ! -e $pch.failed ]]; then
    header=$pch_directory/$target-$key.hpp
    {
      printf '#include <%s>\n' algorithm array atomic bitset cstdint functional initializer_list \
        iterator limits memory optional string_view tuple type_traits utility variant
      printf '#include <%s.h>\n' "$target"
    } > "$header"
    if "$clang" "${shared[@]}" -fpch-instantiate-templates -x c++-header "$header" -o "$pch.$$" \
      2> "$pch.log"; then
      mv "$pch.$$" "$pch"
    else
      rm -f "$pch.$$"
      : > "$pch.failed"
    fi
  fi
  exec 9>&-
fi
if [[ -e $pch ]] && "$clang" "$@" -include-pch "$pch" -fpch-instantiate-templates 2> /dev/null; then
  exit 0
fi
exec "$clang" "$@"
