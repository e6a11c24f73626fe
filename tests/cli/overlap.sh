#!/bin/sh
# overlap.sh — `./train overlap RUN_DIR` counts the test examples a run also trained
# on, and its counts equal a brute-force count over the rows training really drew
# (ATTNLAB_TEST_DUMP_ROWS, util/testhook.h: the test set and every training batch):
#   - a streaming index lookup run over a small space, paused half way and resumed
#     (the stream continues from the checkpoint): test rows seen and training rows
#     that are test rows, both > 0, for the whole run and for --steps N (the first N
#     batches);
#   - a streaming chain-of-thought run (arith, keyed by prompt; the rest of a row is
#     a function of its prompt, so whole rows compare the same);
#   - per-group counts (eq_random: equal and unequal halves, told apart from the tokens);
#   - a fixed training set: 0 of each, and none of the batches holds a test row;
#   - a run folder without model.safetensors works (committed results keep none);
#   - the documented errors: no summary.json without --steps, --steps on a fixed
#     set, a folder without config.json, a bad --steps value;
#   - scripts/overlap_audit: each line is overlap --json of a run folder, and
#     scripts/results_tables overlap renders them; --update FILE FOLDER… puts the
#     folders' lines into FILE (replaced, added, the rest kept, path order), and a
#     file with a line that is not a run's object is refused and left as it was.
#
#   sh tests/cli/overlap.sh ATTNLAB REPO
# Prints "overlap: N checks, N failed"; exits 77 (skipped) without /usr/bin/python3.
bin=$1 repo=$2
[ -x "$bin" ] && [ -d "$repo" ] || { echo "usage: overlap.sh ATTNLAB REPO"; exit 2; }
[ -x /usr/bin/python3 ] || { echo "overlap: skipped (no /usr/bin/python3)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/attnlab-overlap-XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1
checks=0 failures=0
ok() {
    checks=$((checks + 1))
    if [ "$1" -ne 0 ]; then failures=$((failures + 1)); echo "FAIL: $2"; fi
}

# brute RUN DUMP [STEPS]: overlap --json of RUN (with --steps STEPS) against a count over
# DUMP's rows (its first STEPS batches); MIN: the least number of test rows seen.
brute() {
    run=$1 dump=$2 steps=$3 min=$4
    if [ -n "$steps" ]; then "$bin" overlap "$run" --json --steps "$steps" >"$work/o.json" 2>"$work/err.txt"
    else "$bin" overlap "$run" --json >"$work/o.json" 2>"$work/err.txt"; fi
    ok $? "overlap $run failed: $(cat "$work/err.txt")"
    python3 - "$work/o.json" "$dump" "$run/config.json" "$steps" "$min" <<'EOF'
import json, sys
o = json.load(open(sys.argv[1]))
cfg = json.load(open(sys.argv[3]))
batch = cfg["train"]["batch_size"]
test, train = [], []
for line in open(sys.argv[2]):
    tag, *tok = line.split()
    (test if tag == "test" else train).append(tuple(tok))
test = test[:o["test_rows"]]            # a resumed run dumps its test set again
if sys.argv[4]:
    train = train[:int(sys.argv[4]) * batch]
streaming = cfg["task"]["train_size"] == 0
tests = set(test)
in_test = sum(r in tests for r in train)
seen = set(r for r in train if r in tests)
want = {"train_rows_in_test": in_test, "test_rows_in_train": sum(r in seen for r in test), "test_rows": len(test)}
if streaming:
    want["train_rows"] = len(train)
else:
    want["train_rows"] = cfg["task"]["train_size"]
got = {k: o[k] for k in want}
assert got == want, f"overlap says {got}, the dumped rows say {want}"
assert o["training"] == ("streamed" if streaming else "fixed set"), o["training"]
assert want["test_rows_in_train"] >= int(sys.argv[5]), f"only {want['test_rows_in_train']} test rows seen: the check is weak"
EOF
    ok $? "overlap of $run does not match the brute-force count over its dumped rows"
}

# fixture NAME TASK STEPS TEST_SIZE [OPTION…]: trains a tiny model on TASK (a JSON
# object) into $work/NAME, its rows dumped to $work/NAME.rows.
fixture() {
    name=$1 task=$2 steps=$3 test=$4
    shift 4
    cat >"$work/$name.json" <<JSON
{ "task": $task,
  "model": {"d_model": 8, "n_heads": 1, "n_layers": 1, "attention": {"causal": true}},
  "train": {"steps": $steps, "batch_size": 16}, "eval": {"every": 10, "test_size": $test} }
JSON
    ATTNLAB_TEST_DUMP_ROWS="$work/$name.rows" "$bin" "$work/$name.json" --out "$work/$name" --quiet "$@" \
        >"$work/t.txt" 2>&1
    ok $? "training the $name fixture $*: $(tail -n 3 "$work/t.txt")"
}

# 1. streaming index lookup: 2 letters, lengths 3..6 (test rows have length 6: 2^6 * 6 rows),
# paused at step 20 and resumed.
IDX='{"type": "index_lookup", "seq_len": 6, "alphabet": 2, "min_len": 3, "train_size": TRAIN}'
fixture idx "$(echo "$IDX" | sed s/TRAIN/0/)" 40 48 --pause-at 20
fixture idx "$(echo "$IDX" | sed s/TRAIN/0/)" 40 48 --resume
brute "$work/idx" "$work/idx.rows" "" 10
brute "$work/idx" "$work/idx.rows" 7 1

# 2. streaming chain of thought, keyed by prompt: one operation mod 3.
fixture arith '{"type": "arith", "n_ops": 1, "modulus": 3, "train_size": 0}' 10 8
brute "$work/arith" "$work/arith.rows" "" 1
grep -q '"key":	"prompt"' "$work/o.json"
ok $? "arith is not keyed by prompt: $(cat "$work/o.json")"

# 2b. per-group counts: eq_random's groups, equal and unequal halves, told apart here
# from the tokens (the separator is token 2, the first 2 of a row).
fixture eq '{"type": "eq_random", "seq_len": 6, "train_size": 0}' 10 24
brute "$work/eq" "$work/eq.rows" "" 1
python3 - "$work/o.json" "$work/eq.rows" <<'EOF'
import json, sys
o = json.load(open(sys.argv[1]))
test, train = [], set()
for line in open(sys.argv[2]):
    tag, *tok = line.split()
    if tag == "test": test.append(tuple(tok))
    else: train.add(tuple(tok))
def group(row):
    m = row.index("2")
    return "equal" if row[:m] == row[m + 1:2 * m + 1] else "unequal"
want = {g: {"test_rows": sum(group(r) == g for r in test),
            "test_rows_in_train": sum(group(r) == g and r in train for r in test)} for g in ("equal", "unequal")}
assert o["groups"] == want, f"overlap says {o['groups']}, the dumped rows say {want}"
assert min(w["test_rows"] for w in want.values()) > 0, want
EOF
ok $? "overlap's per-group counts do not match the dumped rows"

# 3. a fixed training set: disjoint from the test set, and the batches come from it.
fixture fixed "$(echo "$IDX" | sed s/TRAIN/40/)" 40 48
brute "$work/fixed" "$work/fixed.rows" "" 0
grep -q '"train_rows_in_test":	0' "$work/o.json"
ok $? "a fixed training set shares rows with its test set: $(cat "$work/o.json")"

# 3b. scripts/overlap_audit: one line per finished run folder, each overlap's --json with
# the task added, and scripts/results_tables overlap renders it (per folder, then the
# runs that trained on test examples).
ATTNLAB="$bin" "$repo/scripts/overlap_audit" "$work" >"$work/audit.jsonl" 2>"$work/err.txt"
ok $? "overlap_audit failed: $(cat "$work/err.txt")"
"$repo/scripts/results_tables" overlap "$work/audit.jsonl" >"$work/audit.md"
ok $? "results_tables overlap failed"
python3 - "$bin" "$work" <<'EOF'
import json, subprocess, sys
bin, work = sys.argv[1:]
lines = [json.loads(l) for l in open(f"{work}/audit.jsonl")]
assert [o["run"] for o in lines] == [f"{work}/{n}" for n in ("arith", "eq", "fixed", "idx")], [o["run"] for o in lines]
for o in lines:
    want = json.loads(subprocess.run([bin, "overlap", o["run"], "--json"], capture_output=True, text=True).stdout)
    want["task"] = json.load(open(o["run"] + "/config.json"))["task"]["type"]
    assert o == want, (o, want)
md = open(f"{work}/audit.md").read().split("\n\n")
assert f"| `{work}` | 4 | 3 | 3 |" in md[0], md[0]
hit = [l for l in md[1].splitlines()[2:]]
assert len(hit) == 3 and all(l.split("|")[1].strip().strip("`").split("/")[-1] in ("arith", "eq", "idx") for l in hit), md[1]
EOF
ok $? "overlap_audit's lines or their table do not match overlap --json of each run"
# --update puts the audited folders' lines into an existing file (replacing a stale one,
# adding a missing one, keeping the rest) in path order: the full audit again.
sed -n '1p;3p' "$work/audit.jsonl" | sed 's/"test_rows_in_train": [0-9]*/"test_rows_in_train": 999/' \
    >"$work/part.jsonl"
sed -n '4p' "$work/audit.jsonl" >>"$work/part.jsonl"
ATTNLAB="$bin" "$repo/scripts/overlap_audit" --update "$work/part.jsonl" "$work/eq" "$work/fixed" "$work/arith" \
    >"$work/out.txt" 2>&1
ok $? "overlap_audit --update failed: $(cat "$work/out.txt")"
cmp -s "$work/part.jsonl" "$work/audit.jsonl" && grep -q "part.jsonl: 3 run(s) audited, 4 in all" "$work/out.txt"
ok $? "overlap_audit --update did not give the full audit: $(cat "$work/out.txt"; diff "$work/part.jsonl" "$work/audit.jsonl")"
printf '{"run": "x"}\nnot json\n' >"$work/bad.jsonl"
cp "$work/bad.jsonl" "$work/bad.before"
ATTNLAB="$bin" "$repo/scripts/overlap_audit" --update "$work/bad.jsonl" "$work/eq" >"$work/out.txt" 2>&1
[ $? -ne 0 ] && grep -q "bad.jsonl:2: expected one JSON object with a \"run\" key" "$work/out.txt" &&
    cmp -s "$work/bad.jsonl" "$work/bad.before"
ok $? "overlap_audit --update of a file with a bad line: $(cat "$work/out.txt")"

# 4. no weights needed: committed results keep none.
rm "$work/idx/model.safetensors" "$work/idx/train_state.safetensors"
"$bin" overlap "$work/idx" >"$work/o.txt" 2>&1
ok $? "overlap needs model.safetensors: $(cat "$work/o.txt")"
grep -q "test examples .* are also training examples (same whole row)" "$work/o.txt"
ok $? "the text report: $(cat "$work/o.txt")"

# 5. errors (docs/errors.md), each exit 2 with its message.
expect() {
    want=$1; shift
    "$bin" overlap "$@" >"$work/o.txt" 2>&1
    rc=$?
    [ $rc -eq 2 ] && grep -qF -- "$want" "$work/o.txt"
    ok $? "overlap $*: exit $rc, expected 2 and '$want', got: $(cat "$work/o.txt")"
}
rm "$work/idx/summary.json"
expect "overlap: $work/idx/summary.json cannot be read, so the number of batches the run drew is unknown (has it finished?); give it with --steps N" "$work/idx"
echo '{"name": "x"}' >"$work/idx/summary.json"
expect "overlap: $work/idx/summary.json has no number \"steps\"" "$work/idx"
expect "overlap: --steps is for streaming runs; $work/fixed/config.json trains on a fixed set of 40 rows" "$work/fixed" --steps 3
expect "'$work' is not a run folder: cannot open '$work/config.json'" "$work"
expect "overlap: --steps needs a whole number >= 0, got 'x'" "$work/idx" --steps x

echo "overlap: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
