#!/bin/sh
# tests/cli/valgrind_smoke.sh — the Match2 smoke run under valgrind's memcheck: a short
# training run of configs/match2.json with distillation on a small grid, then a
# --resume that extends it.  Passes when valgrind reports no errors and nothing
# definitely or indirectly lost (OpenBLAS's thread pool and other "still
# reachable" blocks are not leaks).  Several minutes (valgrind runs the code
# ~50x slower), so it is not in the default suite (README: Reliability checks).
#   tests/cli/valgrind_smoke.sh
# Valgrind has no AVX-512, so this uses its own build without -march=native
# (build-valgrind/); valgrind itself is installed from Debian when run as root.
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/bootstrap.sh"
if ! command -v valgrind >/dev/null 2>&1; then
    if ab_is_root; then
        ab_apt_install valgrind || { ab_say "cannot install valgrind"; exit 1; }
    else
        ab_say "needs valgrind: sudo apt-get install -y valgrind"
        exit 1
    fi
fi
AB_BUILD="$here/build-valgrind"
AB_CMAKE_ARGS="-DATTNLAB_NATIVE=OFF"
export AB_BUILD AB_CMAKE_ARGS
attnlab_bootstrap "$here" || exit 1
OPENBLAS_NUM_THREADS=1
export OPENBLAS_NUM_THREADS
work=$(mktemp -d "${TMPDIR:-/tmp}/attnlab-valgrind-XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
status=0
vg() {   # vg NAME ARGS…: one attnlab run under memcheck, its report in $work/NAME.log
    name=$1
    shift
    valgrind --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect \
        --errors-for-leak-kinds=definite,indirect --track-origins=yes --log-file="$work/$name.log" \
        "$AB_BUILD/attnlab" "$here/configs/match2.json" --out "$work/run" --quiet \
        --set task.train_size=500 --set eval.test_size=32 --set eval.every=10 \
        --set distill.tables=1..2 --set distill.funcs=1..2 --set distill.runs=2 "$@" >"$work/$name.out" 2>&1
    rc=$?
    errors=$(sed -nE 's/.*ERROR SUMMARY: ([0-9]+) errors.*/\1/p' "$work/$name.log" | tail -n 1)
    definite=$(sed -nE 's/.*definitely lost: ([0-9,]+) bytes.*/\1/p' "$work/$name.log" | tail -n 1)
    indirect=$(sed -nE 's/.*indirectly lost: ([0-9,]+) bytes.*/\1/p' "$work/$name.log" | tail -n 1)
    grep -q "All heap blocks were freed" "$work/$name.log" && definite=0 indirect=0
    echo "$name: exit $rc, $errors errors, definitely lost: ${definite:-?} bytes, indirectly lost: ${indirect:-?} bytes"
    if [ "$rc" -ne 0 ] || [ "$errors" != 0 ] || [ "${definite:-x}" != 0 ] || [ "${indirect:-x}" != 0 ]; then
        tail -n 60 "$work/$name.log"
        cat "$work/$name.out"
        status=1
    fi
}
vg train --set train.steps=20
vg resume --set train.steps=30 --resume
[ $status -eq 0 ] && echo "valgrind_smoke: ok" || echo "valgrind_smoke: FAILED"
exit $status
