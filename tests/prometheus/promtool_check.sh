#!/bin/sh
# Hands the exposition SAMPLE-PROGRAM prints (given ARGUMENTS) to `promtool check metrics`
# (Debian's prometheus package) and fails on any parse error and on any lint finding but the
# two the family's own names cause: two counters whose names the contract fixes without
# Prometheus' `_total` (lib/acemq/metrics.hpp: set_aside_failed, rung_missing). Those are
# allowed by their whole line, so a finding about any other metric, of any kind, fails.
#   promtool_check.sh SAMPLE-PROGRAM [ARGUMENTS...]
# With PROMTOOL_EXPECT=TEXT it checks that it bites: it passes only when promtool's findings
# beyond those two include TEXT, so a missing promtool or a crashed sample cannot pass for it.
if ! command -v promtool >/dev/null 2>&1; then
  echo "promtool not found: install Debian's prometheus package (scripts/setup --servers does)" >&2
  exit 1
fi
exposition=$("$@") || { echo "$* failed" >&2; exit 1; }
printf '%s\n' "$exposition"
findings=$(printf '%s\n' "$exposition" | promtool check metrics 2>&1)
status=$?
printf '%s\n' "$findings"
case $status in
  0) [ -z "${PROMTOOL_EXPECT:-}" ] && exit 0
     echo "promtool check metrics found nothing, and should have found: $PROMTOOL_EXPECT" >&2; exit 1 ;;
  3) ;;
  *) echo "promtool check metrics refused the exposition (status $status)" >&2; exit 1 ;;
esac
unexpected=$(printf '%s\n' "$findings" | grep -v -x \
  -e 'acemq_messages_set_aside_failed counter metrics should have "_total" suffix' \
  -e 'acemq_retry_rung_missing counter metrics should have "_total" suffix' \
  -e '')
if [ -n "${PROMTOOL_EXPECT:-}" ]; then
  if printf '%s\n' "$unexpected" | grep -q -F -- "$PROMTOOL_EXPECT"; then exit 0; fi
  echo "promtool check metrics did not find what it should: $PROMTOOL_EXPECT" >&2
  exit 1
fi
if [ -n "$unexpected" ]; then
  echo "promtool check metrics found problems beyond the two fixed names of the contract:" >&2
  printf '%s\n' "$unexpected" >&2
  exit 1
fi
