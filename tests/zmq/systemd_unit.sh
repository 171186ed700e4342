#!/bin/sh
# The systemd unit of acemq-broker (tools/systemd/acemq-broker.service.in) as systemd reads
# it: `systemd-analyze verify`, silent, on a copy whose ExecStart names this build's acemq-broker,
# copied beside it into a temporary directory (verify refuses an executable under some
# mounts, such as a build tree on an overlay, as "not executable").
#   systemd_unit.sh UNIT.IN ACEMQ-BROKER
set -u
unit_in=$1 broker=$2
command -v systemd-analyze >/dev/null 2>&1 || { echo "systemd_unit: no systemd-analyze: install Debian's systemd package" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
cp "$broker" "$work/bin/acemq-broker"
sed "s|@bindir@|$work/bin|g" "$unit_in" >"$work/acemq-broker.service"
grep -q '^Type=notify$' "$work/acemq-broker.service" || { echo "systemd_unit: the unit is not Type=notify" >&2; exit 1; }
# It exits 0 on a line it cannot parse and ignores: any word from it is a finding.
findings=$(systemd-analyze verify --man=no "$work/acemq-broker.service" 2>&1)
status=$?
[ "$status" -eq 0 ] && [ -z "$findings" ] || {
  printf '%s\n' "$findings" >&2
  echo "systemd_unit: systemd-analyze verify found problems in the unit (status $status)" >&2
  exit 1
}
echo "systemd-analyze verify: the unit is clean"
