#!/usr/bin/env bash
# test_help.sh: --help of both programs lists every long option the program declares, each
# with its default ("(default: ...)", or "(required)"), on stdout with exit code 0 and nothing
# on stderr (so does -h); --version prints "<program> X.Y.Z", then the backends built in and the BLAS
# library. Each program's options come from one table (src/cli/cli_train_options.c,
# cli_sample_options.c; printed by tests/cli/options_table.c): --help and the man page's option
# list hold exactly the table's entries, and shakespeare-train's checkpoint options record
# (train_config) exactly its JSON keys; docs/cli.md's copies of --help are the programs' own.
# A few defaults are checked against behaviour.
. "$(dirname "$0")/lib.sh"

# The options a program declares: its table's names.
declared() { "$SK_OPTIONS_TABLE" "$1" | cut -d' ' -f1; } # PROGRAM
# The help text of one option: its line and the indented continuation lines that follow.
help_block() { # HELP_FILE NAME
    awk -v opt="--$2" '
        started && /^  [^ ]/ { exit }             # the next option line
        started && !/^   / { exit }               # a section heading or the end
        started { print; next }
        /^  --/ { for (i = 1; i <= 2; i++) {       # "  --name ARG  text" or "  --help, --version"
            f = $i; sub(/,$/, "", f)
            if (f == opt) { started = 1; print; next }
            if ($1 !~ /,$/) break
        } }
    ' "$1"
}

for prog in train sample; do
    bin=$([ $prog = train ] && echo "$SK_TRAIN" || echo "$SK_SAMPLE")
    name=shakespeare-$prog
    "$bin" --help > help.txt 2> help.err; rc=$?
    [ "$rc" = 0 ] && [ ! -s help.err ] && head -n 1 help.txt | grep -q "^Usage: $name" ||
        fail "$name --help: exit $rc, stderr '$(cat help.err)'"
    opts=$(declared $prog)
    [ "$(printf '%s\n' "$opts" | wc -l)" -ge 10 ] || { fail "could not read the options of $name"; continue; }
    missing=0
    for o in $opts; do
        block=$(help_block help.txt "$o")
        if [ -z "$block" ]; then fail "$name --help does not list --$o"; missing=1; continue; fi
        case $o in help | version) continue ;; esac
        if ! printf '%s' "$block" | tr '\n' ' ' | grep -Eq '\((default: [^)]+|required)\)'; then
            fail "$name --help: --$o has no default: $block"; missing=1
        fi
    done
    [ $missing = 0 ] && note "$name --help lists all $(printf '%s\n' "$opts" | wc -l) options with defaults"
    # Nothing in the help that the program does not accept.
    for o in $(grep -o '^  --[a-z0-9-]*' help.txt | sed 's/^  --//'); do
        printf '%s\n' "$opts" | grep -qx -- "$o" || fail "$name --help documents --$o, which is not declared"
    done
    # docs/cli.md's copy of the help: the block from its "Usage:" line to the closing fence.
    awk -v u="^Usage: $name " '$0 ~ u { on = 1 } on && /^```/ { exit } on' "$SK_SOURCE_DIR/docs/cli.md" > doc.txt
    cmp -s doc.txt help.txt && note "docs/cli.md holds $name --help as it is" ||
        fail "docs/cli.md's copy of $name --help is stale: replace its block from \"Usage: $name\" to the closing \`\`\` with the output of $name --help; $(diff doc.txt help.txt | head -n 4 | tr '\n' ' ')"
    "$bin" -h > h.txt 2> h.err; rc=$?
    [ "$rc" = 0 ] && [ ! -s h.err ] && cmp -s h.txt help.txt && note "$name -h prints --help" ||
        fail "$name -h: exit $rc, stderr '$(cat h.err)', $(diff help.txt h.txt | head -n 3)"
    "$bin" --version > v.txt 2>&1; rc=$?
    [ "$rc" = 0 ] && head -n 1 v.txt | grep -Eqx "$name [0-9]+\.[0-9]+\.[0-9]+" &&
        grep -Eq '^backends: cpu, (cuda \(CUDA runtime [0-9.]+, cuDNN [0-9.]+.*\)|cuda not built in)' v.txt &&
        grep -Eq '^blas: OpenBLAS [0-9]+\.[0-9]+.*; recurrent products: (libxsmm [0-9.]+|CBLAS)$' v.txt &&
        note "$(tr '\n' ' ' < v.txt)" || fail "$name --version: exit $rc, '$(cat v.txt)'"
done

# The man page's option list: the flags that begin an item (the line after .TP, or the line
# of flags alone, "--help, --version"), up to EXAMPLES.
man_options() {
    awk '/^\.SH EXAMPLES/ { exit }
         prev ~ /^\.TP/ || /^(\\fB\\-\\-[a-z0-9\\-]*\\fR(, )?)+$/ { print }
         { prev = $0 }' "$1" |
        grep -o '\\fB\\-\\-[a-z0-9\\-]*' | sed 's/\\fB\\-\\-//; s/\\-/-/g; s/\\f$//'
}
for prog in train sample; do
    table=$(declared $prog | sort)
    page=$SK_BUILD_DIR/man/shakespeare-$prog.1
    if [ "${SK_HAVE_MAN_PAGES:-0}" = 1 ]; then
        got=$(man_options "$page" | sort)
        [ -n "$got" ] && [ "$got" = "$table" ] &&
            note "shakespeare-$prog's man page lists the table's $(echo $table | wc -w) options" ||
            fail "shakespeare-$prog's man page options differ from the table:" \
                "$(diff <(echo "$table") <(echo "$got") | grep '^[<>]' | tr '\n' ' ')"
    else
        note "this build has no man pages (no help2man at configure time)"
    fi
done

# Defaults in the help agree with behaviour: the metrics log and checkpoints land in out/
# (--out-dir default), one record per 10 steps (--log-every default).
"$SK_TRAIN" --help > help.txt
grep -q -- '--out-dir DIR .*(default: out)' help.txt || fail "--out-dir default is not 'out'"
grep -q -- '--log-every N .*(default: 10)' help.txt || fail "--log-every default is not 10"
gen_text text.txt 40 4
expect_ok "$SK_TRAIN" "${TINY[@]}" --data text.txt --max-iters 20 --eval-every 0 &&
    [ -s out/last.safetensors ] && [ "$(grep -c train_loss out/metrics.jsonl)" = 2 ] &&
    note "defaults: out/last.safetensors and a record every 10 steps" || fail "the documented defaults do not hold"

# The checkpoint's options record holds the table's JSON keys and the trainer's one record of
# the run that is not an option, val_set (src/train/run_plan.c), no other. It is JSON inside the
# header's JSON, so its quotes are escaped (\"key\":) where the header's own are not.
header() { head -c "$(($(od -An -t u8 -N 8 "$1" | tr -d ' ') + 8))" "$1"; }
keys=$({ "$SK_OPTIONS_TABLE" train | awk '$2 != "-" { print $2 }'; echo val_set; } | sort)
got=$(header out/last.safetensors | grep -ao '\\"[a-z0-9_]*\\":' | sed 's/\\"//g; s/:$//' | sort)
[ -n "$keys" ] && [ "$got" = "$keys" ] &&
    note "the checkpoint's options record has the table's $(echo $keys | wc -w) keys" ||
    fail "the options record's keys differ from the table:" \
        "$(diff <(echo "$keys") <(echo "$got") | grep '^[<>]' | tr '\n' ' ')"

# A library message names the setting ("eval-only needs a validation split"); the program says
# the flag.
expect_error '^error: --eval-only needs a validation split' "$SK_TRAIN" "${TINY[@]}" --data text.txt --eval-only \
    --init-from out/last.safetensors --val-frac 0 --train-frac 1
# Hidden knobs for benchmarks (no help text): parsed and range-checked like the others, absent
# from --help (and so from the man page).
"$SK_TRAIN" --help | grep -q -- '--cudnn-chunk-steps' && fail "--cudnn-chunk-steps is in --help" ||
    note "--cudnn-chunk-steps is hidden"
expect_error '^error: --cudnn-chunk-steps must be in \[-1, 1048576\], got -5' "$SK_TRAIN" --cudnn-chunk-steps -5
"$SK_SAMPLE" --no-fused-sampler --help > hidden.txt 2>&1 && ! grep -q -- '--no-fused-sampler' hidden.txt &&
    note "--no-fused-sampler is accepted and hidden" || fail "--no-fused-sampler: $(head -n 3 hidden.txt)"
finish
