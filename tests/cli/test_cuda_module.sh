#!/usr/bin/env bash
# test_cuda_module.sh: in a CUDA build the CUDA backend is a module, libshakespeare_cuda.so
# beside the programs, that they load only when a GPU backend is asked for
# (src/cuda/cuda_loader.c). Skipped in a CPU-only build (no module in SK_BUILD_DIR).
#  1. --help, and sampling and scoring with --device cpu, open no CUDA library: LD_DEBUG=files
#     lists every object the dynamic loader opens, dlopen included. --version does load the
#     module and cuDNN: the control that shows the listing sees a dlopen.
#  2. --device auto where there is no NVIDIA driver falls back to the CPU, with its one-line
#     notice, without loading the module (with a driver, the module decides about the device).
#  3. A program copied away from its module: --version says "CUDA support not found",
#     --device cuda is an error (exit 2, one line naming the missing module), --device auto
#     runs on the CPU with a notice that says so. A file that is not a shared object in the
#     module's place: --device cuda's error line carries the loader's reason.
. "$(dirname "$0")/lib.sh"
: "${SK_BUILD_DIR:?SK_BUILD_DIR must name the build tree}"
[ -e "$SK_BUILD_DIR/libshakespeare_cuda.so" ] || skip "this build has no CUDA backend module"

gen_text text.txt 400 3
expect_ok "$SK_TRAIN" "${TINY[@]}" --data text.txt --out-dir run --max-iters 3 --eval-every 0 || finish
CK=(--checkpoint run/last.safetensors)

# opened CMD...: the objects the dynamic loader opens for CMD (one per line), CMD's own output dropped.
opened() { LD_DEBUG=files "$@" 2>&1 > /dev/null | grep -o 'file=[^ ]*' | sed 's/^file=//' | sort -u; }
cuda_libs='libshakespeare_cuda|libcublas|libcudnn|libcudart'

for args in "--help" "${CK[*]} --length 200 --device cpu" "${CK[*]} --score text.txt --device cpu"; do
    # shellcheck disable=SC2086 # word splitting of args is intended
    libs=$(opened "$SK_SAMPLE" $args)
    [ -n "$libs" ] || fail "LD_DEBUG=files listed nothing for shakespeare-sample $args"
    bad=$(echo "$libs" | grep -E "$cuda_libs")
    [ -z "$bad" ] && note "shakespeare-sample $args opens no CUDA library" ||
        fail "shakespeare-sample $args opened: $(echo $bad)"
done
libs=$(opened "$SK_TRAIN" --help)
echo "$libs" | grep -Eq "$cuda_libs" && fail "shakespeare-train --help opened: $(echo "$libs" | grep -E "$cuda_libs")"
libs=$(opened "$SK_SAMPLE" --version)
echo "$libs" | grep -q 'libshakespeare_cuda\.so' && echo "$libs" | grep -q 'libcudnn' &&
    note "--version loads the module and cuDNN" ||
    fail "--version did not load libshakespeare_cuda.so and cuDNN: $(echo $libs)"
"$SK_SAMPLE" --version | grep -q '^backends: cpu, cuda (CUDA runtime [0-9]' ||
    fail "--version does not name the CUDA runtime: $("$SK_SAMPLE" --version | head -n 2 | tail -n 1)"

# 2. --device auto.
LD_DEBUG=files "$SK_SAMPLE" "${CK[@]}" --length 50 --device auto > auto.out 2> auto.err
rc=$?
notice=$(grep '^note: ' auto.err)
if grep -q 'no NVIDIA driver' auto.err; then
    [ "$rc" = 0 ] && [ "$(grep -c '^note: ' auto.err)" = 1 ] && echo "$notice" | grep -q 'running on the CPU' ||
        fail "--device auto without a driver: exit $rc, notice: $notice"
    grep -o 'file=[^ ]*' auto.err | grep -Eq "$cuda_libs" &&
        fail "--device auto without a driver opened: $(grep -o 'file=[^ ]*' auto.err | grep -E "$cuda_libs" | sort -u)" ||
        note "--device auto without a driver: CPU, no CUDA library opened ($notice)"
else
    note "this machine has an NVIDIA driver: --device auto exit $rc, ${notice:-no notice}"
fi

# 3. A program away from its module.
mkdir -p away/bin
cp "$SK_SAMPLE" away/bin/shakespeare-sample
AWAY=$WORK/away/bin/shakespeare-sample
"$AWAY" --version | grep -q '^backends: cpu, cuda (CUDA support not found: no libshakespeare_cuda.so beside the program' &&
    note "$("$AWAY" --version | sed -n 2p)" || fail "--version away from the module: $("$AWAY" --version | sed -n 2p)"
expect_error '^error: --device cuda: CUDA support not found: no libshakespeare_cuda\.so beside the program \('"$WORK"'/away/bin/libshakespeare_cuda\.so\)' \
    "$AWAY" "${CK[@]}" --length 50 --device cuda
if "$AWAY" "${CK[@]}" --length 50 --device auto > away.out 2> away.err; then
    [ "$(wc -c < away.out)" -ge 50 ] && [ "$(wc -l < away.err)" = 1 ] && grep -q '^note: running on the CPU: ' away.err &&
        note "--device auto away from the module: $(cat away.err)" || fail "--device auto away from the module: $(cat away.err)"
else
    fail "--device auto away from the module failed: $(cat away.err)"
fi
echo "not a shared object" > away/bin/libshakespeare_cuda.so
expect_error '^error: --device cuda: CUDA support not found: .*libshakespeare_cuda\.so: .*(invalid ELF header|file too short)' \
    "$AWAY" "${CK[@]}" --length 50 --device cuda
finish
