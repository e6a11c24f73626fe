#!/bin/sh
# results/configs/run.sh — the committed runs of the ready-to-run configs in configs/
# (the table at the top of configs/README.md): each config as it stands, one thread,
# into results/configs/runs/NAME (the sweep: results/configs/sweep_example).
# arith.json's run is results/arith (results/README.md), so it is not repeated here.
#
#   sh results/configs/run.sh [NAME…]     (default: every config below, in this order;
#                                         probes: the settings around them, below)
#
# Re-running skips finished runs and continues stopped ones (--resume); a sweep skips
# its finished cells.  Then the tables:
#   scripts/runs_table --metric auto --threshold 0.99 results/configs/runs/*/ results/arith > results/configs/table.md
#   scripts/results_tables smallest results/configs/sweep_example/grid.csv task.seq_len model.d_model \
#       model.attention.type seq_acc_mean 0.9 > results/configs/sweep_example/smallest.md
#   scripts/runs_table --metric auto --threshold 0.99 results/arith results/configs/runs/lis/ \
#       results/configs/probes/*/ > results/configs/probes/table.md
cd "$(dirname "$0")/../.." || exit 1
OPENBLAS_NUM_THREADS=1
export OPENBLAS_NUM_THREADS

# run CONFIG DIR [--set K=V]…: configs/CONFIG.json into DIR
run() {
    cfg=configs/$1.json dir=$2
    shift 2
    # finished: a summary, and no grid left unfinished (its journal goes when it ends)
    [ -f "$dir/summary.json" ] && [ ! -f "$dir/anna_grid.journal" ] && return 0
    resume=""
    [ -f "$dir/train_state.safetensors" ] && resume=--resume
    ./train "$cfg" --out "$dir" $resume --quiet --set train.threads=1 "$@" || { echo "run.sh: $dir failed"; exit 1; }
}

# The settings the configs were chosen against, one or two keys changed each:
# results/configs/probes/NAME.  arith.json against the 3-layer, learned-position model
# it replaced; lis.json with the 30 000 training sequences the other CoT configs have.
probes() {
    p=results/configs/probes
    run arith $p/arith_layers3_learned --set model.n_layers=3 --set model.positional=learned
    run arith $p/arith_layers3_sinusoidal --set model.n_layers=3
    run arith $p/arith_layers3_learned_d96_16k --set model.n_layers=3 --set model.positional=learned \
        --set model.d_model=96 --set train.steps=16000
    run lis $p/lis_train30k --set task.train_size=30000
}

[ $# -gt 0 ] || set -- match2 index_lookup khop1 dyck lis ed sweep_example anna_khop1 probes
for name in "$@"; do
    case $name in
    sweep_example)
        ./train sweep configs/sweep_example.json --jobs 1 --set train.threads=1 --out results/configs/sweep_example \
            --quiet || exit 1 ;;
    match2|index_lookup|khop1|dyck|lis|ed|anna_khop1) run "$name" "results/configs/runs/$name" ;;
    probes) probes ;;
    *) echo "run.sh: unknown config '$name'"; exit 2 ;;
    esac
done
