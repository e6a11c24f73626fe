#!/bin/sh
# results/paper003/settings/run.sh — the probes behind the settings of paper 003's
# N = 20 configs (configs/README.md, "Paper 003's other model types at N = 20"): each is
# one of those configs with one or two keys changed, one run folder per probe under
# results/paper003/settings/GROUP/NAME, one thread each.  A probe with --pause-at stops
# part-way through its config's schedule, so it compares step for step with that
# config's committed run (the same schedule up to there).
#
#   sh results/paper003/settings/run.sh [GROUP…]     (GROUP: eq retnet mamba; default all)
#
# Re-running skips finished probes and continues stopped ones (--resume), so the whole
# list can be spread over sittings: stop it with SIGTERM to the trainer (its checkpoint
# is saved) and start the same command again.  The tables, GROUP/table.md, are
# scripts/runs_table of the group's folders with the config's own committed run first
# (each table's exact command is in its include line in configs/README.md).
cd "$(dirname "$0")/../../.." || exit 1
out=results/paper003/settings
OPENBLAS_NUM_THREADS=1
export OPENBLAS_NUM_THREADS

# probe GROUP NAME CONFIG [--pause-at S] [--set K=V]…
probe() {
    dir=$out/$1/$2
    cfg=configs/paper003/$3.json
    shift 3
    [ -f "$dir/summary.json" ] && return 0
    if [ -f "$dir/train_state.safetensors" ]; then
        log=$(./train "$cfg" --out "$dir" --resume --quiet --set train.threads=1 "$@" 2>&1)
        rc=$?
        # a pause probe already at its step is done
        echo "$log" | grep -q -- "--pause-at [0-9]*: the run in .* is already at step" && return 0
    else
        log=$(./train "$cfg" --out "$dir" --quiet --set train.threads=1 "$@" 2>&1)
        rc=$?
    fi
    echo "$log" | tail -n 1
    [ $rc -eq 0 ] || { echo "run.sh: $dir stopped (exit $rc)"; exit $rc; }
}

group_eq() {
    # One layer instead of the config's two; then its learning rate and its width.
    probe eq eq_random_1layer eq_random_transformer --set model.n_layers=1
    probe eq eq_random_1layer_lr3e-3 eq_random_transformer --set model.n_layers=1 --set train.lr=0.003
    probe eq eq_random_1layer_d128 eq_random_transformer --set model.n_layers=1 --set model.d_model=128
    # Eq-one and Eq-ncp with their one-layer configs as they stand (4 000 steps).
    probe eq eq_one_1layer eq_one_transformer
    probe eq eq_ncp_1layer eq_ncp_transformer
}

group_retnet() {
    # index_lookup_retnet (3 layers, 2 heads of width 32) to step 10 000 of its schedule,
    # with the head count changed: head width 64, 16, 8.
    probe retnet heads1 index_lookup_retnet --pause-at 10000 --set model.n_heads=1
    probe retnet heads4 index_lookup_retnet --pause-at 10000 --set model.n_heads=4
    probe retnet heads8 index_lookup_retnet --pause-at 10000 --set model.n_heads=8
    # heads 8 trained at the test length only
    probe retnet heads8_len20 index_lookup_retnet --pause-at 10000 --set model.n_heads=8 --set task.min_len=20
    # two layers instead of three; the paper's batch 64 instead of 32 (to step 20 000)
    probe retnet layers2 index_lookup_retnet --pause-at 20000 --set model.n_layers=2
    probe retnet batch64 index_lookup_retnet --pause-at 20000 --set train.batch_size=64
}

group_mamba() {
    # index_lookup_mamba (d 64, d_state 32, batch 32) to step 8 000 of its schedule, with
    # the reference's d_state 16, and at width 128 with each d_state
    probe mamba d64_state16 index_lookup_mamba --pause-at 8000 --set model.mamba.d_state=16
    probe mamba d128_state16 index_lookup_mamba --pause-at 8000 --set model.d_model=128 --set model.mamba.d_state=16
    probe mamba d128_state32 index_lookup_mamba --pause-at 8000 --set model.d_model=128
    # width 128 at twice the rate
    probe mamba d128_state16_lr4e-3 index_lookup_mamba --pause-at 4000 --set model.d_model=128 \
        --set model.mamba.d_state=16 --set train.lr=0.004
    # the same examples in half the steps: batch 64 for 20 000 steps
    probe mamba batch64_20k index_lookup_mamba --set train.batch_size=64 --set train.steps=20000
}

[ $# -gt 0 ] || set -- eq retnet mamba
for g in "$@"; do
    case $g in
    eq|retnet|mamba) group_$g ;;
    *) echo "run.sh: unknown group '$g' (eq, retnet, mamba)"; exit 2 ;;
    esac
done
