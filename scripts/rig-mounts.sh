#!/usr/bin/env bash
# Part of scripts/rig.sh: run inside a private mount namespace (`unshare -m`) on a rig host.
# Bind-mounts the rig's CA store (STATE/ssl-certs, made by update-ca-certificates) over
# /etc/ssl/certs and the rig's hosts file over /etc/hosts, then execs the command, so the
# command sees the store a host with the CA installed has; nothing outside changes.
#   rig-mounts.sh STATE [--no-ca] CMD...
set -euo pipefail
state=$1
shift
if [[ ${1:-} == --no-ca ]]; then
  shift
else
  mount --bind "$state/ssl-certs" /etc/ssl/certs
fi
mount --bind "$state/hosts" /etc/hosts
exec "$@"
