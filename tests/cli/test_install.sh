#!/usr/bin/env bash
# test_install.sh: `cmake --install` into a temporary prefix installs both programs, their
# man pages, the corpus under share/shakespeare/, the PyTorch helper module and, in a CUDA build,
# the CUDA backend module (lib/shakespeare/libshakespeare_cuda.so, which the installed
# programs' --version loads: it names the CUDA runtime); the installed
# programs then run from an empty working directory with the source and build trees out of
# reach (covered by empty tmpfs mounts in a private mount namespace, where `unshare` is
# allowed): shakespeare-train with no --data finds the installed corpus beside itself and
# trains 50 steps, shakespeare-sample samples and scores its checkpoint. Nothing is written
# outside the test's own temporary directory.
. "$(dirname "$0")/lib.sh"
: "${SK_BUILD_DIR:?SK_BUILD_DIR must name the build tree}"

P=$WORK/prefix
cmake --install "$SK_BUILD_DIR" --prefix "$P" > install.log 2>&1 ||
    { cat install.log >&2; fail "cmake --install $SK_BUILD_DIR --prefix $P failed"; finish; }
for f in bin/shakespeare-train bin/shakespeare-sample share/shakespeare/tinyshakespeare.txt \
         share/shakespeare/python/shakespeare_torch.py; do
    [ -s "$P/$f" ] || fail "the install has no $f"
done
cuda_module=0
if [ -e "$SK_BUILD_DIR/libshakespeare_cuda.so" ]; then
    cuda_module=1
    m=$(find "$P" -name libshakespeare_cuda.so)
    case "$m" in
        "$P"/lib*/shakespeare/libshakespeare_cuda.so) note "CUDA backend module installed as ${m#"$P"/}" ;;
        *) fail "the CUDA build installed no lib*/shakespeare/libshakespeare_cuda.so (found: ${m:-none})" ;;
    esac
fi
cmp -s "$P/share/shakespeare/tinyshakespeare.txt" "$SK_SOURCE_DIR/data/tinyshakespeare.txt" ||
    fail "the installed corpus differs from data/tinyshakespeare.txt"
if [ "${SK_HAVE_MAN_PAGES:-0}" = 1 ]; then
    for prog in shakespeare-train shakespeare-sample; do
        page=$P/share/man/man1/$prog.1
        # The page is the program's --help: every option it lists appears in the page.
        opts=$("$P/bin/$prog" --help | grep -o '^  --[a-z0-9-]*' | sed 's/^  //')
        missing=$(for o in $opts; do grep -q -- "${o//-/\\\\-}" "$page" 2>/dev/null || echo "$o"; done)
        [ -s "$page" ] && [ -z "$missing" ] && note "man page $prog.1 lists all $(echo $opts | wc -w) options" ||
            fail "man page $page missing or without: $missing"
        grep -q '^\.SH EXAMPLES' "$page" && grep -q '^\.SH "EXIT STATUS"' "$page" &&
            note "man page $prog.1 has EXAMPLES and EXIT STATUS" || fail "man page $prog.1 lacks EXAMPLES or EXIT STATUS"
    done
else
    note "this build has no man pages (no help2man at configure time)"
fi

# Libraries from outside the project that lie inside a tree about to be covered (on a GPU
# machine without OpenBLAS, scripts/device_prep.sh's copy in .carry/ of the source tree,
# found through build-gpu/env.sh) belong to the machine, not to the install: copied out
# first. The project's own libraries never are: the install must hold those.
mkdir -p extlib
for f in "$P"/bin/shakespeare-train "$P"/bin/shakespeare-sample "$P"/lib*/shakespeare/*.so; do
    [ -e "$f" ] && ldd "$f" 2> /dev/null
done | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u | while read -r lib; do
    case "$(basename "$lib")" in libshakespeare*) continue ;; esac
    for tree in "$SK_BUILD_DIR" "$SK_SOURCE_DIR"; do
        case "$lib" in "$tree"/*) cp -L "$lib" extlib/ && note "copied out of the covered trees: $lib"; break ;; esac
    done
done

# What runs inside: an empty directory, the installed programs only.
mkdir -p run
cat > inner.sh <<EOS
set -e
cd "$WORK/run"
export LD_LIBRARY_PATH="$WORK/extlib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
[ ! -e "$SK_SOURCE_DIR/data/tinyshakespeare.txt" ] || echo "trees visible"
"$P/bin/shakespeare-train" --max-iters 50 --eval-every 0 --device cpu > train.log 2>&1
"$P/bin/shakespeare-sample" --checkpoint out/last.safetensors --length 80 --seed 1 --device cpu > sample.txt
head -c 2000 "$P/share/shakespeare/tinyshakespeare.txt" > score.txt
"$P/bin/shakespeare-sample" --checkpoint out/last.safetensors --score score.txt --device cpu > score.log
"$P/bin/shakespeare-train" --version > version.txt
EOS
hide=""
for tree in "$SK_BUILD_DIR" "$SK_SOURCE_DIR"; do # the build tree first: it may lie inside the source tree
    case "$WORK/" in "$tree"/*) continue ;; esac # never cover the test's own directory
    hide="$hide mount -t tmpfs none '$tree' &&"
done
if unshare --mount --propagation private true 2> /dev/null; then
    unshare --mount --propagation private sh -c "$hide bash '$WORK/inner.sh'" > inner.log 2>&1; rc=$?
    grep -q "trees visible" inner.log && fail "the source tree was still reachable"
    hidden="source and build trees covered"
else
    bash inner.sh > inner.log 2>&1; rc=$?
    hidden="trees not covered (unshare is not allowed here), working directory outside them"
fi
if [ "$rc" != 0 ]; then
    cat inner.log run/train.log >&2 2> /dev/null
    fail "the installed programs failed (exit $rc; $hidden)"
    finish
fi
grep -q "\"$P/bin/../share/shakespeare/tinyshakespeare.txt\"\|$P/bin/../share/shakespeare/tinyshakespeare.txt" \
    run/out/last.safetensors && note "shakespeare-train --max-iters 50 trained on the installed corpus ($hidden)" ||
    fail "the checkpoint does not name the installed corpus as its data"
grep -q 'done: steps=50 ' run/train.log || fail "training did not end after 50 steps: $(tail -n 2 run/train.log)"
[ "$(wc -c < run/sample.txt)" -ge 80 ] && note "sampled: $(head -c 40 run/sample.txt | tr '\n' ' ')" ||
    fail "shakespeare-sample wrote $(wc -c < run/sample.txt) bytes"
grep -Eq '^score.txt: [0-9.]+ nats/char' run/score.log && note "$(cat run/score.log)" || fail "--score: $(cat run/score.log)"
grep -q '^backends: cpu' run/version.txt || fail "--version: $(cat run/version.txt)"
if [ "$cuda_module" = 1 ]; then
    grep -q '^backends: cpu, cuda (CUDA runtime [0-9]' run/version.txt &&
        note "installed --version: $(grep '^backends' run/version.txt)" ||
        fail "the installed program did not load its CUDA module: $(grep '^backends' run/version.txt)"
fi
finish
