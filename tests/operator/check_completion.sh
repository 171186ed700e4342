#!/bin/bash
# The bash completion of acemq: it loads, registers itself for acemq, and offers every
# subcommand `acemq --help` lists (so a new subcommand without completion fails here), and
# a subcommand's options.   check_completion.sh COMPLETION_FILE ACEMQ_PROGRAM
set -u
completion=$1 program=$2
source "$completion" || { echo "cannot source $completion"; exit 1; }
complete -p acemq | grep -q -- '-F _acemq' || { echo "no completion registered for acemq"; exit 1; }
offered() {  # the words offered for the command line "$@" and a last, empty word
  COMP_WORDS=("$@" "") COMP_CWORD=$#
  _acemq
  echo " ${COMPREPLY[*]} "
}
status=0
listed=$("$program" --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }')
[ -n "$listed" ] || { echo "acemq --help lists no subcommands"; exit 1; }
commands=$(offered acemq)
for command in $listed; do
  [[ $commands == *" $command "* ]] || { echo "completion does not offer subcommand $command"; status=1; }
done
[[ $(offered acemq dlq) == *" replay "* ]] || { echo "completion does not offer dlq replay"; status=1; }
COMP_WORDS=(acemq dlq replay --d) COMP_CWORD=3
_acemq
[[ " ${COMPREPLY[*]} " == *" --dry-run "* ]] || { echo "completion does not offer dlq replay --dry-run"; status=1; }
exit $status
