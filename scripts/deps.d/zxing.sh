#!/usr/bin/env bash
# Pinned source build of ZXing-C++ 3.1.1 (Apache-2.0) for Packages/Scanner, from the
# PyPI sdist `zxing-cpp==3.1.1` (it carries the C++ core and its C API, ZXing/ZXingC.h).
# Builds a static library once per machine into a cache outside the clone, keyed by the
# sdist's sha256 ($SHOPFLOOR_DEPS_CACHE, else $XDG_CACHE_HOME/shopfloor/deps, else
# ~/.cache/shopfloor/deps), and links .deps/zxing-cpp-3.1.1 (gitignored) to it, so new clones
# and worktrees reuse it. Idempotent: skips the build when the cache holds the pinned version.
set -euo pipefail
cd "$(dirname "$0")/../.."

version=3.1.1
sha256=1051a521b21a9fe206702ad4186aeb195154e3e1badcd99576d030723f36382b
cache=${SHOPFLOOR_DEPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shopfloor/deps}
prefix=$cache/zxing-cpp-$version-${sha256:0:16}
stamp=$prefix/.built
link=$PWD/.deps/zxing-cpp-$version

# Points the clone's .deps/zxing-cpp-<version> at the cached build.
link_into_clone() {
  mkdir -p "$(dirname "$link")"
  if [[ -L "$link" || ! -e "$link" ]]; then
    ln -sfn "$prefix" "$link"
  else  # a build from before the cache: replace it with the link
    rm -rf "$link" && ln -s "$prefix" "$link"
  fi
}

if [[ -f "$stamp" && "$(cat "$stamp")" == "$version $sha256" ]]; then
  link_into_clone
  echo "deps: zxing-cpp $version present in $prefix" >&2
  exit 0
fi
mkdir -p "$cache"
# One build at a time per cache, so parallel clones do not race on the same prefix.
exec 9>"$cache/.zxing.lock"
flock 9
if [[ -f "$stamp" && "$(cat "$stamp")" == "$version $sha256" ]]; then
  link_into_clone
  echo "deps: zxing-cpp $version present in $prefix" >&2
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/zxing-cpp.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "deps: building zxing-cpp $version into $prefix" >&2

# The sdist only (--no-binary zxing-cpp); pip may take wheels for the build tools it uses
# to read the sdist's metadata. The checksum below pins the exact file.
python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary zxing-cpp \
  -d "$work" "zxing-cpp==$version" >&2
sdist=$(ls "$work"/zxing[-_]cpp-"$version".tar.gz)
echo "$sha256  $sdist" | sha256sum --check --quiet - ||
  { echo "error: zxing-cpp sdist checksum mismatch: $sdist" >&2; exit 1; }
tar -xzf "$sdist" -C "$work"
src=$(ls -d "$work"/zxing[-_]cpp-"$version")

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S "$src/core" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
  -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
  -DZXING_READERS=ON -DZXING_WRITERS=OFF -DZXING_C_API=ON \
  -DZXING_EXPERIMENTAL_API=OFF -DZXING_USE_BUNDLED_ZINT=OFF >&2
cmake --build "$work/build" -j "$jobs" >&2
rm -rf "$prefix"
cmake --install "$work/build" >&2
echo "$version $sha256" >"$stamp"
link_into_clone
echo "deps: zxing-cpp $version installed in $prefix" >&2
