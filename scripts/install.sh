#!/usr/bin/env bash
# make install / make uninstall: the five apps as a system installs them.
#
#   scripts/install.sh install BIN_PATH     (make install: after make build)
#   scripts/install.sh uninstall            (make uninstall)
#
# Settings from the environment (the Makefile passes its variables):
#   PREFIX      where the apps go (default /usr/local)
#   DESTDIR     a staging root for packagers; every path below is written under it
#   SYSCONFDIR  where the service's environment file goes (default /etc)
#   UNITDIR     systemd system units (default PREFIX/lib/systemd/system)
#   STRIP       the strip program (default strip)
#
# What it writes, each app's from its own argument parser (nothing written by hand):
#   PREFIX/bin/APP                                   stripped copy of the release binary
#   PREFIX/share/bash-completion/completions/APP     APP --generate-completion-script bash
#   PREFIX/share/zsh/site-functions/_APP             ... zsh
#   PREFIX/share/fish/vendor_completions.d/APP.fish  ... fish
#   PREFIX/share/man/man1/APP.1                      packaging/manpage.py (--experimental-dump-help)
# and for store-server:
#   UNITDIR/store-server.service                     packaging/store-server.service.in
#   PREFIX/lib/sysusers.d/shopfloor.conf             the service user (systemd-sysusers)
#   PREFIX/share/shopfloor/store-server.env          the sample configuration, as shipped
#   SYSCONFDIR/shopfloor/store-server.env            the same, only when none is there yet
# Uninstall removes exactly these; the environment file in SYSCONFDIR only while it is still
# the sample (an administrator's edits are kept, and said so).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

# The Makefile's APPS (one list for build and install), else the five apps.
read -r -a APPS <<<"${APPS:-scan suite-defaults reservations catalog store-server}"
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
SYSCONFDIR=${SYSCONFDIR:-/etc}
UNITDIR=${UNITDIR:-$PREFIX/lib/systemd/system}
STRIP=${STRIP:-strip}

usage() {
  echo "usage: install.sh install BIN_PATH | install.sh uninstall" >&2
  exit 64
}

for name in PREFIX SYSCONFDIR UNITDIR; do
  [[ ${!name} == /* ]] || { echo "error: $name must be an absolute path, got '${!name}'" >&2; exit 64; }
done
if [[ -n $DESTDIR && $DESTDIR != /* ]]; then
  DESTDIR=$(pwd)/$DESTDIR
fi

bindir=$PREFIX/bin
mandir=$PREFIX/share/man/man1
bashdir=$PREFIX/share/bash-completion/completions
zshdir=$PREFIX/share/zsh/site-functions
fishdir=$PREFIX/share/fish/vendor_completions.d
datadir=$PREFIX/share/shopfloor
sysusersdir=$PREFIX/lib/sysusers.d
envfile=$SYSCONFDIR/shopfloor/store-server.env

# Every file install writes but the environment file in SYSCONFDIR (handled on its own).
installed_files() {
  for app in "${APPS[@]}"; do
    echo "$bindir/$app"
    echo "$bashdir/$app"
    echo "$zshdir/_$app"
    echo "$fishdir/$app.fish"
    echo "$mandir/$app.1"
  done
  echo "$UNITDIR/store-server.service"
  echo "$sysusersdir/shopfloor.conf"
  echo "$datadir/store-server.env"
}

do_install() {
  local bin=${1:-}
  [[ -n $bin ]] || usage
  for app in "${APPS[@]}"; do
    [[ -x $bin/$app ]] || { echo "error: $bin/$app is not built (make build)" >&2; exit 1; }
  done
  local version date
  version=$("$bin/store-server" --version)
  date=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}" +%Y-%m-%d)
  stage=$(mktemp -d "${TMPDIR:-/tmp}/shopfloor-install.XXXXXX")
  trap 'rm -rf "$stage"' EXIT

  install -d "$DESTDIR$bindir" "$DESTDIR$mandir" "$DESTDIR$bashdir" "$DESTDIR$zshdir" \
    "$DESTDIR$fishdir" "$DESTDIR$datadir" "$DESTDIR$UNITDIR" "$DESTDIR$sysusersdir"
  for app in "${APPS[@]}"; do
    # Strip a copy: the build's own binary keeps its symbols for debugging and profiles.
    cp "$bin/$app" "$stage/$app"
    "$STRIP" --strip-all "$stage/$app"
    install -m 0755 "$stage/$app" "$DESTDIR$bindir/$app"
    "$bin/$app" --generate-completion-script bash >"$stage/$app.bash"
    "$bin/$app" --generate-completion-script zsh >"$stage/_$app"
    "$bin/$app" --generate-completion-script fish >"$stage/$app.fish"
    install -m 0644 "$stage/$app.bash" "$DESTDIR$bashdir/$app"
    install -m 0644 "$stage/_$app" "$DESTDIR$zshdir/_$app"
    install -m 0644 "$stage/$app.fish" "$DESTDIR$fishdir/$app.fish"
    python3 "$repo/packaging/manpage.py" "$bin/$app" "$stage/$app.1" --date "$date" --version "$version"
    install -m 0644 "$stage/$app.1" "$DESTDIR$mandir/$app.1"
    echo "installed $bindir/$app ($(stat -c %s "$DESTDIR$bindir/$app") bytes), its man page and completions"
  done
  sed -e "s|@BINDIR@|$bindir|g" -e "s|@SYSCONFDIR@|$SYSCONFDIR|g" \
    "$repo/packaging/store-server.service.in" >"$stage/store-server.service"
  install -m 0644 "$stage/store-server.service" "$DESTDIR$UNITDIR/store-server.service"
  install -m 0644 "$repo/packaging/sysusers.conf" "$DESTDIR$sysusersdir/shopfloor.conf"
  install -m 0644 "$repo/packaging/store-server.env" "$DESTDIR$datadir/store-server.env"
  if [[ -e $DESTDIR$envfile ]]; then
    echo "kept $envfile (the sample is $datadir/store-server.env)"
  else
    install -d -m 0755 "$DESTDIR$SYSCONFDIR/shopfloor"
    install -m 0640 "$repo/packaging/store-server.env" "$DESTDIR$envfile"
    echo "installed $envfile (edit it, then: systemctl restart store-server)"
  fi
  echo "installed $UNITDIR/store-server.service; to start it: systemd-sysusers && systemctl daemon-reload && systemctl enable --now store-server"
}

do_uninstall() {
  local removed=0
  while read -r file; do
    if [[ -e $DESTDIR$file || -L $DESTDIR$file ]]; then
      rm -f "$DESTDIR$file"
      removed=$((removed + 1))
    fi
  done < <(installed_files)
  if [[ -e $DESTDIR$envfile ]]; then
    if cmp -s "$DESTDIR$envfile" "$repo/packaging/store-server.env"; then
      rm -f "$DESTDIR$envfile"
      removed=$((removed + 1))
    else
      echo "kept $envfile: it was changed since install (remove it by hand if it is no longer wanted)"
    fi
  fi
  # Directories only this install made, when it left them empty.
  rmdir "$DESTDIR$datadir" "$DESTDIR$SYSCONFDIR/shopfloor" 2>/dev/null || true
  echo "removed $removed files"
}

case ${1:-} in
  install) do_install "${2:-}" ;;
  uninstall) do_uninstall ;;
  *) usage ;;
esac
