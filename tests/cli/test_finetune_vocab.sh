#!/usr/bin/env bash
# test_finetune_vocab.sh: fine-tuning (--init-weights) and resuming (--init-from) take a corpus
# whose symbols are a subset of the model's vocabulary, with the model's own ids; a corpus with
# symbols the model lacks is refused in one line naming up to 10 of them. For a code-point model
# and a --vocab bytes model:
#   - the runs start, and what they save keeps the model's whole vocabulary;
#   - the ids are the model's: --eval-only of a model (773fb49's, which scores from a zero state
#     as evaluation does) on a subset corpus (one stream, the second half as validation) gives
#     the loss shakespeare-sample --score gives on that half
#     (which maps the text to the model's ids itself), to 1e-4; the data's own ids would not;
#   - the token cache stays the data's: a fresh run on the subset corpus gets its own, smaller
#     vocabulary from it.
# A --vocab bytes model knows all 256 byte values, so it fine-tunes on any file (issue 50, item
# 6); a byte model of 773fb49 (tests/data/v2), which knows its text's bytes only, fine-tunes on
# a text within them and refuses another byte, naming it.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 60 5 # lowercase words, é and ï, punctuation
sed 's/é//g; s/ï//g; s/[,.;]//g' text.txt > sub.txt # fewer symbols, all of them the model's, all ASCII
{ cat sub.txt; echo "ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123"; } > new.txt # 30 symbols the model lacks
printf 'the end\377\n' > nul.txt && cat sub.txt nul.txt > newbyte.txt # byte 0xFF: no model has it
M=(--device cpu --threads 1)

# The model file's vocabulary metadata (the JSON array of its symbols).
vocab_of() { head -c "$(($(od -An -t u8 -N 8 "$1" | tr -d ' ') + 8))" "$1" | grep -ao '"vocab":"\[[0-9,]*\]"'; }
symbols() { LC_ALL=C.UTF-8 awk '{ for (i = 1; i <= length($0); i++) s[substr($0, i, 1)] = 1 } END {
    n = 1; for (c in s) n++; print n }' "$1"; } # the distinct characters, newline included

for mode in utf8 bytes; do
    d=$mode
    expect_ok "$SK_TRAIN" "${TINY[@]}" --vocab $mode --data text.txt --out-dir "$d/m" --max-iters 30 --eval-every 0 ||
        continue
    want=$(vocab_of "$d/m/last.safetensors")

    expect_ok "$SK_TRAIN" "${M[@]}" --init-weights "$d/m/last.safetensors" --data sub.txt --out-dir "$d/ft" \
        --max-iters 10 --eval-every 0 "${TINY[@]}" &&
        [ "$(vocab_of "$d/ft/last.safetensors")" = "$want" ] &&
        note "$mode: --init-weights on a subset corpus keeps the model's vocabulary" ||
        fail "$mode: --init-weights on a subset corpus: $(cat .ok.err)"
    cp -r "$d/m" "$d/r"
    expect_ok "$SK_TRAIN" "${M[@]}" --init-from "$d/r/last.safetensors" --data sub.txt --out-dir "$d/r" --max-iters 40 &&
        [ "$(state_step "$d/r/last.safetensors")" = 40 ] && [ "$(vocab_of "$d/r/last.safetensors")" = "$want" ] &&
        note "$mode: --init-from on a subset corpus resumes" || fail "$mode: --init-from on a subset corpus: $(cat .ok.err)"

    # The ids, with a model of 773fb49 (tests/data/v2): it records no start context, so that
    # --score, like --eval-only, reads the text from a zero state (a model trained now scores
    # after a newline).
    mkdir "$d/v2" && cp "$SK_SOURCE_DIR/tests/data/v2/$mode"/last.* "$d/v2"/
    sed 's/é//g; s/ï//g; s/[,.;]//g' "$SK_SOURCE_DIR"/tests/data/v2/text.txt > v2sub.txt
    n=$(wc -c < v2sub.txt)
    tail -c $((n - n / 2)) v2sub.txt > half.txt # the validation split of --train-frac 0.5 --val-frac 0.5
    expect_ok "$SK_TRAIN" "${M[@]}" --init-from "$d/v2/last.safetensors" --eval-only --data v2sub.txt --train-frac 0.5 \
        --val-frac 0.5 --batch-size 1 --seq-length 40 || continue
    ev=$(sed -n 's/^val_loss \([0-9.]*\) nats.*/\1/p' .ok.out)
    expect_ok "$SK_SAMPLE" "${M[@]}" --checkpoint "$d/v2/last.safetensors" --score half.txt || continue
    sc=$(sed -n 's/^half.txt: \([0-9.]*\) nats.*/\1/p' .ok.out)
    awk -v a="$ev" -v b="$sc" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-4) }' &&
        note "$mode: the model's ids: --eval-only $ev, --score $sc" ||
        fail "$mode: --eval-only on the subset corpus gives $ev, --score of its validation half $sc"

    if [ $mode = utf8 ]; then
        expect_error "^error: new\.txt has 30 symbols that the model utf8/m/last\.safetensors lacks: '0', '1', '2', '3', 'A', 'B', 'C', 'D', 'E', 'F' and 20 more; a model knows the symbols it was trained on \(train the next one with --vocab bytes to take any text\)$" \
            "$SK_TRAIN" "${M[@]}" --init-weights "$d/m/last.safetensors" --data new.txt --out-dir "$d/x" --max-iters 5
        expect_error "^error: new\.txt has 30 symbols that the model" \
            "$SK_TRAIN" "${M[@]}" --init-from "$d/m/last.safetensors" --data new.txt --out-dir "$d/m" --max-iters 35
    else
        expect_ok "$SK_TRAIN" "${M[@]}" --init-weights "$d/m/last.safetensors" --data newbyte.txt --out-dir "$d/x" \
            --max-iters 5 --eval-every 0 "${TINY[@]}" && [ "$(vocab_of "$d/x/last.safetensors")" = "$want" ] &&
            note "bytes: fine-tunes on a file with bytes its text never had (0xFF, '\\377')" ||
            fail "bytes: fine-tuning on newbyte.txt: $(cat .ok.err)"
        [ "$(echo "$want" | tr -cd , | wc -c)" = 255 ] &&
            note "bytes: the vocabulary is all 256 byte values" || fail "bytes: the vocabulary is $want"
    fi
done

# A byte model of 773fb49 knows only its text's bytes: it fine-tunes on a text within them and
# refuses a byte outside them, naming it.
V2=$SK_SOURCE_DIR/tests/data/v2/bytes/last.safetensors
cp "$SK_SOURCE_DIR"/tests/data/v2/text.txt v2text.txt && head -c 2000 v2text.txt > v2sub.txt
expect_ok "$SK_TRAIN" "${M[@]}" --init-weights "$V2" --data v2sub.txt --out-dir v2ft --max-iters 5 --eval-every 0 \
    --batch-size 2 --seq-length 8 && [ "$(vocab_of v2ft/last.safetensors)" = "$(vocab_of "$V2")" ] &&
    note "a byte model of 773fb49 fine-tunes on a text within its bytes" || fail "v2 byte model: $(cat .ok.err)"
cat v2sub.txt nul.txt > v2new.txt
expect_error "^error: v2new\.txt has 1 byte value that the model .*/v2/bytes/last\.safetensors lacks: 0xFF; this --vocab bytes model, written before byte models took all 256 values, knows only the bytes of the text it was trained on \(a model trained now knows them all\)$" \
    "$SK_TRAIN" "${M[@]}" --init-weights "$V2" --data v2new.txt --out-dir v2x --max-iters 5

# The token cache of sub.txt holds its own ids: a fresh run on it has its own vocabulary.
expect_ok "$SK_TRAIN" "${TINY[@]}" --data sub.txt --out-dir fresh --max-iters 2 --eval-every 0 &&
    [ "$(vocab_of fresh/last.safetensors | tr -cd , | wc -c)" = $(($(symbols sub.txt) - 1)) ] &&
    note "a fresh run on the subset corpus: its own $(symbols sub.txt) symbols" ||
    fail "a fresh run on the subset corpus: $(vocab_of fresh/last.safetensors), want $(symbols sub.txt) symbols"
finish
