#!/bin/sh
# faults.sh — the trainer under the faults of an unattended run (README: Troubleshooting).
#
#   sh tests/cli/faults.sh CASE ATTNLAB CKPT_CHECK      (ctest runs each CASE as faults_CASE)
#
#   kill          one run killed (SIGKILL) at each of its write boundaries in turn
#                 (ATTNLAB_TEST_KILL_AT_WRITE; util/testhook.h lists them: every atomic
#                 write's complete temp file and its rename, every metrics line half
#                 written), counted from a traced run — deterministic, whatever the
#                 machine's load.  After each: a checkpoint that loads (CKPT_CHECK)
#                 when there is one, and continuing (--resume, or a restart when no
#                 checkpoint exists yet) finishes with a model.safetensors, metrics and
#                 summary figures identical to an uninterrupted run's and no temporary
#                 file left.  Also: a finished run whose model and summary were
#                 deleted gets both back from --resume.
#   signals       SIGINT and SIGTERM mid-run: exit 130 / 143, "interrupted" printed,
#                 a checkpoint that loads, and --resume finishes identically.
#   signals_in_save  SIGINT and SIGTERM sent during the first checkpoint's save
#                 (ATTNLAB_TEST_SIGNAL_AT_WRITE), with --quiet: they wait for the save;
#                 exit 130 / 143, the "interrupted" line on stderr, no temp file, a
#                 step-20 checkpoint that loads and resumes identically.
#   pause         --pause-at STEP: exit 0 at that step with the "paused" line (also with
#                 --quiet), a checkpoint at STEP that loads, no summary and no distillation
#                 grid yet; a second pause on --resume; then --resume finishes identically
#                 to an uninterrupted run and runs the grid, and a pause past train.steps
#                 just finishes the run.  Refused with
#                 exit 2 and nothing changed: a step not after the checkpoint's, a step
#                 that is not a positive integer, a missing step, `./train data`.
#   run_folder    refusals that leave the folder byte for byte as it was (a new run
#                 into a finished run, a checkpoint, another config's start; a resume
#                 with another model; --resume with --force), a new run over metrics
#                 whose checkpoint is gone (the note, the same result), --force replacing a run,
#                 a second run or sweep into a busy folder (refused with the PID),
#                 outputs onto a FIFO, a folder, a device node (root), --out /, an
#                 over-long --out (> 4031 characters) for a run, a sweep and ./train data; a memory-refused
#                 resume; a raised train.steps over finished sweep cells with no state.
#   disk_full     --out on a 320 KiB tmpfs: the first checkpoint fits, the second
#                 does not (the old files and the new temp file must coexist): a
#                 message naming the file, exit 1, the previous checkpoint still
#                 loads, no temp file left; and a full disk at the start fails before
#                 training.  Needs root and mount, else exits 77 (skipped).
#   long_paths    over-long paths (--out of a run, distill, curve; the config file, a
#                 run folder, sweep --merge, task.train_path): exit 2 naming the
#                 option, nothing written; a 523-character --out is used whole.
#   distill_resume  a distillation grid killed (SIGKILL) at each of its write
#                 boundaries in turn — every cell line of anna_grid.journal half written,
#                 every atomic write: without --resume the unfinished grid is refused
#                 (exit 2, naming the journal and --resume) and left byte for byte; with
#                 it the grid finishes with an anna_grid.csv identical to an
#                 uninterrupted grid's, the same summary numbers, and no journal or
#                 temporary file left.  --resume with other grid settings is refused
#                 showing both keys; a training whose end-of-training grid was killed
#                 continues that grid on `./train CONFIG --resume`.
#   output_folder an --out under a regular file, a read-only folder (a read-only tmpfs
#                 as root, chmod 555 otherwise) for a new and a resumed run, and
#                 --resume of a missing folder: each a clear error naming the path,
#                 exit 1, before training starts (no "effective config" printed).
#
# Runs are tiny (Match2, d = 32, 120 steps, a checkpoint every 20 steps), so the
# whole file takes well under a minute; one BLAS thread keeps results bit-exact.
# Prints "CASE: N checks, N failed" and exits 1 on any failure.
case=$1
bin=$2
check=$3
[ -x "$bin" ] && [ -x "$check" ] || { echo "usage: faults.sh CASE ATTNLAB CKPT_CHECK"; exit 2; }
OPENBLAS_NUM_THREADS=1
export OPENBLAS_NUM_THREADS
work=$(mktemp -d "${TMPDIR:-/tmp}/attnlab-faults-XXXXXX") || exit 1
mounts=""
cleanup() {
    for m in $mounts; do umount "$m" 2>/dev/null; done
    chmod -R u+w "$work" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
checks=0
failures=0
ok() {   # ok CONDITION-STATUS MESSAGE: counts one check
    checks=$((checks + 1))
    if [ "$1" -ne 0 ]; then
        failures=$((failures + 1))
        echo "FAIL: $2"
    fi
}
finish() {
    echo "$case: $checks checks, $failures failed"
    [ "$failures" -eq 0 ] && [ "$checks" -gt 0 ]
    exit $?
}

cfg="$work/c.json"
cat >"$cfg" <<'EOF'
{ "name": "faults", "seed": 7,
  "task": {"type": "match2", "seq_len": 16, "modulus": 17, "train_size": 512},
  "model": {"d_model": 32, "n_heads": 2, "attention": {"score": "unit_norm"}},
  "train": {"lr": 0.01, "batch_size": 16, "steps": 120},
  "eval": {"every": 40, "test_size": 64, "checkpoint_every": 20} }
EOF

# What must not change when a run is interrupted: the final model, every logged
# figure (wall-clock fields removed) and the summary's results.
figures() {
    sed -E 's/, "elapsed_s": [0-9.e+-]+//' "$1/metrics.jsonl"
    grep -E '"(steps|stopped_early|test_loss|test_token_acc|test_token_error|test_seq_acc)"' "$1/summary.json"
}
same_result() {   # same_result DIR REF
    cmp -s "$1/model.safetensors" "$2/model.safetensors" || return 1
    figures "$1" >"$work/fig.a" 2>/dev/null && figures "$2" >"$work/fig.b" && cmp -s "$work/fig.a" "$work/fig.b"
}
reference() {
    "$bin" "$cfg" --out "$work/ref" --quiet >/dev/null 2>&1
    ok $? "the uninterrupted reference run failed"
}
seconds() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
wait_for_file() {   # up to 20 s
    n=0
    while [ ! -f "$1" ] && [ $n -lt 2000 ]; do sleep 0.01; n=$((n + 1)); done
    [ -f "$1" ]
}
has_temp() { ls "$1" | grep -q '\.safetensors\.tmp\.'; }

# Boundaries of the reference run, in order ("write boundary K: WHAT PATH" lines).
trace_boundaries() {
    ATTNLAB_TEST_TRACE_WRITES=1 "$bin" "$cfg" --out "$work/trace" --quiet 2>"$work/trace.txt" >/dev/null
    ok $? "the traced run failed"
    grep -c '^write boundary ' "$work/trace.txt"
}

# continue_run DIR: what a person does after a crash: --resume when a checkpoint is
# there, else start the run again (the folder holds nothing that would be lost).
continue_run() {
    if [ -f "$1/train_state.safetensors" ]; then
        "$bin" "$cfg" --out "$1" --resume --quiet
    else
        "$bin" "$cfg" --out "$1" --quiet
    fi
}

case_kill() {
    reference
    total=$(trace_boundaries)
    [ "$total" -ge 20 ]
    ok $? "only '$total' write boundaries traced"
    k=1 in_ckpt=0
    while [ "$k" -le "$total" ]; do
        what=$(sed -n "s/^write boundary $k: //p" "$work/trace.txt")
        t="$work/k$k"
        ATTNLAB_TEST_KILL_AT_WRITE=$k "$bin" "$cfg" --out "$t" --quiet >/dev/null 2>&1
        rc=$?
        ok $((rc != 137)) "boundary $k ($what): exit code $rc, expected 137 (killed there)"
        case "$what" in *safetensors*) in_ckpt=$((in_ckpt + 1)) ;; esac
        if [ -f "$t/train_state.safetensors" ]; then
            "$check" "$t" >"$work/check.out" 2>&1
            ok $? "boundary $k ($what): the checkpoint left does not load: $(cat "$work/check.out")"
        fi
        continue_run "$t" >"$work/resume.out" 2>&1
        ok $? "boundary $k ($what): continuing failed: $(cat "$work/resume.out")"
        same_result "$t" "$work/ref"
        ok $? "boundary $k ($what): the continued run differs from the uninterrupted one"
        ! has_temp "$t"
        ok $? "boundary $k ($what): the continued run left the killed run's temporary file: $(ls "$t")"
        rm -rf "$t"
        k=$((k + 1))
    done
    echo "kill: killed at each of $total write boundaries ($in_ckpt inside checkpoint writes)"
    # The case the timing-based trials once hit by chance: the final state renamed,
    # the final model not — and the same with the model and summary deleted by hand.
    cp -r "$work/ref" "$work/lost"
    rm "$work/lost/model.safetensors" "$work/lost/summary.json"
    "$bin" "$cfg" --out "$work/lost" --resume --quiet >"$work/resume.out" 2>&1
    ok $? "--resume of a finished run without its model failed: $(cat "$work/resume.out")"
    same_result "$work/lost" "$work/ref"
    ok $? "--resume of a finished run whose model was deleted did not write the final model and summary"
}

case_signals() {
    reference
    for sig in INT TERM; do
        want=130
        [ $sig = TERM ] && want=143
        s="$work/sig$sig"
        # Writes held 100 ms each stretch the run to about two seconds.
        ATTNLAB_TEST_RENAME_DELAY_MS=100 "$bin" "$cfg" --out "$s" >"$work/sig.out" 2>&1 &
        pid=$!
        wait_for_file "$s/train_state.safetensors"
        ok $? "SIG$sig: no first checkpoint within 20 s"
        kill -$sig $pid
        wait $pid
        rc=$?
        ok $((rc != want)) "SIG$sig: exit code $rc, expected $want"
        grep -q "interrupted at step" "$work/sig.out"
        ok $? "SIG$sig: no 'interrupted at step' line: $(tail -n 3 "$work/sig.out")"
        "$check" "$s" >"$work/check.out" 2>&1
        ok $? "SIG$sig: no loadable checkpoint: $(cat "$work/check.out")"
        step=$(sed -n 's/^step //p' "$work/check.out")
        [ -n "$step" ] && [ "$step" -lt 120 ]
        ok $? "SIG$sig: the checkpoint is at step '$step', not mid-run"
        "$bin" "$cfg" --out "$s" --resume --quiet >/dev/null 2>&1
        ok $? "SIG$sig: --resume failed"
        same_result "$s" "$work/ref"
        ok $? "SIG$sig: the resumed run differs from the uninterrupted one"
    done
}

# Boundary number of the first write of FILE's temporary file in the traced run.
first_temp_of() {
    sed -n "s/^write boundary \([0-9]*\): temp .*\/$1\$/\1/p" "$work/trace.txt" | head -n 1
}

case_signals_in_save() {
    reference
    trace_boundaries >/dev/null
    k=$(first_temp_of model.safetensors)   # inside the first checkpoint (step 20)
    s="$work/sigsave"
    ATTNLAB_TEST_SIGNAL_AT_WRITE=$k "$bin" "$cfg" --out "$s" --quiet >"$work/sig.out" 2>"$work/sig.err"
    rc=$?
    [ $rc -eq 130 ] || [ $rc -eq 143 ]
    ok $? "SIGINT + SIGTERM during a save (boundary '$k'): exit code $rc, expected 130 or 143 (not killed)"
    grep -q "attnlab: interrupted at step 20 (SIG[A-Z]*): checkpoint saved in $s; continue with --resume" "$work/sig.err"
    ok $? "signals during a save, --quiet: no 'interrupted at step 20' line on stderr: $(cat "$work/sig.err")"
    ! has_temp "$s"
    ok $? "signals during a save: a temporary file was left: $(ls "$s")"
    "$check" "$s" >"$work/check.out" 2>&1 && grep -qx "step 20" "$work/check.out"
    ok $? "signals during a save: expected the step-20 checkpoint to load: $(cat "$work/check.out")"
    "$bin" "$cfg" --out "$s" --resume --quiet >/dev/null 2>&1
    ok $? "signals during a save: --resume failed"
    same_result "$s" "$work/ref"
    ok $? "signals during a save: the resumed run differs from the uninterrupted one"
}

case_pause() {
    reference
    s="$work/pause"
    distill="--set distill.enabled=true --set distill.tables=1..2 --set distill.funcs=1..2 --set distill.runs=1"
    "$bin" "$cfg" --out "$work/refd" --quiet $distill >/dev/null 2>&1   # the model's metadata holds the config
    ok $? "the uninterrupted reference run with its grid failed"
    "$bin" "$cfg" --out "$s" --pause-at 50 --quiet $distill >"$work/out.txt" 2>&1
    ok $? "--pause-at 50 did not exit 0: $(cat "$work/out.txt")"
    grep -qxF "paused at step 50 of 120 (--pause-at): checkpoint saved in $s; continue with --resume" "$work/out.txt"
    ok $? "--pause-at 50 --quiet: no 'paused at step 50' line: $(cat "$work/out.txt")"
    "$check" "$s" >"$work/check.out" 2>&1 && grep -qx "step 50" "$work/check.out"
    ok $? "--pause-at 50: expected a step-50 checkpoint that loads: $(cat "$work/check.out")"
    [ ! -e "$s/summary.json" ] && [ ! -e "$s/anna_grid.csv" ] && [ ! -e "$s/anna_grid.journal" ]
    ok $? "--pause-at 50: a paused run wrote its summary or started its grid: $(ls "$s")"
    expect_refused "--pause-at at the checkpoint's step" 2 \
        "--pause-at 50: the run in $s is already at step 50; give a later step" "$s" "$cfg" --out "$s" --resume --pause-at 50 $distill
    for bad in 0 -5 12x "" 1e3; do
        expect_refused "--pause-at '$bad'" 2 "--pause-at needs a step (a positive integer), not '$bad'" "$s" \
            "$cfg" --out "$s" --resume --pause-at "$bad"
    done
    expect_refused "--pause-at without a step" 2 "--pause-at needs a step (a positive integer)" "$s" \
        "$cfg" --out "$s" --resume --pause-at
    expect_refused "./train data --pause-at" 2 "data: --pause-at is for training runs" "$s" \
        data "$cfg" --out "$s/data" --pause-at 5
    "$bin" "$cfg" --out "$s" --resume --pause-at 100 --quiet $distill >"$work/out.txt" 2>&1 &&
        grep -qF "paused at step 100 of 120" "$work/out.txt"
    ok $? "a second pause, at step 100, failed: $(cat "$work/out.txt")"
    [ ! -e "$s/anna_grid.csv" ]
    ok $? "the second pause ran the distillation grid"
    "$bin" "$cfg" --out "$s" --resume --quiet $distill >"$work/out.txt" 2>&1
    ok $? "--resume after two pauses failed: $(cat "$work/out.txt")"
    same_result "$s" "$work/refd" && cmp -s "$s/anna_grid.csv" "$work/refd/anna_grid.csv"
    ok $? "the run paused at steps 50 and 100 differs from the uninterrupted one, or its grid did not run at the end or differs"
    "$bin" "$cfg" --out "$work/late" --pause-at 500 --quiet >"$work/out.txt" 2>&1 && same_result "$work/late" "$work/ref"
    ok $? "--pause-at past train.steps did not just finish the run: $(cat "$work/out.txt")"
}

snapshot() {   # the folder's regular files with their checksums, and what else is there (never read)
    find "$1" -maxdepth 1 -type f -exec cksum {} + | sort
    find "$1" -maxdepth 1 ! -type f -printf '%y %p\n' | sort
}
expect_refused() {   # expect_refused WHAT EXIT FRAGMENT DIR ARGS…: exit code, message, DIR unchanged
    what=$1 want=$2 fragment=$3 dir=$4
    shift 4
    snapshot "$dir" >"$work/before"
    "$bin" "$@" >"$work/out.txt" 2>&1
    rc=$?
    ok $((rc != want)) "$what: exit code $rc, expected $want: $(cat "$work/out.txt")"
    grep -qF -- "$fragment" "$work/out.txt"
    ok $? "$what: message lacks \"$fragment\": $(cat "$work/out.txt")"
    snapshot "$dir" | cmp -s - "$work/before"
    ok $? "$what: the folder changed"
}

case_run_folder() {
    reference
    cp -r "$work/ref" "$work/f"
    expect_refused "a new run into a finished run's folder" 2 \
        "$work/f holds a finished run of 120 steps (summary.json); nothing was changed: continue it with --resume, replace it with --force" \
        "$work/f" "$cfg" --out "$work/f" --set train.steps=40 --quiet
    rm "$work/f/summary.json"
    expect_refused "a new run into a folder with a checkpoint" 2 "holds a run with a checkpoint (train_state.safetensors)" \
        "$work/f" "$cfg" --out "$work/f" --quiet
    expect_refused "--resume with another model (config.json must stay)" 2 "cannot resume: the config differs" \
        "$work/f" "$cfg" --out "$work/f" --resume --set model.d_model=16 --quiet
    expect_refused "--resume of a model too large for the machine (config.json must stay)" 2 \
        "the run needs about" "$work/f" "$cfg" --out "$work/f" --resume --set model.d_model=65536 \
        --set model.n_layers=1024 --quiet
    expect_refused "--resume and --force together" 2 "--resume and --force do not mix" \
        "$work/f" "$cfg" --out "$work/f" --resume --force --quiet
    # A start whose checkpoint is gone (a new machine keeps only what git tracks): a new
    # run says so, with the step reached, even with --quiet, and ends as the reference.
    cp -r "$work/ref" "$work/lost"
    rm "$work/lost/summary.json" "$work/lost"/*.safetensors
    "$bin" "$cfg" --out "$work/lost" --quiet >"$work/out.txt" 2>&1
    ok $? "a new run over metrics without a checkpoint failed: $(cat "$work/out.txt")"
    grep -qF "attnlab: $work/lost/metrics.jsonl reaches step 120 but no train_state.safetensors is left to continue it: the run starts again from step 0" \
        "$work/out.txt" && same_result "$work/lost" "$work/ref"
    ok $? "a new run over metrics without a checkpoint: no note, or another result: $(cat "$work/out.txt")"
    touch "$work/f/anna_grid.csv"
    "$bin" "$cfg" --out "$work/f" --force --set train.steps=40 --quiet >"$work/out.txt" 2>&1
    ok $? "--force failed: $(cat "$work/out.txt")"
    grep -q '"steps":[[:space:]]*40,' "$work/f/summary.json" && [ ! -f "$work/f/anna_grid.csv" ]
    ok $? "--force did not replace the run (summary or the old anna_grid.csv)"
    mkdir "$work/other" && sed 's/"seed": 7/"seed": 8/' "$cfg" >"$work/c8.json"
    "$bin" "$work/c8.json" --out "$work/other" --set eval.checkpoint_every=1000 --set train.steps=10 --quiet \
        >/dev/null 2>&1
    rm -f "$work/other/summary.json" "$work/other"/*.safetensors
    expect_refused "a new run into the start of another config's run" 2 \
        "holds the start of a run of another config (seed differs)" "$work/other" "$cfg" --out "$work/other" --quiet
    # One process per run folder: the second is refused with the first one's PID.
    ATTNLAB_TEST_RENAME_DELAY_MS=300 "$bin" "$cfg" --out "$work/busy" --quiet >/dev/null 2>&1 &
    pid=$!
    wait_for_file "$work/busy/config.json"
    for mode in --quiet --resume; do   # (the folder changes meanwhile: the first run is writing)
        "$bin" "$cfg" --out "$work/busy" $mode --quiet >"$work/out.txt" 2>&1
        rc=$?
        ok $((rc != 1)) "a second run ($mode) into a busy folder: exit code $rc, expected 1: $(cat "$work/out.txt")"
        grep -qF "$work/busy: another process (PID $pid) is using this run folder" "$work/out.txt"
        ok $? "a second run ($mode) into a busy folder: not refused with the first one's PID: $(cat "$work/out.txt")"
    done
    "$bin" distill "$work/busy" --quiet >"$work/out.txt" 2>&1
    rc=$?
    ok $((rc != 1)) "./train distill of a busy run folder: exit code $rc, expected 1: $(cat "$work/out.txt")"
    grep -qF "$work/busy: another process (PID $pid) is using this run folder" "$work/out.txt"
    ok $? "./train distill of a busy run folder: not refused with the PID: $(cat "$work/out.txt")"
    kill $pid 2>/dev/null
    wait $pid
    "$bin" "$cfg" --out "$work/busy" --resume --quiet >/dev/null 2>&1
    ok $? "--resume after the busy run was stopped failed (the lock must go with its process)"
    # One sweep per sweep folder: a second one (another --set) is refused.
    sweep="$work/s.json"
    sed 's/"eval":/"sweep": {"axes": {"model.d_model": [16, 32]}}, "eval":/' "$cfg" >"$sweep"
    ATTNLAB_TEST_RENAME_DELAY_MS=300 "$bin" sweep "$sweep" --out "$work/sw" --jobs 1 --quiet >/dev/null 2>&1 &
    pid=$!
    wait_for_file "$work/sw/base_config.json"
    "$bin" sweep "$sweep" --out "$work/sw" --set train.lr=0.02 --quiet >"$work/out.txt" 2>&1
    rc=$?
    ok $((rc != 1)) "a second sweep into a busy sweep folder: exit code $rc, expected 1: $(cat "$work/out.txt")"
    grep -qF "$work/sw: another process (PID $pid) is using this sweep folder" "$work/out.txt" &&
        ! grep -q '"lr": 0.02' "$work/sw/base_config.json"
    ok $? "a second sweep: not refused with the first one's PID, or base_config.json rewritten: $(cat "$work/out.txt")"
    kill $pid 2>/dev/null
    wait $pid
    # A finished sweep cell without its training state (as committed sweeps are) is
    # not retrained over when train.steps is raised: named before any cell starts.
    "$bin" sweep "$sweep" --out "$work/sw2" --jobs 1 --quiet >/dev/null 2>&1
    ok $? "the finished sweep failed"
    rm -f "$work/sw2"/cells/*/train_state.safetensors
    cell=$(ls "$work/sw2/cells" | head -n 1)
    expect_refused "a raised train.steps over finished cells without states" 2 \
        "holds a finished run of 120 steps and no train_state.safetensors to continue it to train.steps (160)" \
        "$work/sw2/cells/$cell" sweep "$sweep" --out "$work/sw2" --set train.steps=160 --quiet
    # Outputs go only to regular files: a FIFO, a folder, a device node stay as they are.
    o="$work/o"
    mkdir "$o" && mkfifo "$o/fifo"
    expect_refused "curve --out FIFO" 1 "it exists and is a FIFO, not a regular file; refusing to replace it" \
        "$o" curve "$work/ref" --metric token_acc --out "$o/fifo"
    [ -p "$o/fifo" ]
    ok $? "curve --out FIFO replaced the FIFO"
    expect_refused "curve --out /" 1 "cannot write '/': it exists and is a folder" "$o" curve "$work/ref" \
        --metric token_acc --out /
    if [ "$(id -u)" = 0 ] && mknod "$o/full" c 1 7 2>/dev/null; then   # a copy of /dev/full's node
        expect_refused "curve --out DEVICE (as root)" 1 "it exists and is a character device" "$o" curve \
            "$work/ref" --metric token_acc --out "$o/full"
        [ -c "$o/full" ]
        ok $? "curve --out DEVICE replaced the device node"
    fi
    expect_refused "--out /" 2 "refusing to use the root folder '/' as a run folder" "$o" "$cfg" --out / --quiet
    # A path too long for the program is refused, never cut short (the run went elsewhere).
    long="$o/$(printf '%04100d' 0)/run"
    expect_refused "an over-long --out" 2 "--out: path too long (${#long} > 4031 characters)" "$o" "$cfg" \
        --out "$long" --quiet
    expect_refused "an over-long sweep --out" 2 "the sweep folder path is ${#long} characters long" "$o" sweep \
        "$sweep" --out "$long" --quiet
    expect_refused "an over-long data --out" 2 "--out: path too long (${#long} > 4031 characters)" "$o" data \
        "$cfg" --out "$long" --quiet
}

# long_paths: every path a user gives is checked for length as it enters (AL_PATH_MAX,
# util/fsutil.h): exit 2, a message naming the option, nothing written anywhere.
# A long path that fits (523 characters, once cut to 511) is used whole.
case_long_paths() {
    o="$work/o"
    mkdir "$o" && cp "$cfg" "$o/c.json"
    c170=$(printf '%0170d' 0)
    fits="$o/$c170/$c170/$(printf "%0$((523 - ${#o} - 3 - 2 * 170))d" 0)"
    "$bin" data "$cfg" --out "$fits" --quiet >"$work/out.txt" 2>&1
    ok $? "./train data --out of ${#fits} characters failed: $(cat "$work/out.txt")"
    [ ${#fits} -eq 523 ] && [ -s "$fits/train.jsonl" ] && [ -s "$fits/test.jsonl" ]
    ok $? "./train data --out of ${#fits} characters: the datasets are not in that folder"
    rm -rf "$o/$c170"
    long="$o/$(printf '%04100d' 0)/run"
    n=${#long}
    expect_refused "a run's --out" 2 "--out: path too long ($n > 4031 characters): '$o/0000" "$o" \
        "$o/c.json" --out "$long" --quiet
    expect_refused "the config file" 2 "the config file: path too long ($n > 4095 characters)" "$o" "$long"
    expect_refused "distill --out" 2 "distill: --out: path too long ($n > 4031 characters)" "$o" distill "$o" \
        --out "$long" --quiet
    expect_refused "distill's run folder" 2 "distill: the run folder: path too long ($n > 4031 characters)" "$o" \
        distill "$long" --quiet
    expect_refused "curve --out" 2 "curve: --out: path too long ($n > 4031 characters)" "$o" curve "$o" \
        --metric token_acc --out "$long"
    expect_refused "sweep --merge" 2 "path too long" "$o" sweep --merge "$long"
    printf '{"name": "x", "task": {"type": "file", "train_path": "%s", "test_path": "t.jsonl"}}\n' \
        "$(printf '%04200d' 0)" >"$o/file.json"
    expect_refused "task.train_path" 2 "task.train_path: too long (4200 > 4095 characters)" "$o" "$o/file.json" \
        --out "$o/run" --quiet
}

# mount_tmpfs DIR OPTIONS: 0 if mounted (and remembered for clean-up).
mount_tmpfs() {
    mkdir -p "$1"
    [ "$(id -u)" = 0 ] && mount -t tmpfs -o "$2" tmpfs "$1" 2>/dev/null || return 1
    mounts="$1 $mounts"
}

case_disk_full() {
    mnt="$work/small"
    if ! mount_tmpfs "$mnt" size=320k; then
        echo "disk_full: skipped (needs root and permission to mount a tmpfs)"
        exit 77
    fi
    "$bin" "$cfg" --out "$mnt" --quiet >"$work/full.out" 2>&1
    rc=$?
    ok $((rc != 1)) "full disk: exit code $rc, expected 1"
    grep -q "attnlab: error: cannot write '$mnt/train_state.safetensors': No space left on device (disk full?)" "$work/full.out"
    ok $? "full disk: message does not name the file and the cause: $(cat "$work/full.out")"
    "$check" "$mnt" >"$work/check.out" 2>&1
    ok $? "full disk: the previous checkpoint does not load: $(cat "$work/check.out")"
    grep -qx "step 20" "$work/check.out"
    ok $? "full disk: expected the step-20 checkpoint, got $(cat "$work/check.out")"
    ! has_temp "$mnt"
    ok $? "full disk: a temporary file was left behind: $(ls "$mnt")"
    # Full before the run starts: the error comes before any training step.
    dd if=/dev/zero of="$mnt/filler" bs=4k 2>/dev/null
    "$bin" "$cfg" --out "$mnt/new" >"$work/full.out" 2>&1
    rc=$?
    ok $((rc != 1)) "full disk at start: exit code $rc, expected 1"
    grep -q "No space left on device" "$work/full.out" && ! grep -q "effective config" "$work/full.out"
    ok $? "full disk at start: no clear error before training: $(cat "$work/full.out")"
}

expect_setup_error() {   # expect_setup_error WHAT FRAGMENT ARGS…: exit 1, FRAGMENT, no training
    what=$1 fragment=$2
    shift 2
    "$bin" "$cfg" "$@" >"$work/out.txt" 2>&1
    rc=$?
    ok $((rc != 1)) "$what: exit code $rc, expected 1"
    grep -qF "$fragment" "$work/out.txt"
    ok $? "$what: message lacks \"$fragment\": $(cat "$work/out.txt")"
    ! grep -q "effective config" "$work/out.txt"
    ok $? "$what: training started before the error"
}

case_output_folder() {
    : >"$work/file"
    expect_setup_error "--out under a regular file" \
        "cannot create folder '$work/file/run': Not a directory" --out "$work/file/run"
    expect_setup_error "--resume of a missing folder" \
        "cannot resume (start without --resume for a new run): cannot open '$work/missing/train_state.safetensors': No such file or directory" \
        --out "$work/missing" --resume
    ro="$work/ro"
    "$bin" "$cfg" --out "$ro" --set train.steps=40 --quiet >/dev/null 2>&1
    ok $? "run before making the folder read-only failed"
    if mount_tmpfs "$work/rofs" ro,size=64k; then
        expect_setup_error "read-only file system, new run" \
            "cannot write '$work/rofs/config.json': Read-only file system" --out "$work/rofs"
        # The finished run, copied onto a tmpfs that is then remounted read-only.
        mount_tmpfs "$work/rofs2" size=1m && cp "$ro"/* "$work/rofs2/" && mount -o remount,ro "$work/rofs2"
        ok $? "could not prepare a read-only run folder"
        expect_setup_error "read-only file system, --resume" \
            "cannot write '$work/rofs2/config.json': Read-only file system" --out "$work/rofs2" --resume
    elif [ "$(id -u)" != 0 ]; then
        chmod 555 "$ro"
        expect_setup_error "read-only folder (chmod 555), --resume" \
            "cannot write '$ro/config.json': Permission denied" --out "$ro" --resume
        mkdir "$work/ro2" && chmod 555 "$work/ro2"
        expect_setup_error "read-only folder (chmod 555), new run" \
            "cannot write '$work/ro2/config.json': Permission denied" --out "$work/ro2"
    else
        echo "output_folder: read-only cases skipped (root, and mounting a tmpfs is not permitted)"
    fi
}

# The numbers of a grid (the summary's timing and file names aside).
grid_numbers() {
    grep -E '"(surrogate_test_error|surrogate_valid_error|cells|best_valid_mean_error|best_valid_std_error|best_mean_error|best_std_error|best_cell)"' "$1/anna_summary.json"
}
same_grid() {   # same_grid DIR REF
    cmp -s "$1/anna_grid.csv" "$2/anna_grid.csv" || return 1
    grid_numbers "$1" >"$work/grid.a" 2>/dev/null && grid_numbers "$2" >"$work/grid.b" && cmp -s "$work/grid.a" "$work/grid.b"
}

case_distill_resume() {
    "$bin" "$cfg" --out "$work/run" --quiet >"$work/out.txt" 2>&1
    ok $? "training the surrogate failed: $(cat "$work/out.txt")"
    set -- --set distill.tables=1..3 --set distill.funcs=1..2 --set distill.runs=2 --quiet
    "$bin" distill "$work/run" --out "$work/gref" "$@" >"$work/out.txt" 2>&1
    ok $? "the uninterrupted grid failed: $(cat "$work/out.txt")"
    ATTNLAB_TEST_TRACE_WRITES=1 "$bin" distill "$work/run" --out "$work/gtrace" "$@" 2>"$work/trace.txt" >/dev/null
    total=$(grep -c '^write boundary ' "$work/trace.txt")
    lines=$(grep -c '^write boundary .*: partial .*anna_grid.journal' "$work/trace.txt")
    [ "$lines" -eq 6 ] && [ "$total" -gt "$lines" ]
    ok $? "traced $total write boundaries, $lines of them journal lines (want the grid's 6 cells)"
    k=1 refused=0
    while [ "$k" -le "$total" ]; do
        what=$(sed -n "s/^write boundary $k: //p" "$work/trace.txt")
        t="$work/g$k"
        ATTNLAB_TEST_KILL_AT_WRITE=$k "$bin" distill "$work/run" --out "$t" "$@" >/dev/null 2>&1
        rc=$?
        ok $((rc != 137)) "boundary $k ($what): exit code $rc, expected 137 (killed there)"
        if [ -f "$t/anna_grid.journal" ]; then
            cp "$t/anna_grid.journal" "$work/journal.before"
            "$bin" distill "$work/run" --out "$t" "$@" >"$work/out.txt" 2>&1
            rc=$?
            [ "$rc" -eq 2 ] && grep -q "anna_grid.journal holds an unfinished grid (.* cells done): continue it with --resume" "$work/out.txt"
            ok $? "boundary $k ($what): a grid over the unfinished one was not refused (exit $rc): $(cat "$work/out.txt")"
            cmp -s "$t/anna_grid.journal" "$work/journal.before"
            ok $? "boundary $k ($what): the refusal changed the journal"
            refused=$((refused + 1))
        fi
        "$bin" distill "$work/run" --out "$t" --resume "$@" >"$work/out.txt" 2>&1
        ok $? "boundary $k ($what): --resume failed: $(cat "$work/out.txt")"
        same_grid "$t" "$work/gref"
        ok $? "boundary $k ($what): the continued grid differs from the uninterrupted one"
        [ ! -e "$t/anna_grid.journal" ] && ! ls "$t" | grep -q '\.tmp\.'
        ok $? "boundary $k ($what): left behind: $(ls "$t")"
        k=$((k + 1))
    done
    echo "distill_resume: killed at each of $total write boundaries ($refused left a journal)"
    # Not quiet: the grid says where its cells are kept and how to continue.
    "$bin" distill "$work/run" --out "$work/loud" --set distill.tables=1 --set distill.funcs=1 --set distill.runs=1 \
        >"$work/out.txt" 2>&1
    grep -q "distill: finished cells are kept in $work/loud/anna_grid.journal; if the grid is stopped, the same command with --resume continues it" "$work/out.txt"
    ok $? "no line naming the journal and --resume: $(cat "$work/out.txt")"
    # Another grid's settings over an unfinished journal: refused, both keys shown.
    ATTNLAB_TEST_KILL_AT_WRITE=5 "$bin" distill "$work/run" --out "$work/other" "$@" >/dev/null 2>&1
    "$bin" distill "$work/run" --out "$work/other" --resume "$@" --set distill.runs=3 >"$work/out.txt" 2>&1
    rc=$?
    [ "$rc" -eq 2 ] && grep -q "is another grid than this one; its key:" "$work/out.txt" && grep -q "runs=2" "$work/out.txt" &&
        grep -q "runs=3" "$work/out.txt"
    ok $? "--resume with other grid settings: exit $rc: $(cat "$work/out.txt")"
    # A damaged journal: a complete line attnlab did not write, or another file.
    sed -i '3s/.*/cell 99 x/' "$work/other/anna_grid.journal"
    "$bin" distill "$work/run" --out "$work/other" --resume "$@" >"$work/out.txt" 2>&1
    rc=$?
    [ "$rc" -eq 2 ] && grep -q 'other/anna_grid.journal:3: expected "cell INDEX" (0..5) and 4 numbers, got "cell 99 x"' "$work/out.txt"
    ok $? "a damaged journal line: exit $rc: $(cat "$work/out.txt")"
    echo "my notes" >"$work/other/anna_grid.journal"
    "$bin" distill "$work/run" --out "$work/other" --resume "$@" >"$work/out.txt" 2>&1
    rc=$?
    [ "$rc" -eq 2 ] && grep -q 'other/anna_grid.journal:1: not a grid journal (expected "attnlab grid journal 1")' "$work/out.txt" &&
        [ "$(cat "$work/other/anna_grid.journal")" = "my notes" ]
    ok $? "another file as the journal: exit $rc (or the file was changed): $(cat "$work/out.txt")"
    printf 'attnlab grid journal 1\n' >"$work/other/anna_grid.journal"
    "$bin" distill "$work/run" --out "$work/other" --resume "$@" >"$work/out.txt" 2>&1
    rc=$?
    [ "$rc" -eq 2 ] && grep -q 'other/anna_grid.journal: not a grid journal (no "attnlab grid journal 1" and key lines)' "$work/out.txt"
    ok $? "a journal without its key line: exit $rc: $(cat "$work/out.txt")"
    # The grid a training runs when it ends, killed at its third cell line.
    ATTNLAB_TEST_TRACE_WRITES=1 "$bin" "$cfg" --out "$work/trt" --set distill.enabled=true "$@" 2>"$work/trt.txt" >/dev/null
    kill_at=$(sed -n 's/^write boundary \([0-9]*\): partial .*anna_grid.journal$/\1/p' "$work/trt.txt" | sed -n 3p)
    ATTNLAB_TEST_KILL_AT_WRITE=${kill_at:-0} "$bin" "$cfg" --out "$work/trk" --set distill.enabled=true "$@" >/dev/null 2>&1
    rc=$?
    ok $((rc != 137)) "the training's grid was not killed at its third cell line (boundary '$kill_at', exit $rc)"
    "$bin" "$cfg" --out "$work/trk" --resume --set distill.enabled=true "$@" >"$work/out.txt" 2>&1
    ok $? "--resume of a training killed in its grid failed: $(cat "$work/out.txt")"
    same_grid "$work/trk" "$work/gref" && [ ! -e "$work/trk/anna_grid.journal" ] &&
        grep -q '"cells_from_journal": 2' "$work/trk/anna_summary.json"
    ok $? "the training's continued grid differs from the uninterrupted one, or did not use its 2 journaled cells"
}

case "$case" in
kill) case_kill ;;
distill_resume) case_distill_resume ;;
signals) case_signals ;;
signals_in_save) case_signals_in_save ;;
pause) case_pause ;;
run_folder) case_run_folder ;;
disk_full) case_disk_full ;;
output_folder) case_output_folder ;;
long_paths) case_long_paths ;;
*) echo "faults.sh: unknown case '$case'"; exit 2 ;;
esac
finish
