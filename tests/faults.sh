#!/bin/sh
# faults.sh — the trainer under the faults of an unattended run (README: Troubleshooting).
#
#   sh tests/faults.sh CASE ATTNLAB CKPT_CHECK      (ctest runs each CASE as faults_CASE)
#
#   kill          24 trials of kill -9 in a resumed run: 18 at pseudo-random moments,
#                 12 of those with every atomic write held open for 25 ms between its
#                 temp file and its rename (ATTNLAB_TEST_RENAME_DELAY_MS), so many land
#                 in a checkpoint write; and 6 killed while a write (held 1 s) has its
#                 temp file, so some surely do, however loaded the machine.  After each: the folder holds a checkpoint that
#                 loads (CKPT_CHECK), and --resume finishes with a model.safetensors,
#                 metrics and summary figures identical to an uninterrupted run's,
#                 and removes the killed writer's temporary file.
#   signals       SIGINT and SIGTERM mid-run: exit 130 / 143, "interrupted" printed,
#                 a checkpoint that loads, and --resume finishes identically.
#   disk_full     --out on a 320 KiB tmpfs: the first checkpoint fits, the second
#                 does not (the old files and the new temp file must coexist): a
#                 message naming the file, exit 1, the previous checkpoint still
#                 loads, no temp file left; and a full disk at the start fails before
#                 training.  Needs root and mount, else exits 77 (skipped).
#   output_folder an --out under a regular file, a read-only folder (a read-only tmpfs
#                 as root, chmod 555 otherwise) for a new and a resumed run, and
#                 --resume of a missing folder: each a clear error naming the path,
#                 exit 1, before training starts (no "effective config" printed).
#
# Runs are tiny (Match2, d = 32, 400 steps, a checkpoint every 20 steps), so the
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
  "model": {"d_model": 32, "n_heads": 2},
  "train": {"lr": 0.01, "batch_size": 16, "steps": 400},
  "eval": {"every": 50, "test_size": 64, "checkpoint_every": 20} }
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

case_kill() {
    reference
    # Trials resume from step 100 (an evaluation step, as in the reference run).
    "$bin" "$cfg" --out "$work/base" --set train.steps=100 --quiet >/dev/null 2>&1
    ok $? "base run failed"
    seed=20240607 killed=0 in_write=0 i=1
    while [ $i -le 24 ]; do
        seed=$(( (seed * 1103515245 + 12345) % 2147483648 ))
        if [ $((i % 4)) -eq 0 ]; then hold=1000; ms=-1             # killed once a temp file exists
        elif [ $((i % 2)) -eq 1 ]; then hold=25; ms=$((20 + seed % 900)); else hold=0; ms=$((seed % 200)); fi
        t="$work/t$i"
        cp -r "$work/base" "$t"
        ATTNLAB_TEST_RENAME_DELAY_MS=$hold "$bin" "$cfg" --out "$t" --resume --quiet >/dev/null 2>&1 &
        pid=$!
        if [ $ms -ge 0 ]; then
            sleep "$(seconds $ms)"
        else
            # Timed kills hit a write by chance, and less often on a loaded machine: these
            # six wait (up to 20 s) until a write holds its temp file, so at least six
            # kills land inside a checkpoint write whatever the load.
            n=0
            while ! has_temp "$t" && [ $n -lt 2000 ]; do sleep 0.01; n=$((n + 1)); done
        fi
        kill -9 $pid 2>/dev/null
        wait $pid
        rc=$?
        [ $rc -eq 137 ] && killed=$((killed + 1))
        has_temp "$t" && in_write=$((in_write + 1))
        "$check" "$t" >"$work/check.out" 2>&1
        ok $? "trial $i (kill after ${ms} ms, writes held ${hold} ms, exit $rc): no loadable checkpoint: $(cat "$work/check.out")"
        "$bin" "$cfg" --out "$t" --resume --quiet >"$work/resume.out" 2>&1
        ok $? "trial $i: --resume failed: $(cat "$work/resume.out")"
        same_result "$t" "$work/ref"
        ok $? "trial $i (kill after ${ms} ms, $(cat "$work/check.out")): the resumed run differs from the uninterrupted one"
        ! has_temp "$t"
        ok $? "trial $i: the resumed run left the killed run's temporary file: $(ls "$t")"
        rm -rf "$t"
        i=$((i + 1))
    done
    echo "kill: $killed of 24 trials killed mid-run, $in_write of them inside a checkpoint write"
    [ $killed -ge 20 ]
    ok $? "only $killed trials were killed before the run ended (need >= 20)"
    [ $in_write -ge 4 ]
    ok $? "only $in_write kills landed inside a checkpoint write (need >= 4)"
}

case_signals() {
    reference
    for sig in INT TERM; do
        want=130
        [ $sig = TERM ] && want=143
        s="$work/sig$sig"
        # Writes held 20 ms each stretch the run to about a second.
        ATTNLAB_TEST_RENAME_DELAY_MS=20 "$bin" "$cfg" --out "$s" >"$work/sig.out" 2>&1 &
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
        [ -n "$step" ] && [ "$step" -lt 400 ]
        ok $? "SIG$sig: the checkpoint is at step '$step', not mid-run"
        "$bin" "$cfg" --out "$s" --resume --quiet >/dev/null 2>&1
        ok $? "SIG$sig: --resume failed"
        same_result "$s" "$work/ref"
        ok $? "SIG$sig: the resumed run differs from the uninterrupted one"
    done
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

case "$case" in
kill) case_kill ;;
signals) case_signals ;;
disk_full) case_disk_full ;;
output_folder) case_output_folder ;;
*) echo "faults.sh: unknown case '$case'"; exit 2 ;;
esac
finish
