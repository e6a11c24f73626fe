#!/bin/sh
# lookup_positions.sh — scripts/lookup_positions splits an index lookup test set by the
# position the index token names, and its parts add up to the whole:
#   - one row per position 1..N, offset N + 1 − position, examples summing to
#     --examples, and nothing written into the run folder;
#   - the examples-weighted accuracy of the rows equals `attnlab eval` on the whole
#     test set the same `attnlab data` writes (to 1e-6);
#   - the renderer (scripts/results_tables positions) prints one row per position and
#     the same overall accuracy;
#   - --lengths 4,8 gives the rows of each length, the length-8 rows those of the
#     default, the length-4 ones adding up to `attnlab eval` on the test set that
#     `attnlab data --set task.seq_len=4` writes; the renderer's `lengths` table has a
#     row per length with those accuracies, and `positions CSV 4` picks one length;
#   - a length past the run's seq_len is refused, naming it and the config, before
#     anything is written; a run of another task is refused with a message naming its
#     config.
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

"$repo/scripts/lookup_positions" --examples 600 --lengths 4,8 "$work/run" >"$work/l.csv" 2>"$work/err.txt"
ok $? "lookup_positions --lengths failed: $(cat "$work/err.txt")"
"$bin" data "$work/run/config.json" --set task.train_size=1 --set eval.test_size=600 --set task.seq_len=4 \
    --set task.min_len=4 --out "$work/data4" >/dev/null 2>&1
ok $? "attnlab data at length 4 failed"
whole4=$("$bin" eval "$work/run" --data "$work/data4/test.jsonl" --json 2>/dev/null |
         python3 -c 'import json,sys; print(json.load(sys.stdin)["test_token_acc"])')
python3 - "$work/l.csv" "$work/p.csv" "$whole4" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
four = [r for r in rows if r["seq_len"] == "4"]
eight = [r for r in rows if r["seq_len"] == "8"]
assert len(four) + len(eight) == len(rows), "rows of lengths other than 4 and 8"
assert [int(r["position"]) for r in four] == [1, 2, 3, 4], [r["position"] for r in four]
assert all(int(r["offset"]) == 5 - int(r["position"]) for r in four), "offset is not 5 - position at length 4"
assert eight == list(csv.DictReader(open(sys.argv[2]))), "the length-8 rows differ from the default run's"
n = sum(int(r["examples"]) for r in four)
w = sum(float(r["token_acc"]) * int(r["examples"]) for r in four) / n
assert n == 600 and abs(w - float(sys.argv[3])) < 1e-6, f"length 4: {n} examples, {w} != {sys.argv[3]}"
EOF
ok $? "lookup_positions --lengths 4,8: wrong rows (eval at length 4: $whole4)"
"$repo/scripts/results_tables" lengths "$work/l.csv" >"$work/l.md" &&
    "$repo/scripts/results_tables" positions "$work/l.csv" 4 >"$work/p4.md"
ok $? "results_tables lengths / positions CSV 4 failed"
python3 - "$work/l.md" "$work/p4.md" "$whole4" "$whole" <<'EOF'
import sys
cells = lambda line: [c.strip() for c in line.strip().strip("|").split("|")]
lines = open(sys.argv[1]).read().splitlines()
want = [["4", f"{100 * float(sys.argv[3]):.1f}%"], ["8", f"{100 * float(sys.argv[4]):.1f}%"]]
assert [cells(l) for l in lines[2:]] == want, (lines, want)
p4 = open(sys.argv[2]).read().splitlines()
assert len(p4) == 2 + 4 + 1 and cells(p4[-1])[2] == want[0][1], p4
EOF
ok $? "results_tables lengths / positions 4: wrong table: $(cat "$work/l.md" "$work/p4.md")"
"$repo/scripts/results_tables" positions "$work/l.csv" >/dev/null 2>"$work/err.txt"
[ $? -ne 0 ] && grep -q "the rows' seq_len differ; name one" "$work/err.txt"
ok $? "positions on two lengths without SEQ_LEN was not refused: $(cat "$work/err.txt")"
"$repo/scripts/lookup_positions" --lengths 4,9 "$work/run" >"$work/bad.csv" 2>"$work/err.txt"
[ $? -ne 0 ] && [ ! -s "$work/bad.csv" ] &&
    grep -q -- "--lengths 9: longer than $work/run/config.json's task.seq_len 8" "$work/err.txt"
ok $? "--lengths 9 on a length-8 run was not refused before any output: $(cat "$work/err.txt" "$work/bad.csv")"

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
