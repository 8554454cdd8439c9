#!/usr/bin/env bash
# test_blas_notice.sh: OpenBLAS forced onto kernels without AVX2 (OPENBLAS_CORETYPE=Prescott) on
# a CPU that has AVX2 makes both programs say so in one note, naming the variable to unset; the
# same run without it says nothing of the kind when OpenBLAS picks an AVX2 or AVX-512 core.
. "$(dirname "$0")/lib.sh"

grep -qw avx2 /proc/cpuinfo || skip "this CPU has no AVX2: the notice has nothing to say here"
"$SK_TRAIN" --version | grep -q 'DYNAMIC_ARCH' || skip "this OpenBLAS has no DYNAMIC_ARCH: OPENBLAS_CORETYPE does nothing"
gen_text text.txt 30 2
RUN=("$SK_TRAIN" "${TINY[@]}" --data text.txt --max-iters 2 --eval-every 0)
want='^note: OpenBLAS runs its Prescott kernels on this AVX2 CPU, about 2.5x slower than it can \(OPENBLAS_CORETYPE is set: unset it\)$'
OPENBLAS_CORETYPE=Prescott expect_ok "${RUN[@]}" --out-dir slow &&
    { [ "$(grep -cE "$want" .ok.err)" = 1 ] && note "shakespeare-train: $(cat .ok.err)" || fail "train: $(cat .ok.err)"; }
OPENBLAS_CORETYPE=Prescott expect_ok "$SK_SAMPLE" --checkpoint slow --device cpu --length 3 &&
    { [ "$(grep -cE "$want" .ok.err)" = 1 ] && note "shakespeare-sample says so too" || fail "sample: $(cat .ok.err)"; }
core=$(env -u OPENBLAS_CORETYPE "$SK_TRAIN" --version | sed -n 's/^blas: OpenBLAS .* \([A-Za-z]*\) MAX_THREADS.*/\1/p')
case "$core" in
Haswell|Zen|SkylakeX|Cooperlake|SapphireRapids)
    env -u OPENBLAS_CORETYPE "${RUN[@]}" --out-dir fast > fast.out 2> fast.err
    grep -q 'OpenBLAS runs' fast.err && fail "a note with OpenBLAS's own $core core: $(cat fast.err)" ||
        note "OpenBLAS's own choice, $core: no note";;
*) note "OpenBLAS picks ${core:-an unknown core} here by itself: the no-note case is left out";;
esac
finish
