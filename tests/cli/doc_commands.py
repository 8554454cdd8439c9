#!/usr/bin/env python3
"""Runs the shell and Python command blocks of README.md and docs/*.md, as a reader would.

Usage: doc_commands.py SOURCE_DIR BUILD_DIR [--list]

Every ```sh and ```python block is read in document order (README first, then docs/ sorted),
continuation lines joined and comments dropped, and each command runs in one scratch
directory shared by all the documents (so `out/` trained by the quick start is what the
sample commands read), where `build`, `scripts` and `data` are links into the trees. Three
rewrites keep the run short while running what the reader runs:

- `scripts/train.sh ARGS` runs `build/shakespeare-train ARGS`: train.sh builds, then execs
  exactly that, and the build is the one under test;
- every training run gets `--max-iters` appended (later flags win): 3 steps for a fresh run,
  3 more than its checkpoint for an `--init-from` run; the evaluation at the end still runs,
  on 20,000 positions (`--eval-tokens`) unless the command sets its own;
- `shakespeare-sample ... --length N` is capped at 200 characters.

A command is skipped, with its reason printed, only when a rule below names it: the test
suite itself, placeholders the reader fills in, multi-process and GPU runs (their own tests
cover them), and Python blocks whose modules (PyTorch, safetensors) are missing. Any other command that exits non-zero fails the
test, with its output. A block may also need a file a document only mentions (`my.txt`): the
fixtures below create those first.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^```(sh|python)\n(.*?)^```", re.M | re.S)

# (pattern on the joined command, reason): commands that are not run here.
SKIPS = [
    (r"(^|/)scripts/test\.sh\b", "the test suite itself"),
    (r"\bCKPT\b|\bFILE_OF_100000_CHARS\b", "a placeholder the reader fills in"),
    (r"^mpirun\b", "a multi-process launch (the mpi_* tests run data-parallel training)"),
    (r"--device cuda", "needs a GPU (the gpu_* tests run on the emulated device)"),
]
SHELL_OPERATORS = {">", ">>", "<", "|", "&&", "||", "2>&1", "2>/dev/null", ">/dev/null"}
# Python packages a block may need; a block importing one that is missing is skipped (the
# tests that need them skip the same way, e.g. without network access for .venv's safetensors).
OPTIONAL_MODULES = ("torch", "safetensors", "numpy")
FRESH_STEPS = 3  # steps of a capped fresh run; a resume runs this many more
SAMPLE_LENGTH_CAP = 200
EVAL_TOKENS_CAP = 20000


def blocks(source_dir):
    docs = [os.path.join(source_dir, "README.md")]
    docs_dir = os.path.join(source_dir, "docs")
    if os.path.isdir(docs_dir):
        docs += sorted(os.path.join(docs_dir, f) for f in os.listdir(docs_dir) if f.endswith(".md"))
    for path in docs:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            yield os.path.relpath(path, source_dir), line, m.group(1), m.group(2)


def shell_commands(body):
    """The commands of an sh block: continuations joined, comment-only lines dropped."""
    joined = re.sub(r"\\\n", " ", body)
    for line in joined.split("\n"):
        words = shlex.split(line, comments=True)
        if words:
            yield line.strip(), words


def skip_reason(command):
    for pattern, reason in SKIPS:
        if re.search(pattern, command):
            return reason
    return None


def checkpoint_step(path):
    """The step a checkpoint's training state holds (its .state file's name), or 0."""
    directory = os.path.dirname(path) or "."
    stem = os.path.basename(path)[: -len(".safetensors")]
    steps = [int(m.group(1)) for f in os.listdir(directory) if (m := re.fullmatch(re.escape(stem) + r"\.(\d+)\.state", f))]
    return max(steps, default=0)


def rewrite(words, work):
    """The command as run here (see the module's docstring), as a list of words."""
    if words and words[0] == "scripts/train.sh":
        words = ["build/shakespeare-train"] + words[1:]
    programs = [i for i, w in enumerate(words) if os.path.basename(w) in ("shakespeare-train", "shakespeare-sample")]
    if not programs:
        return words
    program = os.path.basename(words[programs[0]])
    if program == "shakespeare-train" and "--eval-only" not in words:
        steps = FRESH_STEPS
        if "--init-from" in words:
            steps += checkpoint_step(os.path.join(work, words[words.index("--init-from") + 1]))
        words = words + ["--max-iters", str(steps)]
        if "--eval-tokens" not in words:
            words += ["--eval-tokens", str(EVAL_TOKENS_CAP)]
    if program == "shakespeare-sample" and "--length" in words:
        i = words.index("--length") + 1
        words = words[:i] + [str(min(int(words[i]), SAMPLE_LENGTH_CAP))] + words[i + 1:]
    return words


def read_script(words, source_dir):
    """The text of the .py file a python3 command line runs (a path in the source tree), or ""."""
    for w in words[1:]:
        if w.endswith(".py") and os.path.exists(os.path.join(source_dir, w)):
            with open(os.path.join(source_dir, w), encoding="utf-8") as f:
                return f.read()
    return ""


def make_fixtures(work, source_dir):
    corpus = os.path.join(source_dir, "data", "tinyshakespeare.txt")
    with open(corpus, "rb") as f:
        head = f.read(200_000)
    with open(os.path.join(work, "my.txt"), "wb") as f:  # README: "--data my.txt"
        f.write(head[: head.rfind(b"\n") + 1])


def missing_module(python, code, cache):
    """The first optional module CODE imports (import X, from X...) that PYTHON cannot, or None."""
    for m in OPTIONAL_MODULES:
        if re.search(r"^\s*(import|from)\s+" + m + r"\b", code, re.M):
            if (python, m) not in cache:
                cache[python, m] = subprocess.run([python, "-c", f"import {m}"], capture_output=True).returncode == 0
            if not cache[python, m]:
                return m
    return None


def run(argv_or_script, work, shell, env, timeout=600):
    t0 = time.monotonic()
    p = subprocess.run(argv_or_script, cwd=work, shell=shell, env=env, capture_output=True, timeout=timeout,
                       executable="/bin/bash" if shell else None)
    return p.returncode, (p.stdout + p.stderr).decode("utf-8", "replace"), time.monotonic() - t0


def main():
    if len(sys.argv) < 3:
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    source_dir, build_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    list_only = "--list" in sys.argv[3:]
    work = tempfile.mkdtemp(prefix="sk_docs.")
    try:
        for name, target in (("build", build_dir), ("scripts", os.path.join(source_dir, "scripts")),
                             ("data", os.path.join(source_dir, "data"))):
            os.symlink(target, os.path.join(work, name))
        make_fixtures(work, source_dir)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", LC_ALL="C")
        venv = os.path.join(source_dir, ".venv", "bin", "python3")
        block_python = venv if os.path.exists(venv) else sys.executable
        importable = {}
        failures = ran = skipped = 0
        for doc, line, kind, body in blocks(source_dir):
            where = f"{doc}:{line}"
            if kind == "python":
                commands = [(f"(python block, {body.count(chr(10))} lines)", None)]
            else:
                commands = list(shell_commands(body))
            for text, words in commands:
                text = text.split("  #")[0].rstrip()  # the line as shown, less its trailing comment
                reason = skip_reason(text) if words else None
                python = block_python if words is None else words[0]
                if reason is None and python.endswith("python3"):
                    # the block's own imports, and those of the script a command runs
                    m = missing_module(python, body if words is None else read_script(words, source_dir), importable)
                    if m:
                        reason = f"needs the Python module {m}, not importable by {python}"
                if reason:
                    print(f"skip  {where}: {text}\n      ({reason})")
                    skipped += 1
                    continue
                if list_only:
                    print(f"run   {where}: {text}")
                    continue
                if words is None:
                    rc, output, seconds = run([block_python, "-c", body], work, False, env)
                else:
                    argv = rewrite(words, work)  # now: an --init-from sees what earlier commands wrote
                    command = " ".join(w if w in SHELL_OPERATORS else shlex.quote(w) for w in argv)
                    rc, output, seconds = run(command, work, True, env)
                ran += 1
                if rc != 0:
                    failures += 1
                    print(f"FAIL  {where}: {text}\n      exit {rc} after {seconds:.1f} s; output:\n{output}")
                else:
                    print(f"ok    {where}: {text} ({seconds:.1f} s)")
        print(f"{ran} commands ran, {failures} failed, {skipped} skipped")
        return 1 if failures else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
