#!/bin/sh
# lookup_positions.sh — scripts/lookup_positions splits an index lookup test set by the
# position the index token names, and its parts add up to the whole:
#   - one row per position 1..N, offset N + 1 − position, examples summing to
#     --examples, and nothing written into the run folder;
#   - the examples-weighted accuracy of the rows equals `attnlab eval` on the whole
#     test set the same `attnlab data` writes (to 1e-6);
#   - the renderer (scripts/results_tables positions) prints one row per position and
#     the same overall accuracy;
#   - a run of another task is refused with a message naming its config.
#
#   sh tests/cli/lookup_positions.sh ATTNLAB REPO
# Prints "lookup_positions: N checks, N failed"; exits 77 (skipped) without /usr/bin/python3.
bin=$1 repo=$2
[ -x "$bin" ] && [ -d "$repo" ] || { echo "usage: lookup_positions.sh ATTNLAB REPO"; exit 2; }
[ -x /usr/bin/python3 ] || { echo "lookup_positions: skipped (no /usr/bin/python3)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/attnlab-positions-XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
export ATTNLAB="$bin" OPENBLAS_NUM_THREADS=1
checks=0 failures=0
ok() {
    checks=$((checks + 1))
    if [ "$1" -ne 0 ]; then failures=$((failures + 1)); echo "FAIL: $2"; fi
}
cat >"$work/c.json" <<'JSON'
{ "task": {"type": "index_lookup", "seq_len": 8, "alphabet": 8, "min_len": 4, "train_size": 0},
  "model": {"d_model": 16, "n_heads": 2, "attention": {"causal": true}}, "train": {"steps": 150, "batch_size": 32},
  "eval": {"every": 150, "test_size": 64} }
JSON
"$bin" "$work/c.json" --out "$work/run" --quiet >"$work/train.txt" 2>&1
ok $? "training the fixture: $(tail -n 3 "$work/train.txt")"

"$repo/scripts/lookup_positions" --examples 600 "$work/run" >"$work/p.csv" 2>"$work/err.txt"
ok $? "lookup_positions failed: $(cat "$work/err.txt")"
[ -z "$(ls "$work/run" | grep '^eval')" ]
ok $? "lookup_positions left files in the run folder: $(ls "$work/run")"
"$bin" data "$work/run/config.json" --set task.train_size=1 --set eval.test_size=600 --out "$work/data" >/dev/null 2>&1
ok $? "attnlab data failed"
whole=$("$bin" eval "$work/run" --data "$work/data/test.jsonl" --json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["test_token_acc"])')
python3 - "$work/p.csv" "$whole" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [int(r["position"]) for r in rows] == list(range(1, 9)), [r["position"] for r in rows]
assert all(int(r["offset"]) == 9 - int(r["position"]) for r in rows), "offset is not N + 1 - position"
n = sum(int(r["examples"]) for r in rows)
assert n == 600, f"{n} examples, expected 600"
weighted = sum(float(r["token_acc"]) * int(r["examples"]) for r in rows) / n
assert abs(weighted - float(sys.argv[2])) < 1e-6, f"parts {weighted} != whole {sys.argv[2]}"
EOF
ok $? "the per-position rows do not add up to the whole test set (accuracy $whole)"

"$repo/scripts/results_tables" positions "$work/p.csv" >"$work/p.md"
python3 - "$work/p.md" "$whole" <<'EOF'
import sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2 + 8 + 1, lines
last = [c.strip() for c in lines[-1].strip("|").split("|")]
assert last[0] == "all" and last[2] == f"{100 * float(sys.argv[2]):.1f}%", (last, sys.argv[2])
EOF
ok $? "results_tables positions: wrong rows or overall accuracy: $(cat "$work/p.md")"

mkdir -p "$work/other" && printf '{"task": {"type": "match2"}}\n' >"$work/other/config.json" &&
    cp "$work/run/model.safetensors" "$work/other/"
"$repo/scripts/lookup_positions" "$work/other" >/dev/null 2>"$work/err.txt"
[ $? -ne 0 ] && grep -q "other/config.json: task.type is 'match2', expected 'index_lookup'" "$work/err.txt"
ok $? "a match2 run was not refused with its config named: $(cat "$work/err.txt")"
"$repo/scripts/lookup_positions" "$work/data" >/dev/null 2>"$work/err.txt"
[ $? -ne 0 ] && grep -q "data: no config.json (expected a finished run folder)" "$work/err.txt"
ok $? "a folder without config.json was not refused with a message: $(cat "$work/err.txt")"

echo "lookup_positions: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
