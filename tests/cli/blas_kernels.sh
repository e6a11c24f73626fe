#!/bin/sh
# blas_kernels.sh — attnlab runs OpenBLAS's AVX-512 kernels on an AVX-512 CPU even when
# the environment holds OpenBLAS to its AVX2 ones (util/gemm.h,
# gemm_prefer_avx512_kernels), and not when ATTNLAB_BLAS_KERNELS=as_set.
#
#   sh tests/cli/blas_kernels.sh ATTNLAB
#
# Reads summary.json's "blas_core" after a 10-step Match2 run:
#   - OPENBLAS_CORETYPE=Haswell: an AVX-512 set (SkylakeX, Cooperlake, SapphireRapids)
#     when /proc/cpuinfo lists avx512f, avx512cd, avx512bw, avx512dq and avx512vl,
#     else Haswell (nothing to gain, nothing changed);
#   - the same with ATTNLAB_BLAS_KERNELS=as_set: Haswell, as the environment says;
#   - no OPENBLAS_CORETYPE: an AVX-512 set on such a CPU;
#   - two runs of one config with the re-execution: the same model, bit for bit.
# Prints "blas_kernels: N checks, N failed" and exits 1 on any failure.
bin=$1
[ -x "$bin" ] || { echo "usage: blas_kernels.sh ATTNLAB"; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/attnlab-blas-XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
checks=0 failures=0
ok() {
    checks=$((checks + 1))
    if [ "$1" -ne 0 ]; then failures=$((failures + 1)); echo "FAIL: $2"; fi
}
cat >"$work/c.json" <<'JSON'
{ "task": {"type": "match2", "seq_len": 16, "modulus": 13, "train_size": 256},
  "model": {"d_model": 32}, "train": {"steps": 10}, "eval": {"every": 10, "test_size": 32} }
JSON
avx512=1
for f in avx512f avx512cd avx512bw avx512dq avx512vl; do
    grep -qw "$f" /proc/cpuinfo 2>/dev/null || avx512=0
done
core_of() {   # core_of DIR [-u VAR…] [VAR=VALUE…]: runs the config into DIR so, prints blas_core
    dir=$1
    shift
    env "$@" OPENBLAS_NUM_THREADS=1 "$bin" "$work/c.json" --out "$dir" --quiet >"$work/out.txt" 2>&1 ||
        echo "run failed: $(cat "$work/out.txt")"
    sed -n 's/.*"blas_core":[[:space:]]*"\([^"]*\)".*/\1/p' "$dir/summary.json" 2>/dev/null
}
is_avx512_set() { case "$1" in SkylakeX | Cooperlake | SapphireRapids) return 0 ;; *) return 1 ;; esac; }

forced=$(core_of "$work/forced" -u ATTNLAB_BLAS_KERNELS -u ATTNLAB_BLAS_REEXEC OPENBLAS_CORETYPE=Haswell)
kept=$(core_of "$work/kept" -u ATTNLAB_BLAS_REEXEC OPENBLAS_CORETYPE=Haswell ATTNLAB_BLAS_KERNELS=as_set)
free=$(core_of "$work/free" -u ATTNLAB_BLAS_KERNELS -u ATTNLAB_BLAS_REEXEC -u OPENBLAS_CORETYPE)
again=$(core_of "$work/again" -u ATTNLAB_BLAS_KERNELS -u ATTNLAB_BLAS_REEXEC OPENBLAS_CORETYPE=Haswell)
[ "$kept" = Haswell ]
ok $? "ATTNLAB_BLAS_KERNELS=as_set with OPENBLAS_CORETYPE=Haswell ran '$kept'"
if [ "$avx512" = 1 ]; then
    is_avx512_set "$forced"
    ok $? "an AVX-512 CPU held to Haswell by OPENBLAS_CORETYPE ran '$forced', not an AVX-512 kernel set"
    is_avx512_set "$free"
    ok $? "an AVX-512 CPU without OPENBLAS_CORETYPE ran '$free'"
else
    [ "$forced" = Haswell ]
    ok $? "a CPU without AVX-512 ran '$forced' where the environment says Haswell"
    echo "blas_kernels: this CPU lacks AVX-512; only the as-set cases are meaningful"
fi
cmp -s "$work/forced/model.safetensors" "$work/again/model.safetensors"
ok $? "two runs of one config (re-executed) differ"
echo "blas_kernels: OPENBLAS_CORETYPE=Haswell -> $forced; as_set -> $kept; unset -> $free"
echo "blas_kernels: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
