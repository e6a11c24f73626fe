#!/bin/sh
# readme_in_sync.sh — every generated block of a tracked Markdown file
# (scripts/readme_include) equals the data file it includes; and the checker itself
# catches a stale block, a missing file, and repairs the block it caught.
#   sh tests/readme_in_sync.sh REPO     exits 77 (skipped) outside a git checkout
repo=${1:-.}
cd "$repo" || exit 2
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "readme_in_sync: skipped (not a git checkout)"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "readme_in_sync: skipped (no /usr/bin/python3)"; exit 77; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
scripts/readme_include --check || fail "a tracked write-up differs from its data files (above)"

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
printf '# t\n<!-- include configs/match2.json -->\nstale\n<!-- end include -->\ntail\n' > "$tmp/t.md"
out=$(scripts/readme_include --check "$tmp/t.md") && fail "--check passed a stale block"
echo "$out" | grep -q "the block of configs/match2.json differs" || fail "--check did not name the stale block: $out"
scripts/readme_include "$tmp/t.md" >/dev/null || fail "update failed"
scripts/readme_include --check "$tmp/t.md" >/dev/null || fail "the updated block is still stale"
grep -q '"name": "match2"' "$tmp/t.md" || fail "the update did not put the file's text in"
tail -n 1 "$tmp/t.md" | grep -q '^tail$' || fail "the update changed text outside the block"
printf '<!-- include no/such/file.txt -->\n<!-- end include -->\n' > "$tmp/m.md"
out=$(scripts/readme_include "$tmp/m.md") && fail "a missing include file passed"
echo "$out" | grep -q "includes no/such/file.txt, which does not exist" || fail "missing file not named: $out"
echo "readme_in_sync: $failures failed"
[ "$failures" -eq 0 ]
