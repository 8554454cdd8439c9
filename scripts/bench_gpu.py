#!/usr/bin/env python3
"""bench_gpu.py: GPU training throughput, memory and time to quality of shakespeare-train
against PyTorch, side by side in one run.

Builds build-gpu/ (scripts/device_build.sh), then for each configuration
  A  E=128 H=256 L=2 B=32 T=100 dropout 0
  B  E=256 H=512 L=4 B=64 T=128 dropout 0.2
runs `shakespeare-train --device cuda` once per variant (--variants: LSTM implementation /
precision / CUDA graph [/ tensor cores], e.g. persistent/bf16/on/off = --rnn-impl persistent
--precision bf16 --cuda-graph on --tensor-cores off; auto/auto/auto is the default run, whose
LSTM implementation is measured at its start) for warm-up + timed steps, then the PyTorch
peer scripts/bench_gpu_torch.py (CharLSTM, nn.LSTM on cuDNN, TF32 allowed, Adam(fused=True),
clip_grad_norm_) on the same
job: data/tinyshakespeare.txt's training split in B streams, windows of T, state carried and
detached; Adam lr 2e-3, clip 5. Then, by default, PyTorch once more with TF32 forbidden
(plain fp32, the arithmetic of shakespeare's fp32 precision).
tokens/s = B*T / median step time over the timed steps, the warm-up left out, on both sides:
shakespeare-train runs with --log-every 1, so it reads every step's results back (a host
sync per step, which costs the next launch a few microseconds) and its metrics log holds
each step's own tokens/s; the PyTorch script times each step between synchronizations.
PyTorch runs three ways: TF32 allowed (its default for cuDNN), TF32 forbidden, and its whole
step captured as one CUDA graph (--graph on, torch.cuda.graph); every ratio is against the
best of the three (pt_best).
A variant that shakespeare-train refuses for a configuration (exit 2 with an error: line,
e.g. a persistent kernel that does not fit the shape, or a flag this build lacks) is
reported as refused with that line; it is not a failure of the benchmark.

Memory: while each process runs, nvidia-smi is polled every --poll-ms ms for the process's
used device memory (--query-compute-apps, matched by pid); the peak is *_peak_mib. That is
the process's whole device footprint: CUDA context and module images, cuBLAS/cuDNN
workspaces, and for PyTorch its caching allocator's reserve; the same measure for both. If
nvidia-smi does not list the pid (containers), the peak of the GPU's memory.used minus its
value before the launch is used instead, and the line says peak_source=gpu-delta. PyTorch's
own torch.cuda.max_memory_reserved / max_memory_allocated (tensors only) are reported too.

Time to quality (--time-to-quality [F], default F = 1.50): seconds from each side's start
until its validation loss, evaluated every --ttq-every steps on the whole validation split
(evaluations included, the same protocol on both sides), is <= F: configuration Q
(--ttq-config "E H L B T dropout", default 128 512 2 64 128 0.2), Adam lr 2e-3, clip 5,
PyTorch's initialization family on both, shakespeare with --ttq-variant (default: the first
of --variants). Measured one after the other in the same run.

Prints progress, then a header (date, commit, GPU, driver, torch) and tables, and ends with
exactly one line per configuration, for the first variant of --variants (the default run):
  config=A shakespeare_tokens_per_s=... pytorch_tokens_per_s=... ratio=... shakespeare_peak_mib=... pytorch_peak_mib=...
(pytorch_tokens_per_s: the best PyTorch row; ratio = shakespeare / that; "na" where a side did not run), preceded by
one `variant config=A ...` line per variant and one `best config=A ...` line, and with
--time-to-quality one `ttq target=F shakespeare_s=... pytorch_s=... speedup=...` line.
Everything is also written to --out FILE (default bench/results/gpu-<date>-<commit>.txt).

Usage: scripts/bench_gpu.py [--out FILE] [--configs A,B] [--variants LIST] [--steps N]
         [--warmup N] [--poll-ms N] [--build-dir DIR] [--data FILE] [--skip-build]
         [--skip-torch] [--skip-ours] [--no-fp32] [--timeout S] [--dry-run]
         [--time-to-quality [F]] [--ttq-only] [--ttq-config "E H L B T P"] [--ttq-every N]
         [--ttq-variant V] [--ttq-max-steps N] [--ttq-seeds N]
  --steps 200 timed steps, --warmup 20 untimed; --poll-ms 50 (0: no memory polling);
  --timeout 300 s per process; --dry-run prints the commands instead of running them.
  --variants: comma-separated IMPL/PRECISION/GRAPH[/TENSOR_CORES] (default: DEFAULT_VARIANTS below);
  --ttq-every 200; --ttq-max-steps 20000; --ttq-seeds 1 (seeds 1..N a side; the medians are reported,
  and each seed's seconds on the ttq line).
Env: PYTHON (default python3, the one with CUDA PyTorch: it runs bench_gpu_torch.py); BENCH_COMMIT (the
commit to report where the tree has no .git, as on a lent GPU machine); SK_FORCE_CARRY etc. reach
device_build.sh. On a lent machine, for example:
  BENCH_COMMIT=<hash> bash scripts/bench_gpu.sh --out "$OUT/bench-gpu.txt"   (carry .carry)
scripts/bench_gpu.sh is the thin entry that runs this program with python3.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The default run first (every flag at its default: what the config= lines report), then every
# implementation and precision with the CUDA graph, the persistent kernel with its tensor cores
# on and off.
DEFAULT_VARIANTS = ("auto/auto/auto,cudnn/fp32/on,cudnn/tf32/on,cudnn-persist/tf32/on,persistent/fp32/on,"
                    "persistent/tf32/on/on,persistent/tf32/on/off,persistent/bf16/on/on,persistent/bf16/on/off")
CONFIGS = {"A": "128 256 2 32 100 0", "B": "256 512 4 64 128 0.2"}  # E H L B T dropout
# IMPL: any --rnn-impl word (the registry, SK_RNN_IMPLS, is the list; shakespeare-train refuses
# one it lacks, naming them), so a new implementation needs no edit here.
VARIANT_RE = re.compile(r"^([a-z][a-z0-9-]*)/"
                        r"(auto|fp32|tf32|bf16)/(auto|on|off)(/(auto|on|off))?$")
TTQ_CONFIG_RE = re.compile(r"^[1-9][0-9]* [1-9][0-9]* [1-9][0-9]* [1-9][0-9]* [1-9][0-9]* 0?\.?[0-9]+$")


def die(msg):
    print(f"bench_gpu.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, as every other refusal
        die(f"{message} (see --help)")


def matching(name, regex, what, convert=str):
    """An argparse type: the value matches regex whole, else "NAME expects WHAT, got "VALUE"."""
    def parse(s):
        if not re.fullmatch(regex, s):
            raise argparse.ArgumentTypeError(f"{name} expects {what}, got \"{s}\"")
        return convert(s)
    return parse


def posint(name):
    return matching(name, r"[1-9][0-9]*", "a positive integer", int)


def nonneg(name):
    return matching(name, r"[0-9]+", "an integer >= 0", int)


def parse_args(argv):
    p = Parser(prog="bench_gpu.py", add_help=False)
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("--out", default="")
    p.add_argument("--configs", default="A,B", type=matching("--configs", r"[AB](,[AB])*", "A, B or A,B"))
    p.add_argument("--variants", default=DEFAULT_VARIANTS)
    p.add_argument("--steps", default=200, type=posint("--steps"))
    p.add_argument("--warmup", default=20, type=nonneg("--warmup"))
    p.add_argument("--poll-ms", default=50, type=nonneg("--poll-ms"))
    p.add_argument("--timeout", default=300, type=posint("--timeout"))
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build-gpu"))
    p.add_argument("--data", default=os.path.join(ROOT, "data", "tinyshakespeare.txt"))
    p.add_argument("--skip-build", action="store_true")
    p.add_argument("--skip-torch", action="store_true")
    p.add_argument("--skip-ours", action="store_true")
    p.add_argument("--no-fp32", action="store_true")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--time-to-quality", nargs="?", const="1.50", default=None,
                   type=matching("--time-to-quality", r"[0-9]+(\.[0-9]+)?", "a validation loss such as 1.50"))
    p.add_argument("--ttq-only", action="store_true")
    p.add_argument("--ttq-every", default=200, type=posint("--ttq-every"))
    p.add_argument("--ttq-max-steps", default=20000, type=posint("--ttq-max-steps"))
    p.add_argument("--ttq-variant", default="")
    p.add_argument("--ttq-seeds", default=1, type=posint("--ttq-seeds"))
    p.add_argument("--ttq-config", default="128 512 2 64 128 0.2",
                   type=matching("--ttq-config", TTQ_CONFIG_RE.pattern[1:-1], "\"E H L B T dropout\""))
    a = p.parse_args(argv)
    a.time_to_quality = a.time_to_quality or ""
    if a.help:
        print(__doc__)
        sys.exit(0)
    a.variants = a.variants.split(",")
    if not a.ttq_variant:
        a.ttq_variant = a.variants[0]
    for v in a.variants + [a.ttq_variant]:
        if not VARIANT_RE.match(v):
            die("a variant is IMPL/PRECISION/GRAPH[/TENSOR_CORES] (IMPL an --rnn-impl word of shakespeare-train "
                "--help; PRECISION auto, fp32, tf32 or bf16; GRAPH and TENSOR_CORES auto, on or off), got \"%s\"" % v)
    if a.ttq_only and not a.time_to_quality:
        a.time_to_quality = "1.50"
    a.configs = a.configs.split(",")
    a.build_dir = os.path.abspath(a.build_dir)
    if not os.access(a.data, os.R_OK):
        die(f"cannot read {a.data}")
    return a


class Report:
    """Prints to stdout and, unless a dry run, to the --out file."""

    def __init__(self, path):
        self.f = open(path, "w") if path else None

    def __call__(self, *parts):
        line = " ".join(str(x) for x in parts)
        print(line, flush=True)
        if self.f:
            self.f.write(line + "\n")
            self.f.flush()


def fmt1(x):
    return "%.1f" % x


def ratio(a, b):
    return "%.3f" % (float(a) / float(b)) if a not in (None, "", "na") and b not in (None, "", "na") else "na"


def median1(values):
    return fmt1(statistics.median(values)) if values else ""


def field(name, text):
    """The value of the last NAME=value in text, or ''."""
    found = re.findall(r"(?:^|\s)" + re.escape(name) + r"=(\S*)", text)
    return found[-1] if found else ""


def smi(*args):
    try:
        return subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def gpu_used():
    digits = re.sub(r"[^0-9]", "", (smi("-i", "0", "--query-gpu=memory.used", "--format=csv,noheader,nounits")
                                    .splitlines() or [""])[0])
    return int(digits) if digits else 0


class Run:
    """One polled process: rc, pid, log text and the peak of its device memory."""

    def __init__(self, cmd, log_path, args, env=None):
        self.base = gpu_used()
        apps, gpu = [], []
        start = time.monotonic()
        with open(log_path, "w") as log:
            proc = spawn(cmd, log, env)
            while proc.poll() is None:
                if args.poll_ms > 0:
                    apps += smi("--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits").splitlines()
                    gpu += smi("-i", "0", "--query-gpu=memory.used", "--format=csv,noheader,nounits").splitlines()
                if time.monotonic() - start >= args.timeout:
                    print(f"bench_gpu.py: {os.path.basename(log_path)} ran past --timeout {args.timeout} s; "
                          "stopping it", file=sys.stderr)
                    stop(proc)
                    break
                time.sleep((args.poll_ms if args.poll_ms > 0 else 200) / 1000)
            self.rc = proc.wait()
            CHILDREN.discard(proc)
        self.pid = proc.pid
        with open(log_path, errors="replace") as f:
            self.log = f.read()
        mine = [int(float(b)) for a, _, b in (s.partition(",") for s in apps)
                if a.strip() == str(self.pid) and b.strip()]
        if mine and max(mine) > 0:
            self.peak, self.source, self.samples = str(max(mine)), "pid", len(mine)
        elif gpu:
            vals = [int(float(x)) for x in gpu if x.strip()]
            self.peak, self.source, self.samples = str(max(vals) - self.base), "gpu-delta", len(gpu)
        else:
            self.peak, self.source, self.samples = "na", "none", 0


# Processes started and not reaped yet: a stopped benchmark (device_all.sh's time limit sends
# SIGTERM) stops them too, so that no trainer is left holding the GPU for the next step.
CHILDREN = set()


def spawn(cmd, log, env):
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    CHILDREN.add(proc)
    return proc


def on_sigterm(signum, _frame):
    for proc in list(CHILDREN):
        proc.kill()
    sys.exit(128 + signum)


def stop(proc):
    CHILDREN.discard(proc)
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def variant_args(v):
    f = v.split("/")
    out = ["--rnn-impl", f[0], "--precision", f[1], "--cuda-graph", f[2]]
    return out + (["--tensor-cores", f[3]] if len(f) > 3 else [])


def steady_median(metrics, warmup):
    """The median tokens_per_s of the steps after warmup in a per-step metrics log, or ''."""
    vals = []
    try:
        with open(metrics) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if "tokens_per_s" in r and r.get("iter", 0) > warmup:
                    vals.append(float(r["tokens_per_s"]))
    except OSError:
        return ""
    return median1(vals)


class Bench:
    def __init__(self, a, say, tmp):
        self.a, self.say, self.tmp = a, say, tmp
        self.train = os.path.join(a.build_dir, "shakespeare-train")
        self.python = os.environ.get("PYTHON", "python3")
        self.failed = False
        self.ours = {}   # (config, variant) -> dict(status, why, tps, loss, peak, src)
        self.torch = {}  # (config, "tf32"|"fp32"|"graph") -> dict(tps, peak, src, res, alloc, loss) or failed
        self.torch_version, self.torch_cudnn = "", ""
        self.ttq = {}
        self.env = None

    def show(self, cmd):
        self.say("+ " + " ".join(shlex.quote(c) for c in cmd))

    def indent(self, text, n, skip_epoch=False):
        lines = [x for x in text.splitlines() if not (skip_epoch and x.startswith("epoch "))]
        for x in lines[-n:]:
            self.say("  " + x)

    def run_ours(self, c, v):
        a = self.a
        E, H, L, B, T, P = CONFIGS[c].split()
        out_dir = os.path.join(self.tmp, f"run-{c}-{v.replace('/', '-')}")
        cmd = [self.train, "--data", a.data, "--embed-size", E, "--hidden-size", H, "--num-layers", L,
               "--batch-size", B, "--seq-length", T, "--dropout", P, "--lr-schedule", "constant",
               "--max-iters", str(a.warmup + a.steps),
               "--eval-every", "0", "--checkpoint-every", "0", "--log-every", "1", "--out-dir", out_dir,
               "--device", "cuda"] + variant_args(v)
        self.say(f"== config {c}, {v}: shakespeare-train, {a.warmup + a.steps} steps")
        if a.dry_run:
            self.show(["env", "LD_LIBRARY_PATH=<after: source env.sh>"] + cmd)
            return
        r = Run(cmd, os.path.join(self.tmp, f"ours-{c}-{v.replace('/', '-')}.log"), a, self.env)
        for x in re.findall(r"^note: --rnn-impl auto: .*$", r.log, re.M):  # auto's choice and its times
            self.say("  " + x)
        self.indent(r.log, 5, skip_epoch=True)
        o = {}
        if r.rc == 2 and re.search(r"^error:", r.log, re.M):
            o["status"] = "refused"
            o["why"] = re.search(r"^error:.*$", r.log, re.M).group(0)[:160]
            self.say(f"  refused: {o['why']}")
        elif r.rc != 0 or field("backend", r.log) != "cuda":
            o["status"] = "failed"
            self.say(f"  FAILED: exit status {r.rc}, backend={field('backend', r.log) or 'none'}")
            self.failed = True
        else:
            o["status"] = "ok"
            o["tps"] = steady_median(os.path.join(out_dir, "metrics.jsonl"), a.warmup) or \
                field("median_tokens_per_s", r.log)
            o["loss"] = field("final_train_loss", r.log)
            o["peak"], o["src"] = r.peak, r.source
            self.say(f"  median_tokens_per_s={o['tps']} peak_mib={r.peak} peak_source={r.source} samples={r.samples}")
        self.ours[(c, v)] = o

    def run_torch(self, c, way):
        a = self.a
        tf, graph = ("off", "off") if way == "fp32" else ("on", "on" if way == "graph" else "off")
        cmd = [self.python, os.path.join(ROOT, "scripts", "bench_gpu_torch.py"), "--data", a.data, "--config", c,
               "--warmup", str(a.warmup), "--steps", str(a.steps), "--tf32", tf, "--graph", graph]
        self.say(f"== config {c}: pytorch (tf32 {tf}, graph {graph}), {a.warmup} + {a.steps} steps")
        if a.dry_run:
            self.show(cmd)
            return
        r = Run(cmd, os.path.join(self.tmp, f"torch-{c}-{tf}-{graph}.log"), a, dict(os.environ, PYTHONUNBUFFERED="1"))
        self.indent(r.log, 4)
        if way == "graph" and r.rc == 0 and f"config={c} graph=failed" in r.log:
            why = re.search(r"reason=.*", r.log).group(0)[:160] if "reason=" in r.log else "reason=?"
            self.torch[(c, way)] = {"failed": why}
            self.say(f"  the capture failed: {why}")
            return
        if r.rc != 0 or f"config={c} median_tokens_per_s=" not in r.log:
            self.say(f"  FAILED: exit status {r.rc}")
            self.failed = True
            return
        self.torch_version = field("torch_version", r.log)
        self.torch_cudnn = field("cudnn", r.log)
        self.say(f"  nvidia-smi peak_mib={r.peak} peak_source={r.source} samples={r.samples}")
        self.torch[(c, way)] = {"tps": field("median_tokens_per_s", r.log), "res": field("peak_mib", r.log),
                                "alloc": field("max_memory_allocated_mib", r.log), "peak": r.peak, "src": r.source,
                                "loss": field("last_loss", r.log)}

    def tps(self, c, way):
        return self.torch.get((c, way), {}).get("tps", "")

    def shown(self, c, way):
        t = self.torch.get((c, way), {})
        return "failed" if "failed" in t else t.get("tps", "na") or "na"

    def pt_best(self, c):
        rows = [x for x in (self.tps(c, w) for w in ("tf32", "fp32", "graph")) if re.fullmatch(r"[0-9.]+", x)]
        return max(rows, key=float) if rows else ""

    def ttq_once(self, seed):
        a = self.a
        E, H, L, B, T, P = a.ttq_config.split()
        out_dir = os.path.join(self.tmp, "run-ttq")
        cmd = [self.train, "--data", a.data, "--embed-size", E, "--hidden-size", H, "--num-layers", L,
               "--batch-size", B, "--seq-length", T, "--dropout", P, "--lr-schedule", "constant",
               "--max-epochs", "0", "--max-iters", str(a.ttq_max_steps), "--eval-every", str(a.ttq_every), "--checkpoint-every", "0",
               "--log-every", str(a.ttq_every), "--out-dir", out_dir, "--device", "cuda", "--seed", str(seed)]
        cmd += variant_args(a.ttq_variant)
        tcmd = [self.python, os.path.join(ROOT, "scripts", "bench_gpu_torch.py"), "--data", a.data, "--seed",
                str(seed), "--ttq-config", a.ttq_config, "--target-val", a.time_to_quality, "--eval-every",
                str(a.ttq_every), "--max-steps", str(a.ttq_max_steps), "--tf32", "on"]
        self.say(f"== time to quality, seed {seed}: val_loss <= {a.time_to_quality}, E={E} H={H} L={L} B={B} T={T} "
                 f"dropout={P}, evaluated every {a.ttq_every} steps")
        if a.dry_run:
            self.show(cmd)
            self.show(tcmd)
            return
        target = float(a.time_to_quality)
        if not a.skip_ours:
            shutil.rmtree(out_dir, ignore_errors=True)
            log_path = os.path.join(self.tmp, "ttq-ours.log")
            hit = None
            t0 = time.monotonic()
            with open(log_path, "w") as log:
                proc = spawn(cmd, log, self.env)
                while hit is None and proc.poll() is None and time.monotonic() - t0 < a.timeout:
                    with open(log_path, errors="replace") as f:
                        for line in f:
                            w = line.split()
                            if len(w) >= 4 and w[0] == "iter" and w[2] == "val_loss" and float(w[3]) <= target:
                                hit = (w[1], w[3])
                                break
                    if hit is None:
                        time.sleep(0.1)
                t1 = time.monotonic()
                stop(proc)
            with open(log_path, errors="replace") as f:
                text = f.read()
            for line in re.findall(r"^iter [0-9]+ val_loss.*$", text, re.M):
                self.say("  shakespeare " + line)
            self.ttq_result("ours", f"shakespeare ({a.ttq_variant})", "shakespeare-train",
                            fmt1(t1 - t0) if hit else None, hit, text)
        if not a.skip_torch:
            try:
                r = subprocess.run(tcmd, capture_output=True, text=True, timeout=a.timeout,
                                   env=dict(os.environ, PYTHONUNBUFFERED="1"))
                ok = r.returncode == 0
                err = r.stderr
            except subprocess.TimeoutExpired as e:
                ok, err = False, e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
            secs = field("time_to_target_s", r.stdout) if ok else ""
            if secs:
                self.indent(err, 20)
                self.torch_version = field("torch_version", r.stdout) or self.torch_version
            self.ttq_result("torch", "pytorch", "PyTorch", secs or None,
                            (field("steps", r.stdout), field("val_loss", r.stdout)) if secs else None, err)

    def ttq_result(self, side, label, program, seconds, at, log_text):
        """Records one seed's time to quality of a side (seconds None: it missed the target)."""
        a, q = self.a, self.ttq
        if seconds is None:
            self.indent(log_text, 5)
            self.say(f"  FAILED: {program} did not reach {a.time_to_quality} within {a.timeout} s / "
                     f"{a.ttq_max_steps} steps")
            self.failed = True
            return
        q[side + "_at"] = at
        q.setdefault(side + "_all", []).append(seconds)
        self.say(f"  {label}: {seconds} s (step, val_loss: {' '.join(at)})")

    def time_to_quality(self):
        for seed in range(1, self.a.ttq_seeds + 1):
            self.ttq_once(seed)
        if self.a.dry_run:
            return
        q = self.ttq
        ours, torch = q.get("ours_all", []), q.get("torch_all", [])
        q["ours"] = median1([float(x) for x in ours])
        q["torch"] = median1([float(x) for x in torch])
        self.say(f"  medians over {self.a.ttq_seeds} seed(s): shakespeare {q['ours'] or 'na'} s "
                 f"({' '.join(ours) or 'none'}), pytorch {q['torch'] or 'na'} s ({' '.join(torch) or 'none'})")

    def summary(self, commit, build_out):
        a, say = self.a, self.say
        gpu = (smi("-i", "0", "--query-gpu=name,memory.total", "--format=csv,noheader").splitlines() or ["unknown"])[0]
        driver = (smi("-i", "0", "--query-gpu=driver_version", "--format=csv,noheader").splitlines() or ["unknown"])[0]
        if not self.torch_version:
            r = subprocess.run([self.python, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                               text=True)
            self.torch_version = r.stdout.strip() if r.returncode == 0 else "unknown"
        cpu = next((x.split(":", 1)[1].strip() for x in open("/proc/cpuinfo") if x.startswith("model name")), "?")
        cudnn = next((re.sub(r"\s+", " ", x.replace("device_build:", "")).strip() for x in build_out.splitlines()
                      if "device_build: cuDNN" in x), "cuDNN ?")
        first = a.variants[0]
        say()
        say("== GPU training benchmark ==")
        say(f"date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}  commit: {commit}")
        say(f"gpu: {gpu}  driver: {driver}  cpu: {cpu}, {os.cpu_count()} cores")
        say(f"torch: {self.torch_version} (cuDNN {self.torch_cudnn or '?'})  shakespeare: {cudnn}")
        say(f"steps: {a.warmup} warm-up + {a.steps} timed; tokens/s = B*T / median step; "
            f"data: {os.path.basename(a.data)}")
        say("variants: IMPL/PRECISION/GRAPH[/TC] = --rnn-impl / --precision / --cuda-graph / --tensor-cores; pytorch "
            "TF32 allowed (pt_fp32: TF32")
        say("          forbidden; pt_graph: TF32 allowed, the step replayed as one CUDA graph); ratio = sk / pt_best")
        say(f"memory: *_peak_mib = peak of nvidia-smi's used_memory for the process (polled every {a.poll_ms} ms: "
            "CUDA context,")
        say("        library workspaces and caching-allocator reserve included); pt_reserved/pt_alloc = "
            "torch.cuda.max_memory_reserved/allocated")
        row = "%-6s %-22s %-26s %11s %11s %11s %11s %11s %7s %9s %9s %11s %9s"
        if not a.ttq_only:
            say(row % ("config", "E/H/L/B/T/dropout", "variant", "sk_tok/s", "pt_tok/s", "pt_fp32", "pt_graph",
                       "pt_best", "ratio", "sk_peak", "pt_peak", "pt_reserved", "pt_alloc"))
            for c in a.configs:
                pt = self.torch.get((c, "tf32"), {})
                for v in a.variants:
                    o = self.ours.get((c, v), {})
                    say(row % (c, CONFIGS[c].replace(" ", "/"), v, o.get("tps") or o.get("status", "na"),
                               self.shown(c, "tf32"), self.shown(c, "fp32"), self.shown(c, "graph"),
                               self.pt_best(c) or "na", ratio(o.get("tps"), self.pt_best(c)), o.get("peak", "na"),
                               pt.get("peak", "na"), pt.get("res", "na") or "na", pt.get("alloc", "na") or "na"))
            for c in a.configs:
                for v in a.variants:
                    o = self.ours.get((c, v), {})
                    if o.get("status") == "refused":
                        say(f"note: config {c} {v} refused: {o['why']}")
                if "failed" in self.torch.get((c, "graph"), {}):
                    say(f"note: config {c} pytorch's CUDA graph capture failed: {self.torch[(c, 'graph')]['failed']}")
                o, pt = self.ours.get((c, first), {}), self.torch.get((c, "tf32"), {})
                say(f"note: config {c} training loss at the last step: shakespeare ({first}) {o.get('loss') or 'na'}, "
                    f"pytorch {pt.get('loss') or 'na'} (a sanity check only: the initializations differ)")
                if o.get("src", "pid") != "pid" or pt.get("src", "pid") != "pid":
                    say(f"note: config {c} peak_source shakespeare={o.get('src', 'na')} pytorch={pt.get('src', 'na')}")
        q = self.ttq
        if a.time_to_quality:
            say(f"time to quality: seconds from start until val_loss <= {a.time_to_quality} (evaluated every "
                f"{a.ttq_every} steps, evaluations included), E/H/L/B/T/dropout {a.ttq_config.replace(' ', '/')}, "
                f"Adam lr 2e-3, clip 5; shakespeare {a.ttq_variant}, pytorch TF32 allowed")
            say("%-24s %10s %10s %10s" % ("implementation", "step", "val_loss", "seconds"))
            if q.get("ours"):
                say("%-24s %10s %10s %10s" % ("shakespeare", *q["ours_at"], q["ours"]))
            if q.get("torch"):
                say("%-24s %10s %10s %10s" % (f"pytorch {self.torch_version}", *q["torch_at"], q["torch"]))
        if self.failed:
            say("note: some runs failed (see above)")
        if not a.ttq_only:
            for c in a.configs:
                best = None
                for v in a.variants:
                    o = self.ours.get((c, v), {})
                    say(f"variant config={c} variant={v} status={o.get('status', 'na')} tokens_per_s="
                        f"{o.get('tps') or 'na'} ratio={ratio(o.get('tps'), self.pt_best(c))} "
                        f"peak_mib={o.get('peak', 'na')}")
                    if o.get("tps") and (best is None or float(o["tps"]) > float(self.ours[(c, best)]["tps"])):
                        best = v
                b = self.ours.get((c, best), {}) if best else {}
                say(f"best config={c} variant={best or 'na'} tokens_per_s={b.get('tps', '')} "
                    f"ratio={ratio(b.get('tps'), self.pt_best(c))} peak_mib={b.get('peak', 'na')} "
                    f"pytorch_peak_mib={self.torch.get((c, 'tf32'), {}).get('peak', 'na')}")
        if a.time_to_quality:
            say(f"ttq target={a.time_to_quality} shakespeare_s={q.get('ours') or 'na'} "
                f"pytorch_s={q.get('torch') or 'na'} speedup={ratio(q.get('torch'), q.get('ours'))} "
                f"seeds={a.ttq_seeds} "
                f"shakespeare_each={','.join(q.get('ours_all', [])) or 'na'} "
                f"pytorch_each={','.join(q.get('torch_all', [])) or 'na'}")
        if not a.ttq_only:
            for c in a.configs:
                o = self.ours.get((c, first), {})
                say(f"config={c} shakespeare_tokens_per_s={o.get('tps') or 'na'} "
                    f"pytorch_tokens_per_s={self.pt_best(c) or 'na'} ratio={ratio(o.get('tps'), self.pt_best(c))} "
                    f"shakespeare_peak_mib={o.get('peak', 'na')} "
                    f"pytorch_peak_mib={self.torch.get((c, 'tf32'), {}).get('peak', 'na')}")


def commit_of():
    commit = os.environ.get("BENCH_COMMIT", "")
    if commit:
        return commit
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True).stdout.strip()
    return commit + "-dirty" if dirty else commit


def main(argv):
    signal.signal(signal.SIGTERM, on_sigterm)
    a = parse_args(argv)
    commit = commit_of()
    stamp = time.strftime("%Y%m%d-%H%M", time.gmtime())
    out = a.out or os.path.join(ROOT, "bench", "results", f"gpu-{stamp}-{commit}.txt")
    if not a.dry_run and os.path.dirname(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)
    say = Report(None if a.dry_run else out)
    with tempfile.TemporaryDirectory(prefix="sk-bench-gpu-") as tmp:
        b = Bench(a, say, tmp)
        say(f"bench_gpu.py: configs {','.join(a.configs)}, variants {','.join(a.variants)}, {a.warmup} warm-up + "
            f"{a.steps} timed steps; log: {out}")
        build_out = ""
        if not a.skip_ours:
            build = ["bash", os.path.join(ROOT, "scripts", "device_build.sh"), "--build-dir", a.build_dir, "--target",
                     "shakespeare-train", "--quiet"]
            if not a.skip_build:
                if a.dry_run:
                    b.show(build)
                else:
                    r = subprocess.run(build, capture_output=True, text=True)
                    build_out = r.stdout
                    for line in (r.stdout + r.stderr).splitlines():
                        say(line)
                    if r.returncode != 0:
                        die("scripts/device_build.sh failed")
            if not a.dry_run:
                # env.sh (device_build.sh's) names the libraries' folders; a build without one (the
                # emulated device's) needs none.
                env_sh = os.path.join(a.build_dir, "env.sh")
                if not os.access(b.train, os.X_OK):
                    die(f"{b.train} missing (run without --skip-build)")
                if os.path.isfile(env_sh):
                    ld = subprocess.run(["bash", "-c", 'source "$1" && printf %s "$LD_LIBRARY_PATH"', "_", env_sh],
                                        capture_output=True, text=True).stdout
                    b.env = dict(os.environ, LD_LIBRARY_PATH=ld)
        if not a.dry_run:
            if not shutil.which("nvidia-smi"):
                die("nvidia-smi not found")
            if a.poll_ms > 0 and subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                                                 "--format=csv,noheader,nounits"], capture_output=True).returncode:
                die("nvidia-smi --query-compute-apps failed (use --poll-ms 0 to run without memory polling)")
        if not a.ttq_only:
            for c in a.configs:
                if not a.skip_ours:
                    for v in a.variants:
                        b.run_ours(c, v)
                if not a.skip_torch:
                    for way in ("tf32",) + (() if a.no_fp32 else ("fp32",)) + ("graph",):
                        b.run_torch(c, way)
        if a.time_to_quality:
            b.time_to_quality()
        if a.dry_run:
            say("(dry run: nothing was run; the summary would follow)")
            return 0
        b.summary(commit, build_out)
        return 1 if b.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
