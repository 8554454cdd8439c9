#!/usr/bin/env bash
# test_sample_batch.sh: shakespeare-sample --num-samples N and --output-dir on a briefly trained
# tiny model.
#  - N samples come out one after another, each under a "==> sample i of N (seed S) <==" line
#    with S = --seed + i - 1, each the prime and exactly --length more characters;
#  - --output-dir writes the same samples, sample-NNNN.txt each (the same run, byte for byte);
#    --num-samples 1 into a directory equals a plain run (a batch of one computes as a plain
#    run does). That stream i of a batch draws what a single run with seed S draws is
#    test_sample_batch.c's (there the arithmetic cannot differ between batch sizes);
#  - bad input, each one line on stderr, exit 2 and nothing on stdout or in the directory:
#    --num-samples 0, with --score, more than the machine's memory, a directory that already
#    holds a sample, an --output-dir that is a file.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 80 5
expect_ok "$SK_TRAIN" "${TINY[@]}" --data text.txt --out-dir m --max-iters 200 --lr 0.01 --eval-every 0 || finish
S=("$SK_SAMPLE" --checkpoint m/last.safetensors --device cpu --threads 1 --prime "the" --length 60)
nchars() { LC_ALL=C.UTF-8 wc -m < "$1" | tr -d ' '; }

echo "== --num-samples 3 to stdout"
expect_ok "${S[@]}" --num-samples 3 --seed 11 || finish
cp .ok.out three.txt
headers=$(grep '^==> ' three.txt | tr '\n' '|')
[ "$headers" = "==> sample 1 of 3 (seed 11) <==|==> sample 2 of 3 (seed 12) <==|==> sample 3 of 3 (seed 13) <==|" ] &&
    note "three headers with seeds 11, 12, 13" || fail "headers: $headers"
# The bodies: the lines after each header up to the blank line before the next one.
for i in 1 2 3; do
  awk -v want="$i" '/^==> sample /{n++; next} n == want' three.txt | sed '${/^$/d}' > "body$i.txt"
done

echo "== --output-dir: the same samples, one file each"
expect_ok "${S[@]}" --num-samples 3 --seed 11 --output-dir out3 || finish
[ ! -s .ok.out ] && note "nothing on stdout" || fail "stdout with --output-dir: $(head -c 100 .ok.out)"
[ "$(ls out3 | tr '\n' ' ')" = "sample-0001.txt sample-0002.txt sample-0003.txt " ] &&
    note "out3 holds sample-0001..0003.txt" || fail "out3 holds: $(ls out3)"
for i in 1 2 3; do
  f=out3/sample-000$i.txt
  cmp -s "$f" "body$i.txt" || fail "$f differs from sample $i on stdout"
  head -c 3 "$f" | grep -q '^the' || fail "$f does not start with the prime"
  [ "$(nchars "$f")" = 64 ] || fail "$f holds $(nchars "$f") characters, want 3 + 60 + a newline"
done
note "each file is its stdout sample: the prime and 60 characters"

echo "== --num-samples 1 equals a plain run"
expect_ok "${S[@]}" --seed 5 || finish
cp .ok.out plain.txt
expect_ok "${S[@]}" --seed 5 --num-samples 1 --output-dir one || finish
cmp -s plain.txt one/sample-0001.txt && note "one/sample-0001.txt = the plain run's stdout" ||
    fail "--num-samples 1 differs from the plain run"

echo "== bad input"
expect_error 'num-samples' "${S[@]}" --num-samples 0
expect_error '--score cannot be combined with --num-samples' "$SK_SAMPLE" --checkpoint m/last.safetensors \
    --device cpu --score text.txt --num-samples 2
expect_error 'more than this machine.s .* MiB; ask for fewer --num-samples or a shorter --length' \
    "${S[@]}" --num-samples 4096 --length 1000000000
before=$(cat out3/sample-0002.txt)
expect_error 'already holds sample-0001.txt; choose another directory' "${S[@]}" --num-samples 3 --output-dir out3
[ "$(cat out3/sample-0002.txt)" = "$before" ] && note "out3's samples untouched" || fail "out3 was changed"
touch afile
expect_error '--output-dir afile exists and is not a directory' "${S[@]}" --num-samples 2 --output-dir afile
expect_error '--output-dir nowhere/deeper: cannot create it' "${S[@]}" --num-samples 2 --output-dir nowhere/deeper
finish
