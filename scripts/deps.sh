#!/usr/bin/env bash
# Installs what Shopfloor needs to build and test, idempotently:
#   1. the Debian packages listed in scripts/apt-packages.txt that are missing
#      (apt-get update first, only when something is missing);
#   2. every step in scripts/deps.d/*.sh (pinned source builds), each idempotent itself.
# `scripts/deps.sh apt` does only the first, `scripts/deps.sh sources` only the second (make
# test starts the barcode fixture sets, which need only Debian's tools, between the two).
set -euo pipefail
cd "$(dirname "$0")/.."
part=${1:-all}
case $part in
  all | apt | sources) ;;
  *) echo "usage: scripts/deps.sh [apt|sources]" >&2; exit 64 ;;
esac

# The Debian packages.
apt_packages() {
  mapfile -t wanted < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' scripts/apt-packages.txt)
  missing=()
  for p in "${wanted[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$p")
  done

  if ((${#missing[@]})); then
    if [[ $(id -u) -ne 0 ]]; then
      if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        SUDO=sudo
      else
        echo "error: missing Debian packages: ${missing[*]}" >&2
        echo "error: run as root: apt-get update && apt-get install -y ${missing[*]}" >&2
        exit 1
      fi
    else
      SUDO=
    fi
    echo "deps: installing ${missing[*]}" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >&2
  else
    echo "deps: all ${#wanted[@]} Debian packages present" >&2
  fi
}

# The pinned source builds.
source_builds() {
  for step in scripts/deps.d/*.sh; do
    [[ -e "$step" ]] || continue
    bash "$step"
  done
}

[[ $part == sources ]] || apt_packages
[[ $part == apt ]] || source_builds
