#!/usr/bin/env bash
# test_bad_input.sh: every kind of bad input to shakespeare-train and shakespeare-sample is
# answered with exit code 2 and ONE stderr line "error: ..." naming what is wrong, nothing on
# stdout, no crash or hang (lib.sh: expect_error), no file left in the output directory, and no
# change to an existing checkpoint.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 60 1
# A good checkpoint to resume from, and a pristine copy to prove that nothing touches it.
expect_ok "$SK_TRAIN" "${TINY[@]}" --data text.txt --out-dir good --max-iters 6 --eval-every 3 || finish
cp -r good good.orig
STATE=$(cd good && ls last.*.state)

FRESH=$WORK/fresh # every failing training run points here: it must stay free of files
TR=("$SK_TRAIN" "${TINY[@]}" --data text.txt --out-dir "$FRESH" --max-iters 3)
SA=("$SK_SAMPLE" --checkpoint good/last.safetensors --device cpu --threads 1 --length 5)

echo "== shakespeare-train: flags"
expect_error 'unknown .*option --bogus' "${TR[@]}" --bogus
expect_error 'unknown .*option -x' "${TR[@]}" -x
expect_error '--lr needs a value' "${TR[@]}" --lr
expect_error '--eval-only=1 does not take a value' "${TR[@]}" --eval-only=1
expect_error 'unexpected argument "stray"' "${TR[@]}" stray
# Every numeric option: a trailing garbage value, an empty value, white space, and one out of range.
for spec in embed-size:0 hidden-size:70000 num-layers:65 dropout:1 weight-drop:1 batch-size:0 seq-length:-1 \
    train-frac:0 val-frac:1 lr:0 min-lr:-1 warmup-iters:-1 lr-decay:1.5 lr-decay-after:-1 beta1:1 \
    beta2:-0.1 eps:1e-50 weight-decay:2 grad-clip:-1 init-scale:0 forget-bias:1000 max-epochs:-1 \
    max-iters:-5 eval-every:-1 checkpoint-every:-1 sample-every:-1 sample-length:0 log-every:0 \
    seed:-1 threads:5000; do
    opt=--${spec%%:*} bad=${spec#*:}
    expect_error "^error: $opt expects .*got \"12x\"" "${TR[@]}" "$opt" 12x
    expect_error "^error: $opt expects .*got \"\"" "${TR[@]}" "$opt=" # an empty value
    expect_error "^error: $opt expects .*got \" 3\"" "${TR[@]}" "$opt" " 3"
    expect_error "^error: $opt (must be in .*got $bad|expects .*got \"$bad\")" "${TR[@]}" "$opt" "$bad"
done
expect_error '^error: --hidden-size expects an integer, got "99999999999999999999"' \
    "${TR[@]}" --hidden-size 99999999999999999999
expect_error '^error: --lr expects a finite number, got "1e999"' "${TR[@]}" --lr 1e999
expect_error '^error: --lr expects a finite number, got "nan"' "${TR[@]}" --lr nan
expect_error '^error: --seed expects a non-negative integer below 2\^64, got "18446744073709551616"' \
    "${TR[@]}" --seed 18446744073709551616
# In range as a double, out of range once rounded to the float the program uses.
expect_error '^error: --dropout must be in \[0, 1\) in single precision, got 0.99999999' "${TR[@]}" --dropout 0.99999999
expect_error '^error: --lr must be in \(0, 10\] in single precision, got 1e-50' "${TR[@]}" --lr 1e-50
expect_error '--init expects uniform or pytorch, got "gaussian"' "${TR[@]}" --init gaussian
expect_error '--lr-schedule expects constant, step or cosine, got "linear"' "${TR[@]}" --lr-schedule linear
expect_error '--device expects auto, cpu, cuda or cuda:N, got "gpu"' "${TR[@]}" --device gpu
expect_error '--device expects .* got "cuda:x"' "${TR[@]}" --device cuda:x
# The implementations that exist today, in the registry's order; a later row may stand among them.
expect_error '^error: --rnn-impl expects auto, cudnn, persistent, cudnn-persist, persistent-layerwise,? .*or [a-z-]+, got "fast"' "${TR[@]}" --rnn-impl fast
# A CUDA LSTM implementation named for a CPU run is refused, not silently ignored.
expect_error '^error: --rnn-impl cudnn selects a CUDA LSTM implementation; the CPU backend has one' \
    "${TR[@]}" --rnn-impl cudnn
expect_error '^error: --rnn-impl persistent selects a CUDA LSTM implementation' "${TR[@]}" --rnn-impl persistent
expect_error '^error: --rnn-impl cudnn-persist selects a CUDA LSTM implementation' "${TR[@]}" --rnn-impl cudnn-persist
expect_ok "$SK_TRAIN" "${TINY[@]}" --data text.txt --out-dir rnn-auto --max-iters 2 --rnn-impl auto &&
    note "--rnn-impl auto trains on the CPU" || fail "--rnn-impl auto on the CPU"
expect_error '^error: --cuda-graph expects auto, on, off or try, got "yes"' "${TR[@]}" --cuda-graph yes
# Graph capture required of a CPU run is refused; off and try (a preference) train.
expect_error '^error: --cuda-graph on needs a CUDA device; the CPU backend runs its steps eagerly' \
    "${TR[@]}" --cuda-graph on
expect_ok "$SK_TRAIN" "${TINY[@]}" --data text.txt --out-dir graph-off --max-iters 2 --cuda-graph off &&
    note "--cuda-graph off trains on the CPU" || fail "--cuda-graph off on the CPU"
expect_ok "$SK_TRAIN" "${TINY[@]}" --data text.txt --out-dir graph-try --max-iters 2 --cuda-graph try &&
    note "--cuda-graph try trains on the CPU" || fail "--cuda-graph try on the CPU"
# No usable GPU (none on CI, or a CPU-only build): an explicit request is an error, exit 2.
if ! "$SK_TRAIN" "${TINY[@]}" --data text.txt --out-dir probe --max-iters 1 --device cuda >/dev/null 2>&1; then
    expect_error '--device cuda' "${TR[@]}" --device cuda
    expect_error '--device cuda' "${TR[@]}" --device cuda:7
    expect_error '--device cuda' "${SA[@]}" --device cuda
fi
echo "== shakespeare-train: impossible combinations"
expect_error '--train-frac \+ --val-frac must not exceed 1' "${TR[@]}" --train-frac 0.8 --val-frac 0.3
expect_error '--eval-only needs --init-from' "${TR[@]}" --eval-only
expect_error '--max-iters 0 and --max-epochs 0 would train forever' "${TR[@]}" --max-iters 0 --max-epochs 0
expect_error '--min-lr \(0.5\) must not exceed --lr \(0.1\)' "${TR[@]}" --lr-schedule cosine --lr 0.1 --min-lr 0.5

echo "== shakespeare-train: data"
: > empty.txt
printf 'to be \377\376 or not' > latin1.txt
printf 'to be or' > short.txt
mkfifo fifo.txt
expect_error 'cannot open missing\.txt: No such file' "${TR[@]}" --data missing.txt
expect_error 'cannot open a file with an empty path' "${TR[@]}" --data ""
mkdir adir
expect_error 'adir is a directory' "${TR[@]}" --data adir
expect_error 'empty\.txt is empty' "${TR[@]}" --data empty.txt
expect_error 'latin1\.txt: invalid UTF-8 at byte 6' "${TR[@]}" --data latin1.txt
expect_error 'fifo\.txt is not a regular file' "${TR[@]}" --data fifo.txt
expect_error 'training split has [0-9]+ characters, too short for one batch of 2 streams x 8 steps' \
    "${TR[@]}" --data short.txt
# The validation split (10% of ~2700 characters) cannot feed 1000 streams; training (90%) can.
expect_error 'validation split has [0-9]+ characters, too short for 1000 streams' \
    "${TR[@]}" --batch-size 1000 --seq-length 1

echo "== shakespeare-train: output directory and log"
expect_error 'cannot create output directory .*text\.txt/sub: Not a directory' "${TR[@]}" --out-dir text.txt/sub
expect_error 'output directory text\.txt is not a directory' "${TR[@]}" --out-dir text.txt
expect_error 'cannot write the metrics log text\.txt/m\.jsonl' "${TR[@]}" --log text.txt/m.jsonl

echo "== shakespeare-train: checkpoints for --init-from"
N=$(od -An -t u8 -N 8 good/last.safetensors | tr -d ' ')
head -c 200 good/last.safetensors > truncated.safetensors
cp good/last.safetensors corrupt.safetensors # one tensor byte changed: the checksum catches it
printf '\125' | dd of=corrupt.safetensors bs=1 seek=$((8 + N + 40)) conv=notrunc 2> /dev/null
hdr='{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}' # valid safetensors, not ours
{ printf "\\$(printf %03o ${#hdr})\\0\\0\\0\\0\\0\\0\\0%s" "$hdr"; printf '\0\0\200\077'; } > foreign.safetensors
: > empty.safetensors
expect_error 'missing\.safetensors: cannot open \(No such file' "${TR[@]}" --init-from missing.safetensors
expect_error '--hidden-size 32 differs from the checkpoint good/last\.safetensors \(16\)' \
    "${TR[@]}" --init-from good/last.safetensors --hidden-size 32
expect_error '--num-layers 2 differs from the checkpoint' "${TR[@]}" --init-from good/last.safetensors --num-layers 2
mkdir -p empty
expect_error '^error: --init-from empty: the directory holds no last\.safetensors \(a run writes it at its first checkpoint\); name a checkpoint file of it instead$' \
    "${TR[@]}" --init-from empty
expect_error 'empty\.safetensors: truncated' "${TR[@]}" --init-from empty.safetensors
expect_error 'truncated\.safetensors: truncated' "${TR[@]}" --init-from truncated.safetensors
expect_error 'corrupt\.safetensors: checksum mismatch' "${TR[@]}" --init-from corrupt.safetensors
expect_error 'foreign\.safetensors: not a shakespeare checkpoint' "${TR[@]}" --init-from foreign.safetensors
expect_error 'text\.txt: not a shakespeare checkpoint' "${TR[@]}" --init-from text.txt
# The training state beside the model: corrupt, truncated, missing.
mkdir st && cp good/last.safetensors "good/$STATE" st/
printf '\125' | dd of="st/$STATE" bs=1 seek=300 conv=notrunc 2> /dev/null
expect_error "st/${STATE//./\\.}: checksum mismatch" "${TR[@]}" --init-from st/last.safetensors
head -c 50 "good/$STATE" > "st/$STATE"
expect_error "st/${STATE//./\\.}: truncated" "${TR[@]}" --init-from st/last.safetensors
rm "st/$STATE"
expect_error "st/last\\.safetensors: its optimizer state st/${STATE//./\\.} is missing.*use --init-weights st/last\\.safetensors" \
    "${TR[@]}" --init-from st/last.safetensors
# A data file with symbols the checkpoint lacks (uppercase letters), resumed into the
# checkpoint's own directory: refused before anything is written there. (A file with fewer
# of its symbols trains: test_finetune_vocab.sh.)
tr 'a-e' 'A-E' < text.txt > upper.txt
expect_error "upper\.txt has 5 symbols that the model good/last\.safetensors lacks: 'A', 'B', 'C', 'D', 'E'; " \
    "$SK_TRAIN" "${TINY[@]}" --data upper.txt --out-dir good --max-iters 9 --init-from good/last.safetensors
expect_error 'upper\.txt has 5 symbols that the model' \
    "$SK_TRAIN" "${TINY[@]}" --data upper.txt --eval-only --init-from good/last.safetensors

echo "== shakespeare-sample"
expect_error '--checkpoint FILE is required' "$SK_SAMPLE" --length 5
expect_error '--checkpoint needs a value' "$SK_SAMPLE" --checkpoint
expect_error 'unknown .*option --bogus' "${SA[@]}" --bogus
expect_error '--argmax=1 does not take a value' "${SA[@]}" --argmax=1
expect_error 'unexpected argument "stray"' "${SA[@]}" stray
expect_error 'missing\.safetensors: cannot open' "$SK_SAMPLE" --checkpoint missing.safetensors
mkdir -p nothing
expect_error 'nothing: the directory holds no best\.safetensors or last\.safetensors' "$SK_SAMPLE" --checkpoint nothing
expect_error 'empty\.safetensors: truncated' "$SK_SAMPLE" --checkpoint empty.safetensors
expect_error 'truncated\.safetensors: truncated' "$SK_SAMPLE" --checkpoint truncated.safetensors
expect_error 'corrupt\.safetensors: checksum mismatch' "$SK_SAMPLE" --checkpoint corrupt.safetensors
expect_error 'foreign\.safetensors: not a shakespeare checkpoint' "$SK_SAMPLE" --checkpoint foreign.safetensors
expect_error '--temperature must be in \(0, .*got 0' "${SA[@]}" --temperature 0
expect_error '--temperature must be in \(0, .*got -1' "${SA[@]}" --temperature -1
expect_error '--temperature expects a finite number, got "nan"' "${SA[@]}" --temperature nan
expect_error '--temperature expects a finite number, got "1e999"' "${SA[@]}" --temperature 1e999
expect_error '--temperature expects a finite number, got "warm"' "${SA[@]}" --temperature warm
expect_error '--top-k must be in \[0, .*got -1' "${SA[@]}" --top-k -1
expect_error '--top-k must be at most the vocabulary size [0-9]+, got 1000' "${SA[@]}" --top-k 1000
expect_error '--top-p must be in \(0, 1\], got 0' "${SA[@]}" --top-p 0
expect_error '--top-p must be in \(0, 1\], got 1.5' "${SA[@]}" --top-p 1.5
expect_error '--top-p expects a finite number, got "nan"' "${SA[@]}" --top-p nan
expect_error '--length must be in \[0, .*got -1' "${SA[@]}" --length -1
expect_error '--length expects an integer, got "5x"' "${SA[@]}" --length 5x
expect_error '--seed expects a non-negative integer .*got "-1"' "${SA[@]}" --seed -1
expect_error '--threads must be in \[0, 1024\], got 2000' "${SA[@]}" --threads 2000
expect_error '--device expects auto, cpu, cuda or cuda:N, got "tpu"' "${SA[@]}" --device tpu
expect_error '--prime and --prime-file cannot be used together' "${SA[@]}" --prime to --prime-file text.txt
expect_error '--score cannot be combined with a prime text' "${SA[@]}" --score text.txt --prime to
expect_error '--prime is empty' "${SA[@]}" --prime ""
expect_error "--prime has character 'Q' \(U\+0051\) at position 4" "${SA[@]}" --prime "to Qe"
expect_error "--prime has character '€' \(U\+20AC\) at position 3" "${SA[@]}" --prime "é €"
printf 'the end\nX marks' > oov.txt
expect_error "oov\.txt has character 'X' \(U\+0058\) at position 9" "${SA[@]}" --prime-file oov.txt
expect_error 'cannot open missing\.txt' "${SA[@]}" --prime-file missing.txt
expect_error 'empty\.txt is empty' "${SA[@]}" --prime-file empty.txt
expect_error 'latin1\.txt: invalid UTF-8' "${SA[@]}" --prime-file latin1.txt
expect_error 'adir is a directory' "${SA[@]}" --prime-file adir
expect_error 'cannot open missing\.txt' "${SA[@]}" --score missing.txt
expect_error 'empty\.txt is empty' "${SA[@]}" --score empty.txt
expect_error 'latin1\.txt: invalid UTF-8 at byte 6 .*: this model reads UTF-8 text \(a model trained with --vocab bytes scores any file\)$' "${SA[@]}" --score latin1.txt
expect_error 'adir is a directory' "${SA[@]}" --score adir
expect_error 'fifo\.txt is not a regular file' "${SA[@]}" --score fifo.txt
expect_error "^error: oov\.txt has 2 symbols that the model lacks: 'X', 'k' \(the first at position 9\); a model knows the symbols it was trained on$" "${SA[@]}" --score oov.txt
printf 'the end\nXYZ the end' > oov3.txt
expect_error "^error: oov3\.txt has 3 symbols that the model lacks: 'X', 'Y', 'Z' \(the first at position 9\)" "${SA[@]}" --score oov3.txt
printf 'e' > one.txt
expect_error 'one\.txt: a text to score needs at least 2 characters' "${SA[@]}" --score one.txt
expect_error 'fifo\.txt: cannot open \(not a regular file\)' "$SK_SAMPLE" --checkpoint fifo.txt --device cpu
expect_error 'fifo\.txt: cannot open \(not a regular file\)' "${TR[@]}" --init-from fifo.txt

echo "== nothing written, nothing damaged"
if [ -e "$FRESH" ] && [ -n "$(find "$FRESH" -type f)" ]; then
    fail "failed runs left files in $FRESH: $(find "$FRESH" -type f | tr '\n' ' ')"
else
    note "failed runs left no file behind"
fi
if diff -r good good.orig > /dev/null; then
    note "the checkpoint directory is unchanged"
else
    fail "refused runs changed the checkpoint directory: $(diff -rq good good.orig | tr '\n' ' ')"
fi
expect_ok "$SK_SAMPLE" --checkpoint good/last.safetensors --device cpu --length 5 --argmax &&
    note "the checkpoint still loads"
finish
