#!/usr/bin/env bash
# test_sample_rnn_impl.sh: shakespeare-sample --rnn-impl, parsed as shakespeare-train parses it.
# A bad value: exit 2 with the trainer's own message; a CUDA implementation on the CPU (--device
# cpu, and --device auto on a machine without a GPU): exit 2 with one line naming the flag,
# nothing generated; auto: samples as without the flag.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 40 3
expect_ok "$SK_TRAIN" "${TINY[@]}" --data text.txt --out-dir m --max-iters 5 --eval-every 0 || finish
S=("$SK_SAMPLE" --checkpoint m/last.safetensors --threads 1 --length 20 --argmax)

expect_error '^error: --rnn-impl expects auto, cudnn.*, got "fast"$' "${S[@]}" --device cpu --rnn-impl fast
# The CUDA implementations, as the message lists them ("auto, cudnn, persistent or ...").
impls=$(sed -n 's/^error: --rnn-impl expects auto, \(.*\), got .*/\1/p' <<< "$LAST_STDERR" | sed 's/ or /, /g; s/,//g')
# The same line as shakespeare-train's for the same value.
"$SK_TRAIN" --rnn-impl fast > /dev/null 2> train.err
[ "$(cat train.err)" = "$LAST_STDERR" ] && note "the trainer says the same" ||
    fail "shakespeare-train says '$(cat train.err)', shakespeare-sample '$LAST_STDERR'"
expect_error '^error: --rnn-impl expects' "${S[@]}" --device cpu --rnn-impl=
[ -n "$impls" ] || fail "no implementation named in: $LAST_STDERR"
for impl in $impls; do
    expect_error "^error: --rnn-impl $impl selects a CUDA LSTM implementation; the CPU backend has one \(use --rnn-impl auto, or a CUDA device\)$" \
        "${S[@]}" --device cpu --rnn-impl "$impl"
    expect_error "^error: --rnn-impl $impl selects a CUDA LSTM implementation" \
        "${S[@]}" --device cpu --rnn-impl "$impl" --score text.txt
done
# --device auto: on a machine without a usable GPU it runs on the CPU, which refuses the same way
# (with a GPU the CUDA backend takes cudnn and the sample runs).
if "$SK_SAMPLE" --checkpoint m/last.safetensors --length 1 2>&1 | grep -q 'running on the CPU'; then
    expect_error '^error: --rnn-impl cudnn selects a CUDA LSTM implementation' "${S[@]}" --rnn-impl cudnn
fi
expect_ok "${S[@]}" --device cpu && cp .ok.out plain.out
expect_ok "${S[@]}" --device cpu --rnn-impl auto && cmp -s .ok.out plain.out && [ -s plain.out ] &&
    note "--rnn-impl auto samples as without the flag" || fail "--rnn-impl auto changed the sample"
"$SK_SAMPLE" --help | grep -q -- '--rnn-impl I .*auto' && note "--help lists --rnn-impl" || fail "--help lacks --rnn-impl"
finish
