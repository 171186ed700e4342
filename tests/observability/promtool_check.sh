#!/bin/sh
# Hands SAMPLE-PROGRAM's exposition to `promtool check metrics` (Debian's prometheus package)
# and fails on any parse error. Lint findings pass only when they are about the family's own
# metric names (fixed by the contract, so they cannot take Prometheus' suffixes).
#   promtool_check.sh SAMPLE-PROGRAM
if ! command -v promtool >/dev/null 2>&1; then
  echo "promtool not found: install Debian's prometheus package (scripts/setup --servers does)" >&2
  exit 1
fi
exposition=$("$1") || { echo "$1 failed" >&2; exit 1; }
printf '%s\n' "$exposition"
findings=$(printf '%s\n' "$exposition" | promtool check metrics 2>&1)
status=$?
printf '%s\n' "$findings"
case $status in
  0) exit 0 ;;
  3) ;;
  *) echo "promtool check metrics refused the exposition (status $status)" >&2; exit 1 ;;
esac
unexpected=$(printf '%s\n' "$findings" | grep -v -e 'counter metrics should have "_total" suffix' \
  -e 'use base unit' -e 'metric names should be written in .snake_case.' -e '^$')
if [ -n "$unexpected" ]; then
  echo "promtool check metrics found problems beyond the contract's names:" >&2
  printf '%s\n' "$unexpected" >&2
  exit 1
fi
