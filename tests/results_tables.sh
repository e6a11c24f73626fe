#!/bin/sh
# results_tables.sh — every table of the results write-ups (and of configs/README.md) is its data, read by a
# script or the program (issue 21): each include block of results/**/README.md names
# the command that writes its file (`<!-- include FILE: COMMAND -->`, results/README.md
# explains), the command is re-run, and the test fails, naming the block and the
# command, when its output differs from the committed file or the file from the block
# (a number edited by hand, or data committed without its table).
#   sh tests/results_tables.sh REPO [ATTNLAB]   exits 77 (skipped) outside a git checkout
repo=${1:-.}
cd "$repo" || exit 2
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "results_tables: skipped (not a git checkout)"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "results_tables: skipped (no /usr/bin/python3)"; exit 77; }
[ -n "$2" ] && export ATTNLAB="$2"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
mds=$(git ls-files 'results/README.md' 'results/*/README.md' 'configs/README.md')
# shellcheck disable=SC2086
scripts/readme_include --check $mds || fail "a results write-up's block differs from its file (above)"
# shellcheck disable=SC2086
scripts/readme_include --regenerate --require-command $mds || fail "a results table differs from its data (above)"

# The checker itself: a block whose command prints other text, and one naming no command.
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
{ printf '<!-- include results/models.md: scripts/models_table | sed s/MB/GB/ -->\n'
  cat results/models.md; printf '<!-- end include -->\n'; } > "$tmp/t.md"
out=$(scripts/readme_include --regenerate "$tmp/t.md") && fail "--regenerate passed a table that differs from its data"
echo "$out" | grep -q 'the block of results/models.md differs from its data: `scripts/models_table | sed s/MB/GB/`' ||
    fail "--regenerate did not name the block and the command: $out"
{ printf '<!-- include results/models.md -->\n'; cat results/models.md; printf '<!-- end include -->\n'; } > "$tmp/n.md"
out=$(scripts/readme_include --regenerate --require-command "$tmp/n.md") && fail "a block without a command passed"
echo "$out" | grep -q "names no generating command" || fail "the block without a command was not named: $out"
echo "results_tables: $(echo "$mds" | wc -w) write-ups, $failures failed"
[ "$failures" -eq 0 ]
