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

# So are the verdict rows of paper 003's protocol that scripts/protocol_prose owns (the linear
# Transformer's and the state-space models'; their paragraphs are include blocks).
scripts/protocol_prose verdicts --check || fail "paper 003's protocol verdict rows differ from their data (above)"

# So are the verdict rows with a template under results/verdicts/ (scripts/verdict_rows).
scripts/verdict_rows --check >/dev/null || fail "a verdict row differs from its template (run scripts/verdict_rows --check)"

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
# --refresh re-runs a block's command and puts its text into the block (here a stale one).
{ printf '<!-- include results/models.md: scripts/models_table -->\nstale\n<!-- end include -->\n'; } > "$tmp/f.md"
scripts/readme_include --refresh "$tmp/f.md" >/dev/null || fail "readme_include --refresh failed on a stale block"
scripts/readme_include --check "$tmp/f.md" >/dev/null || fail "readme_include --refresh left a stale block: $(cat "$tmp/f.md")"
# A template reads its data: the sparse model's seed 1 at 7 operators edited to 99.9% in a
# copy of the data changes the paragraph on 7 and 8 operators (or a claim of it is refused).
mkdir -p "$tmp/r/results" && for f in results/* configs scripts; do ln -s "$PWD/$f" "$tmp/r/$f"; done
rm "$tmp/r/results/paper004" && cp -rs "$PWD/results/paper004" "$tmp/r/results/paper004"
c="$tmp/r/results/paper004/arith_wide/cells/task.n_ops=7,d_model=128,attention.type=sparse,seed=1/summary.json"
sed 's/"test_answer_acc":[^,]*/"test_answer_acc":\t0.999/' "$PWD/${c#"$tmp/r/"}" > "$c.new" && rm "$c" && mv "$c.new" "$c"
grep -q '"test_answer_acc":.0.999' "$c" || fail "prose_template: the sparse cell at 7 operators has no test_answer_acc to edit"
out=$(scripts/prose_template --root "$tmp/r" results/paper004/prose/arith_78.md.in 2>&1)
if [ $? -eq 0 ]; then
    echo "$out" | cmp -s - results/paper004/prose/arith_78.md && fail "prose_template: the 7-operator paragraph ignores its data"
    echo "$out" | grep -qF "99.9%" || fail "prose_template: the edited accuracy is not in the paragraph: $out"
else
    echo "$out" | grep -qF "the data contradict the claim" || fail "prose_template: refused the edited data without naming a claim: $out"
fi
# protocol_prose: a number edited by hand in a verdict row is named by --check, with the
# column, and the rewrite puts back the row from the data, byte for byte.
mkdir -p "$tmp/p/results" && ln -s "$PWD/results/paper003" "$tmp/p/results/paper003" &&
    ln -s "$PWD/results/overlap.jsonl" "$tmp/p/results/overlap.jsonl"
sed 's/stops early at N = 20 and 50 at all three rates, and ends its \([0-9 ]*\) steps far short of it at N = 100 at every rate (best [0-9.]*%/stops early at N = 20 and 50 at all three rates, and ends its \1 steps far short of it at N = 100 at every rate (best 91.9%/' \
    results/verdicts.tsv > "$tmp/p/results/verdicts.tsv"
cmp -s results/verdicts.tsv "$tmp/p/results/verdicts.tsv" && fail "protocol_prose: the index-lookup row has no best accuracy at N = 100"
out=$(scripts/protocol_prose verdicts --check --root "$tmp/p") && fail "protocol_prose --check passed a number edited by hand"
echo "$out" | grep -qF 'the row "Paper 003, index lookup (Fig. 2a), the protocol: linear Transformer" differs from the data; its column 6' ||
    fail "protocol_prose --check did not name the edited row and column: $out"
echo "$out" | grep -qF "Eq-random" && fail "protocol_prose --check named an unchanged row: $out"
scripts/protocol_prose verdicts --root "$tmp/p" >/dev/null || fail "protocol_prose could not rewrite the edited row"
cmp -s results/verdicts.tsv "$tmp/p/results/verdicts.tsv" || fail "protocol_prose: the rewritten results/verdicts.tsv is not the committed one"
# prose_template: the paragraphs of a template are its data; a result typed into its prose,
# a claim its data contradict, a number printed unformatted and a missing field are refused,
# each naming its line and what to do.
mkdir -p "$tmp/q/run" && printf '{"steps": 1200, "test_token_acc": 0.5984}\n' > "$tmp/q/run/summary.json"
printf '{"step": 600, "test_loss": 2.0, "token_acc": 0.40}\n{"step": 1200, "test_loss": 1.0, "token_acc": 0.5984}\n' > "$tmp/q/run/metrics.jsonl"
printf '%%%% S = summary("run")\nIt ended at step {{ steps(S.steps) }} at\n{{ pct(S.test_token_acc) }}, up {{ pts(last(evals("run")).token_acc - at(evals("run"), 600).token_acc) }}.\n\n    ./train x --set a=1.5%%\n' > "$tmp/q/ok.md.in"
out=$(scripts/prose_template --root "$tmp/q" "$tmp/q/ok.md.in") || fail "prose_template refused a good template: $out"
[ "$out" = "$(printf 'It ended at step 1 200 at 59.8%%, up 19.8 points.\n\n    ./train x --set a=1.5%%')" ] ||
    fail "prose_template: a good template rendered as: $out"
tpl_refused() {  # TEMPLATE-TEXT EXPECTED-MESSAGE WHAT
    printf '%s\n' "$1" > "$tmp/q/bad.md.in"
    out=$(scripts/prose_template --root "$tmp/q" "$tmp/q/bad.md.in" 2>&1) && fail "prose_template passed $3"
    echo "$out" | grep -qF "$2" || fail "prose_template did not say what is wrong with $3: $out"
}
tpl_refused 'It ended at
59.8% on the test.' "bad.md.in:2: '59.8%' is typed in the prose" "a typed percentage"
tpl_refused 'It took 60 000 steps.' "bad.md.in:1: '60 000' is typed in the prose" "a typed step count"
tpl_refused 'It is {{ times(2) }} and 34× the other.' "'34×' is typed in the prose" "a typed ratio"
tpl_refused 'It took 60
000 steps.' "bad.md.in:1: '60 000' (across a line break) is typed in the prose" "a number split over two lines"
tpl_refused '## At 98.9%' "bad.md.in:1: '98.9%' is typed in the prose" "a typed number in a heading"
tpl_refused 'It rose{{ check(last(evals("run")).token_acc < 0.5, "still below half") }}.' \
    "bad.md.in:1: {{check(" "a contradicted claim"
echo "$out" | grep -qF "the data contradict the claim: still below half" || fail "prose_template did not name the claim: $out"
tpl_refused 'It ended at {{ summary("run").test_token_acc }}.' "is a float, not text: format it" "an unformatted number"
tpl_refused 'It ended at {{ pct(summary("run").test_seq_acc) }}.' "run/summary.json has no field 'test_seq_acc'" "a missing field"
tpl_refused 'It ended at {{ pct(summary("gone").test_seq_acc) }}.' "gone/summary.json does not exist" "a missing file"
# "%% use" runs another template's definitions (not its text); a circle of uses is refused.
printf '%%%% S = summary("run")\nNot printed by the user.\n' > "$tmp/q/defs.md.in"
printf '%%%% use defs.md.in\nIt took {{ steps(S.steps) }} steps.\n' > "$tmp/q/user.md.in"
out=$(scripts/prose_template --root "$tmp/q" "$tmp/q/user.md.in") || fail "prose_template refused a template with %% use: $out"
[ "$out" = "It took 1 200 steps." ] || fail "prose_template: %% use rendered as: $out"
# use(): another template's names under one of its own, so equal names do not clash.
printf '%%%% S = "not a summary"\n%%%% D = use("defs.md.in")\nIt took {{ steps(D.S.steps) }} steps, {{ S }}.\n' > "$tmp/q/ns.md.in"
out=$(scripts/prose_template --root "$tmp/q" "$tmp/q/ns.md.in") || fail "prose_template refused use(): $out"
[ "$out" = "It took 1 200 steps, not a summary." ] || fail "prose_template: use() rendered as: $out"
# A name defined otherwise by a used template, or hiding a formatter, is refused: the
# second definition would change what the first one's text quotes.
printf '%%%% S = summary("run").steps\n%%%% use defs.md.in\nx\n' > "$tmp/q/clash.md.in"
out=$(scripts/prose_template --root "$tmp/q" "$tmp/q/clash.md.in" 2>&1) && fail "prose_template passed a name defined twice otherwise"
echo "$out" | grep -qF "defs.md.in:1: S is defined already, otherwise (clash.md.in:1)" || fail "prose_template did not name both definitions: $out"
tpl_refused '%% pct = 1
x' "pct is a reader or formatter of prose_template" "a definition hiding a formatter"
printf '%%%% use loop.md.in\nx\n' > "$tmp/q/loop.md.in"
out=$(scripts/prose_template --root "$tmp/q" "$tmp/q/loop.md.in" 2>&1) && fail "prose_template passed a template that uses itself"
echo "$out" | grep -qF "goes round in a circle" || fail "prose_template did not name the circle of uses: $out"
# verdict_rows: a number edited by hand in a templated row is named with its row and
# template, and the rewrite puts the row back from the data, byte for byte.
mkdir -p "$tmp/v/results" && for d in configs scripts; do ln -s "$PWD/$d" "$tmp/v/$d"; done
for f in results/*; do
    case $f in results/verdicts.tsv|results/verdicts) ;; *) ln -s "$PWD/$f" "$tmp/v/$f" ;; esac
done
cp -r results/verdicts "$tmp/v/results/verdicts"
sed 's/the \([0-9]*\) cells cost [0-9 ]* core-hours/the \1 cells cost 1 234 core-hours/' results/verdicts.tsv > "$tmp/v/results/verdicts.tsv"
cmp -s results/verdicts.tsv "$tmp/v/results/verdicts.tsv" && fail "verdict_rows: the Fig. 3 row has no core-hours to edit"
out=$(scripts/verdict_rows --check --root "$tmp/v") && fail "verdict_rows --check passed a number edited by hand"
echo "$out" | grep -qF 'the evidence of the row "Paper 003, Fig. 3 (Mamba'\''s width on index lookup)" differs from its template results/verdicts/paper003_fig3_mamba.md.in' ||
    fail "verdict_rows --check did not name the edited row and its template: $out"
scripts/verdict_rows --root "$tmp/v" >/dev/null || fail "verdict_rows could not rewrite the edited row"
cmp -s results/verdicts.tsv "$tmp/v/results/verdicts.tsv" || fail "verdict_rows: the rewritten results/verdicts.tsv is not the committed one"
printf '%%%% COLUMN = "evidence"\nno row here\n' > "$tmp/v/results/verdicts/zz.md.in"
out=$(scripts/verdict_rows --check --root "$tmp/v" 2>&1) && fail "verdict_rows passed a template naming no row"
echo "$out" | grep -qF 'zz.md.in names no row: give it a line %% ROW = ' || fail "verdict_rows did not name the template without a row: $out"
# majority_answer: a task without answers (not chain-of-thought) is named, not counted.
out=$(scripts/majority_answer configs/match2.json task.seq_len=8 2>&1) && fail "majority_answer counted a task without answers"
echo "$out" | grep -qF "configs/match2.json --set task.seq_len=8: its test examples have no answer_start" || fail "majority_answer did not say why: $out"
# smallest: the widths a row ran name its range, a group with no run in a row says so, and a
# hit at the narrowest width a row ran is a bound when other rows ran narrower.
printf 'n,d,type,acc,n_params,flops_per_seq\n1,16,a,0.95,10,1000000\n1,16,b,0.5,10,1000000\n1,32,b,0.8,20,2000000\n2,32,a,0.5,20,2000000\n3,32,b,0.9,20,2000000\n' > "$tmp/g.csv"
out=$(scripts/results_tables smallest "$tmp/g.csv" n d type acc 0.9)
echo "$out" | grep -qF '| 1 | 16 (95.0%; 10 params, 1.0 MFLOP/seq) | none of 16..32 (80.0% at 32) |' ||
    fail "smallest: row 1 is not the hit and the widths run: $out"
echo "$out" | grep -qF '| 2 | none of 32 (50.0% at 32) | not run |' ||
    fail "smallest: row 2 does not name the one width run and the group not run: $out"
echo "$out" | grep -qF '| 3 | not run | ≤ 32 (90.0%; 20 params, 2.0 MFLOP/seq) |' ||
    fail "smallest: a hit at a row's narrowest run, other rows narrower, is not a bound: $out"
# grid: a table whose cells average different numbers of seeds marks each multi-seed cell
# with its spread and count (cells not run, 0 seeds, do not count); one seed count, no marks.
printf 'n,d,seeds_done,acc_mean,acc_std\n1,16,3,0.5,0.1\n1,32,1,0.9,\n2,16,0,,\n' > "$tmp/s.csv"
out=$(scripts/results_tables grid "$tmp/s.csv" n acc_mean --col d)
echo "$out" | grep -qF '| 1 | 50.0% ± 10.0 (3 seeds) | 90.0% |' ||
    fail "grid: a 3-seed cell beside a 1-seed one is not marked with its spread and count: $out"
echo "$out" | grep -qF 'over n seeds; the others are one seed.' || fail "grid: no note on the marks: $out"
# no cell of one seed: only the cells off the commonest count are marked, the note gives it
printf 'n,d,seeds_done,acc_mean,acc_std\n1,16,3,0.5,0.1\n1,32,2,0.9,0.02\n2,16,3,0.4,0.05\n' > "$tmp/m.csv"
out=$(scripts/results_tables grid "$tmp/m.csv" n acc_mean --col d)
echo "$out" | grep -qF '| 1 | 50.0% ± 10.0 | 90.0% ± 2.0 (2 seeds) |' ||
    fail "grid: the 2-seed cell is not marked, or a 3-seed one is, beside two 3-seed cells: $out"
echo "$out" | grep -qF '| 2 | 40.0% ± 5.0 |  |' || fail "grid: a 3-seed cell of the commonest count is marked: $out"
echo "$out" | grep -qF 'over 3 seeds, a cell marked (n seeds) over n seeds.' ||
    fail "grid: the note does not give the unmarked count: $out"
# a tie between counts leaves the larger unmarked
printf 'n,d,seeds_done,acc_mean,acc_std\n1,16,3,0.5,0.1\n1,32,2,0.9,0.02\n' > "$tmp/t.csv"
out=$(scripts/results_tables grid "$tmp/t.csv" n acc_mean --col d)
echo "$out" | grep -qF '| 1 | 50.0% ± 10.0 | 90.0% ± 2.0 (2 seeds) |' || fail "grid: a tie does not leave the larger count unmarked: $out"
# one seed count above one: each cell shows its spread, the note gives the count once
printf 'n,d,seeds_done,acc_mean,acc_std\n1,16,3,0.5,0.1\n1,32,3,0.9,0.0\n2,16,0,,\n' > "$tmp/u.csv"
out=$(scripts/results_tables grid "$tmp/u.csv" n acc_mean --col d)
echo "$out" | grep -qF '| 1 | 50.0% ± 10.0 | 90.0% ± 0.0 |' || fail "grid: cells of one seed count lack their spread: $out"
echo "$out" | grep -qF 'Each cell is the mean ± standard deviation (in points) over 3 seeds.' ||
    fail "grid: no note on the spread of cells of one seed count: $out"
echo "$out" | grep -q '(3 seeds)' && fail "grid: cells of one seed count marked with the count: $out"
# one seed everywhere: no marks, no note
printf 'n,d,seeds_done,acc_mean,acc_std\n1,16,1,0.5,\n1,32,1,0.9,\n' > "$tmp/o.csv"
out=$(scripts/results_tables grid "$tmp/o.csv" n acc_mean --col d)
echo "$out" | grep -qF '| 1 | 50.0% | 90.0% |' || fail "grid: cells of one seed are marked: $out"
echo "$out" | grep -q 'seeds' && fail "grid: a note on seeds where each cell has one: $out"
echo "results_tables: $(echo "$mds" | wc -w) write-ups, $failures failed"
[ "$failures" -eq 0 ]
