#!/usr/bin/env bash
# test_token_cache.sh: the token cache and byte vocabularies through the real programs: the
# cache lives in --cache-dir (default: shakespeare-cache beside --out-dir), never beside the data,
# and later runs reuse it; a changed source or a corrupt cache is one "note:" line and a correct
# run; --vocab bytes trains on a file with invalid UTF-8 and NUL bytes, and its checkpoint
# samples raw bytes, primes and scores in byte mode, resumes without --vocab; --eval-tokens
# evaluates a deterministic prefix of the streams.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 80 3
mkdir ro && gen_text ro/data.txt 80 3 && chmod a-w ro
RUN=("$SK_TRAIN" "${TINY[@]}" --max-iters 5 --eval-every 0)

echo "== where the cache lives; reuse"
expect_ok "${RUN[@]}" --data ro/data.txt --out-dir runs/a &&
    [ "$(ls runs/shakespeare-cache/data.txt.*.utf8.tokens | wc -l)" = 1 ] && [ "$(ls ro)" = data.txt ] &&
    note "default cache beside the out-dir, nothing beside a read-only data folder" ||
    fail "default cache: $(ls -R runs ro | tr '\n' ' ') $(cat .ok.err)"
cache=$(ls runs/shakespeare-cache/*.tokens)
before=$(stat -c %i:%Y "$cache")
expect_ok "${RUN[@]}" --data ro/data.txt --out-dir runs/b && [ "$(stat -c %i:%Y "$cache")" = "$before" ] &&
    ! grep -v '^note: the run ends at step ' .ok.err | grep -q . && same_tensors runs/a/last.safetensors runs/b/last.safetensors &&
    note "a second run reuses the cache and trains identically" || fail "cache reuse: $(cat .ok.err)"
expect_ok "${RUN[@]}" --data text.txt --out-dir c1 --cache-dir my/cache &&
    ls my/cache/text.txt.*.utf8.tokens > /dev/null && note "--cache-dir" || fail "--cache-dir: $(ls -R my)"

echo "== stale and corrupt caches: one note, a correct run"
expect_ok "${RUN[@]}" --data text.txt --out-dir ref --cache-dir cc || finish
cache=$(ls cc/*.tokens)
cp text.txt text.orig
check_rebuild() { # REASON-REGEX: one note naming the cache, a run identical to the reference
    expect_ok "${RUN[@]}" --data text.txt --out-dir again --overwrite --cache-dir cc &&
        [ "$(grep -vc '^note: the run ends at step ' .ok.err)" = 1 ] && grep -Eq "^note: token cache .*: $1.*; rebuilding it$" .ok.err &&
        same_tensors ref/last.safetensors again/last.safetensors &&
        note "$(cat .ok.err)" || fail "want one rebuild note /$1/: $(cat .ok.err)"
}
head -c 300 "$cache" > cut && cat cut > "$cache"
check_rebuild 'truncated'
printf 'X' | dd of="$cache" bs=1 seek=400 conv=notrunc 2> /dev/null
check_rebuild 'corrupt token ids'
printf 'X' | dd of="$cache" bs=1 seek=0 conv=notrunc 2> /dev/null
check_rebuild 'not a token cache'
touch -d '2001-01-01' text.txt
check_rebuild 'the source changed \(modified'
echo "an extra line" >> text.txt
expect_ok "${RUN[@]}" --data text.txt --out-dir grown --cache-dir cc &&
    grep -q 'the source changed ([0-9]* bytes, now [0-9]*)' .ok.err && ! same_tensors ref/last.safetensors grown/last.safetensors &&
    note "a grown source is re-tokenized: $(cat .ok.err)" || fail "grown source: $(cat .ok.err)"
cp text.orig text.txt

echo "== --vocab bytes: invalid UTF-8 and NUL bytes"
{ for i in $(seq 1 60); do printf 'ab\000c\377\376 de\300f\n'; cat text.txt | head -n 1; done; } > bin.dat
expect_error 'bin\.dat: invalid UTF-8 at byte 4.*--vocab bytes' "$SK_TRAIN" "${TINY[@]}" --data bin.dat --out-dir bu
expect_ok "${RUN[@]}" --data bin.dat --out-dir bb --vocab bytes --max-iters 60 --lr 0.01 &&
    ls runs/shakespeare-cache > /dev/null && note "trains on bytes" || fail "bytes training: $(cat .ok.err)"
S=("$SK_SAMPLE" --checkpoint bb/last.safetensors --device cpu --threads 1)
byteset() { od -An -v -tx1 "$1" | tr -s ' ' '\n' | grep . | sort -u; }
if expect_ok "${S[@]}" --temperature 3 --length 3000 --seed 5 --prime ab; then
    # Raw bytes out: the data's invalid bytes appear as themselves, and nothing else does.
    head -c -1 .ok.out > gen.bin
    [ "$(stat -c %s gen.bin)" = 3002 ] && byteset gen.bin | grep -qx ff && [ -z "$(comm -23 <(byteset gen.bin) <(byteset bin.dat))" ] &&
        note "the sample is 2 + 3000 raw bytes, 0xFF among them, all of them the data's" ||
        fail "byte sample: $(stat -c %s gen.bin) bytes, $(comm -23 <(byteset gen.bin) <(byteset bin.dat) | tr '\n' ' ')"
fi
printf 'ab\000c\377' > prime.bin
expect_ok "${S[@]}" --argmax --length 20 --prime-file prime.bin && cmp -s <(head -c 5 .ok.out) prime.bin &&
    note "a byte prime (with NUL and 0xFF) is echoed as bytes" || fail "byte prime-file"
expect_error 'has byte 0x5A at position 1 that is not in the vocabulary' "${S[@]}" --prime aZ
expect_ok "${S[@]}" --score bin.dat --cache-dir sc && grep -Eq 'bin\.dat: [0-9.]+ nats/char, [0-9.]+ bits/char over [0-9]+ predicted' .ok.out &&
    n=$(sed -n 's/.* over \([0-9]*\) predicted.*/\1/p' .ok.out) && [ "$n" = $(($(stat -c %s bin.dat) - 1)) ] &&
    ls sc/bin.dat.*.bytes.tokens > /dev/null && note "score in byte mode: $(cat .ok.out)" || fail "byte score: $(cat .ok.out) $(cat .ok.err)"
expect_ok "$SK_TRAIN" "${TINY[@]}" --data bin.dat --out-dir bb --init-from bb/last.safetensors --max-iters 70 --eval-every 0 &&
    [ "$(state_step bb/last.safetensors)" = 70 ] && note "resume of a byte model without --vocab" ||
    fail "byte resume: $(cat .ok.err)"
expect_error '--vocab utf8 differs from the checkpoint bb/last\.safetensors \(bytes\)' \
    "$SK_TRAIN" "${TINY[@]}" --data bin.dat --out-dir bb2 --init-from bb/last.safetensors --vocab utf8
expect_error '--vocab expects utf8 or bytes, got "latin1"' "${RUN[@]}" --data text.txt --vocab latin1
# The same text as bytes and as code points: é and ï are two symbols each as bytes.
expect_ok "${RUN[@]}" --data text.txt --out-dir tb --vocab bytes &&
    vb=$(head -c 4000 tb/last.safetensors | grep -ao '"vocab_size":"[0-9]*"') &&
    vu=$(head -c 4000 ref/last.safetensors | grep -ao '"vocab_size":"[0-9]*"') && [ "$vb" != "$vu" ] &&
    note "bytes and utf8 vocabularies of one text differ ($vb vs $vu)" || fail "bytes vs utf8 vocab: $vb $vu"

echo "== --eval-tokens"
expect_ok "$SK_TRAIN" "${TINY[@]}" --data text.txt --out-dir ev --max-iters 20 --eval-every 0 || finish
E=("$SK_TRAIN" "${TINY[@]}" --data text.txt --out-dir ev --init-from ev/last.safetensors --eval-only)
whole=$("${E[@]}" 2> /dev/null | head -n 1)
p16a=$("${E[@]}" --eval-tokens 16 2> /dev/null | head -n 1)
p16b=$("${E[@]}" --eval-tokens 16 2> /dev/null | head -n 1)
big=$("${E[@]}" --eval-tokens 100000000 2> /dev/null | head -n 1)
[ -n "$whole" ] && [ "$p16a" = "$p16b" ] && [ "$p16a" != "$whole" ] && [ "$big" = "$whole" ] &&
    note "--eval-tokens: a deterministic prefix ($p16a), the whole split when larger ($whole)" ||
    fail "--eval-tokens: whole '$whole', 16 '$p16a' / '$p16b', big '$big'"
expect_ok "$SK_TRAIN" "${TINY[@]}" --data text.txt --out-dir ev --init-from ev/last.safetensors --max-iters 25 \
    --eval-every 0 --eval-tokens 16 && grep -q 'best validation loss starts over' .ok.err &&
    note "a resume with another --eval-tokens restarts the best-loss bookkeeping" || fail "eval-tokens resume: $(cat .ok.err)"
finish
