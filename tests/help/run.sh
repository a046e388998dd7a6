#!/usr/bin/env bash
# `TOOL --help` and `TOOL COMMAND --help` for every command TOOL's help lists
# (ctest cli_help_linnet, cli_help_linnetc): each exits 0 and prints a usage
# line that names the command, and its options; the commands given on the
# command line must be among them. `--version` exits 0; no command, or an
# unknown one, is a usage error (exit 2).
#
#   run.sh TOOL COMMAND...
set -uo pipefail
tool=$1
shift
name=$(basename "$tool")
fail() { echo "cli_help: $*" >&2; exit 1; }

top=$("$tool" --help) || fail "$name --help exited $?"
grep -q "^Usage: .*$name \[OPTIONS\] SUBCOMMAND" <<<"$top" || fail "$name --help has no usage line:
$top"
commands=$(awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }' <<<"$top")
[ -n "$commands" ] || fail "$name --help lists no commands"
for want in "$@"; do
  grep -qx "$want" <<<"$commands" || fail "$name --help does not list \`$want\` (it lists: $(echo $commands))"
done
for c in $commands; do
  out=$("$tool" "$c" --help 2>&1)
  rc=$?
  [ $rc = 0 ] || fail "$name $c --help exited $rc:
$out"
  grep -q "^Usage: .*$name $c \[OPTIONS\]" <<<"$out" || fail "$name $c --help: no usage line naming \`$c\`:
$out"
  options=$(grep -c '^  -' <<<"$out")
  [ "$options" -ge 2 ] || fail "$name $c --help lists no options beside --help:
$out"
  echo "$name $c --help: ok ($options options)"
done
"$tool" --version >/dev/null || fail "$name --version exited $?"
"$tool" >/dev/null 2>&1
rc=$?
[ $rc = 2 ] || fail "$name without a command exited $rc, not 2"
"$tool" no-such-command >/dev/null 2>&1
rc=$?
[ $rc = 2 ] || fail "$name no-such-command exited $rc, not 2"
echo "$name: every command's --help ok"
