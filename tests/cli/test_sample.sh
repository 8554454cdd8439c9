#!/usr/bin/env bash
# test_sample.sh: shakespeare-sample on a briefly trained tiny model: the same seed gives the
# same text, other seeds other text; --argmax ignores the seed and equals --top-k 1 and a tiny
# --top-p; --top-p 1 changes nothing; the prime is echoed and continued by exactly --length
# characters from the vocabulary; temperature changes the spread; --prime-file equals
# --prime; output streams; --score prints the mean NLL in nats and bits (bits = nats / ln 2)
# over n - 1 characters, with a progress line on a terminal for a long text; --help and --version.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 80 5
gen_text held.txt 10 99
expect_ok "$SK_TRAIN" "${TINY[@]}" --data text.txt --out-dir m --max-iters 300 --lr 0.01 --eval-every 0 || finish
S=("$SK_SAMPLE" --checkpoint m/last.safetensors --device cpu --threads 1)
nchars() { LC_ALL=C.UTF-8 wc -m | tr -d ' '; }
distinct() { LC_ALL=C.UTF-8 grep -o . | sort -u | wc -l; }

echo "== --help, --version"
expect_ok "$SK_SAMPLE" --help && head -n 1 .ok.out | grep -q '^Usage: shakespeare-sample' && [ ! -s .ok.err ] &&
    note "--help" || fail "--help: $(head -n 2 .ok.out)"
expect_ok "$SK_SAMPLE" --version && grep -Eq '^shakespeare-sample [0-9]+\.[0-9]+\.[0-9]+' .ok.out &&
    grep -q '^backends: cpu' .ok.out && grep -q '^blas: ' .ok.out && note "--version: $(head -n 1 .ok.out)" ||
    fail "--version: $(cat .ok.out)"

echo "== seeds"
a=$("${S[@]}" --length 200 --seed 1)
b=$("${S[@]}" --length 200 --seed 1)
c=$("${S[@]}" --length 200 --seed 2)
d=$("${S[@]}" --length 200)
[ ${#a} -ge 200 ] && [ "$a" = "$b" ] && note "--seed 1 twice: identical" || fail "--seed 1 twice differs"
[ "$a" != "$c" ] && note "--seed 2 differs" || fail "--seed 1 and --seed 2 give the same text"
[ "$a" = "$d" ] && note "the default seed is 1" || fail "no --seed differs from --seed 1 (help says default 1)"

echo "== argmax, top-k, temperature"
g1=$("${S[@]}" --length 100 --argmax --seed 1)
g2=$("${S[@]}" --length 100 --argmax --seed 7 --temperature 3)
k1=$("${S[@]}" --length 100 --top-k 1 --seed 9)
[ "$g1" = "$g2" ] && note "--argmax ignores seed and temperature" || fail "--argmax depends on the seed or temperature"
[ "$g1" = "$k1" ] && note "--top-k 1 == --argmax" || fail "--top-k 1 differs from --argmax: '$k1' vs '$g1'"
k3a=$("${S[@]}" --length 200 --top-k 3 --seed 4)
k3b=$("${S[@]}" --length 200 --top-k 3 --seed 4)
[ "$k3a" = "$k3b" ] && [ "$k3a" != "$a" ] && note "--top-k 3 is deterministic per seed" || fail "--top-k 3"
p0=$("${S[@]}" --length 100 --top-p 1e-6 --seed 9)
[ "$g1" = "$p0" ] && note "--top-p 1e-6 == --argmax" || fail "--top-p 1e-6 differs from --argmax: '$p0' vs '$g1'"
p1=$("${S[@]}" --length 200 --top-p 1 --seed 1)
[ "$p1" = "$a" ] && note "--top-p 1 == no --top-p" || fail "--top-p 1 changes the text"
p9a=$("${S[@]}" --length 200 --top-p 0.6 --seed 1)
p9b=$("${S[@]}" --length 200 --top-p 0.6 --seed 1)
[ "$p9a" = "$p9b" ] && [ "$p9a" != "$a" ] && note "--top-p 0.6 is deterministic per seed" || fail "--top-p 0.6"
cold=$("${S[@]}" --length 400 --temperature 0.05 --seed 3 | distinct)
hot=$("${S[@]}" --length 400 --temperature 50 --seed 3 | distinct)
[ "$cold" -lt "$hot" ] && note "distinct characters: $cold at T=0.05, $hot at T=50" ||
    fail "temperature has no effect: $cold distinct characters at T=0.05, $hot at T=50"

echo "== prime, length, vocabulary"
out=$("${S[@]}" --length 50 --prime "café naïve" --seed 3; echo x) # x keeps the final newline
out=${out%x}
[ "${out#café naïve}" != "$out" ] && note "the prime is echoed first" || fail "output does not start with the prime: $out"
n=$(printf '%s' "$out" | nchars)
[ "$n" = 61 ] && note "10 prime + 50 generated + newline characters" || fail "$n characters, want 61: '$out'"
[ "${out: -1}" = $'\n' ] || fail "the output does not end with a newline"
# Every character comes from the training text's vocabulary.
extra=$(printf '%s' "$a" | LC_ALL=C.UTF-8 grep -o . | sort -u | LC_ALL=C.UTF-8 grep -vxFf <(LC_ALL=C.UTF-8 grep -o . text.txt | sort -u))
[ -z "$extra" ] && note "every character is in the vocabulary" || fail "characters outside the vocabulary: $extra"
z=$("${S[@]}" --length 0 --prime "to be"; echo x)
[ "$z" = $'to be\nx' ] && note "--length 0 prints the prime" || fail "--length 0: '$z'"
printf 'to be or' > prime.txt
p1=$("${S[@]}" --length 80 --prime "to be or" --seed 6)
p2=$("${S[@]}" --length 80 --prime-file prime.txt --seed 6)
[ "$p1" = "$p2" ] && note "--prime-file == --prime" || fail "--prime-file differs from --prime"

echo "== streaming"
# Characters reach stdout (a file: fully buffered unless flushed) while generation runs.
"${S[@]}" --length 100000000 > stream.out 2> /dev/null &
pid=$!
streamed() { [ "$(wc -c < stream.out)" -ge 100 ]; }
if wait_for 20 streamed && kill -0 "$pid" 2> /dev/null; then note "output streams"; else fail "no streamed output"; fi
kill "$pid" 2> /dev/null; wait "$pid" 2> /dev/null

echo "== --score"
ln2=0.693147180559945
expect_ok "${S[@]}" --score held.txt --seed 5 || finish
line=$(cat .ok.out)
re='^held\.txt: ([0-9]+\.[0-9]{6}) nats/char, ([0-9]+\.[0-9]{6}) bits/char over ([0-9]+) predicted characters$'
if [[ $line =~ $re ]]; then
    nats=${BASH_REMATCH[1]} bits=${BASH_REMATCH[2]} count=${BASH_REMATCH[3]}
    want=$(nchars < held.txt) # every character: the first one after the model's start context, a newline
    [ "$count" = "$want" ] && note "scored $count characters" || fail "count $count, want $want"
    awk -v n="$nats" -v b="$bits" -v l="$ln2" 'BEGIN { d = n / l - b; exit !(d < 2e-6 && d > -2e-6) }' &&
        note "bits = nats / ln 2 ($nats / ln 2 = $bits)" || fail "bits $bits != nats $nats / ln 2"
    # Trained: better than the uniform guess ln(V) over the vocabulary.
    V=$(LC_ALL=C.UTF-8 grep -o . text.txt | sort -u | wc -l); V=$((V + 1)) # + newline
    awk -v n="$nats" -v V="$V" 'BEGIN { exit !(n > 0 && n < log(V)) }' &&
        note "score $nats < ln($V)" || fail "score $nats is not below ln($V)"
    expect_ok "${S[@]}" --score held.txt --seed 77 && [ "$(cat .ok.out)" = "$line" ] &&
        note "--score does not depend on the seed" || fail "--score depends on the seed"
else
    fail "unexpected --score output: $line"
fi

echo "== --score's progress on a terminal"
# A model slow enough (2 x 256, one thread) that 30,000 characters take seconds: on a terminal
# (script(1) gives it one) a live line on stderr says how far it is, and is wiped before the
# result; into a pipe, the result alone.
gen_text long.txt 900 7
expect_ok "$SK_TRAIN" --data long.txt --embed-size 64 --hidden-size 256 --num-layers 2 --batch-size 4 --seq-length 50 \
    --max-iters 1 --eval-every 0 --device cpu --threads 1 --out-dir big || finish
head -n 800 long.txt > score.txt
SB=("$SK_SAMPLE" --checkpoint big/last.safetensors --device cpu --threads 1 --score score.txt)
if command -v script > /dev/null; then
    TERM=xterm script -qfec "$(printf '%q ' "${SB[@]}")" /dev/null > tty.txt 2>&1
    tr '\r' '\n' < tty.txt | grep -Eq '^.\[Kscoring: [0-9]+ of [0-9]+ characters \([0-9]+%\), eta [0-9]+m[0-9]{2}s$' &&
        tr '\r' '\n' < tty.txt | grep -q 'score.txt: [0-9.]* nats/char' &&
        note "a terminal sees: $(tr '\r' '\n' < tty.txt | grep -m 1 -o 'scoring: .*')" ||
        fail "no progress line on a terminal: $(tr '\r' '\n' < tty.txt | head -n 3)"
else
    note "no script(1) here: the terminal case is left out"
fi
expect_ok "${SB[@]}" && [ ! -s .ok.err ] && grep -q '^score.txt: ' .ok.out && note "into a pipe: the result alone" ||
    fail "--score into a pipe: $(cat .ok.err)"
finish
