#!/usr/bin/env python3
"""check_layers.py: the architecture of src/ as a check.

The folders of src/ are layers, lowest first (LAYERS). A folder may use only itself and the
folders below it, both ways a C file can use another folder:
  - symbols: what an object file of the core library leaves undefined and another folder's
    object defines (nm over the archive; object names are source basenames, unique below);
  - private headers: #include "folder/x.h" of a header under src/.
Also: every source file's name is unique across src/, kernels/, include/ and tests/ (so that a
name says which file it is), and nothing in src/ or kernels/ includes a file of tests/.

usage: check_layers.py SOURCE_DIR CORE_ARCHIVE [--layers a,b,c]   (exit 1 naming each breach)
"""
import os
import re
import subprocess
import sys

LAYERS = [
    "core", "io", "data", "model", "checkpoint", "backend", "cpu", "cuda", "distributed", "registry", "sample", "train",
    "cli",
]
CODE = (".c", ".h", ".cu", ".cuh", ".cpp")


def sources(root, tops):
    for top in tops:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [x for x in dirs if x != "data"]  # tests/data: fixtures, not code
            for f in files:
                if f.endswith(CODE):
                    yield os.path.relpath(os.path.join(d, f), root)


def folder_of(rel):  # "src/train/trainer.c" -> "train"
    parts = rel.split("/")
    return parts[1] if parts[0] == "src" and len(parts) > 2 else None


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    root, archive = argv[1], argv[2]
    layers = argv[4].split(",") if len(argv) > 4 and argv[3] == "--layers" else LAYERS
    rank = {name: i for i, name in enumerate(layers)}
    breaches = []

    files = list(sources(root, ["src", "kernels", "include", "tests"]))
    seen = {}
    for rel in files:
        seen.setdefault(os.path.basename(rel), []).append(rel)
    breaches += [f"file name {n} is not unique: {', '.join(p)}" for n, p in sorted(seen.items()) if len(p) > 1]
    for rel in files:
        f = folder_of(rel)
        if f is not None and f not in rank:
            breaches.append(f"{rel}: folder src/{f} is not in the layer list")

    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for rel in files:
        if not rel.startswith(("src/", "kernels/")):
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                m = include.match(line)
                if not m:
                    continue
                target = m.group(1)
                if "tests/" in target or target.startswith("emu/"):
                    breaches.append(f"{rel}:{n} includes {target}, a file of tests/")
                src_folder, dst = folder_of(rel), target.split("/")[0]
                if src_folder in rank and "/" in target and dst in rank and rank[dst] > rank[src_folder]:
                    breaches.append(f"{rel}:{n} includes {target}: src/{src_folder} may not use src/{dst} above it")

    by_base = {os.path.basename(rel): folder_of(rel) for rel in files if folder_of(rel)}
    nm = subprocess.run(["nm", "-A", archive], capture_output=True, text=True)
    if nm.returncode != 0:
        print(f"nm {archive} failed: {nm.stderr.strip()}", file=sys.stderr)
        return 2
    defined, undefined = {}, []
    for line in nm.stdout.splitlines():
        head, _, rest = line.rpartition(": ") if ": " in line else ("", "", line)
        obj = head.split(":")[-1]
        base = obj[:-2] if obj.endswith(".o") else obj  # "trainer.c.o" -> "trainer.c"
        folder = by_base.get(base)
        p = rest.split()
        if folder is None or not p:
            continue
        if len(p) == 3 and p[1] in "TDBR":
            defined[p[2]] = (folder, base)
        elif len(p) == 2 and p[0] == "U":
            undefined.append((folder, base, p[1]))
    arrows = set()
    for folder, base, sym in undefined:
        if sym in defined and defined[sym][0] != folder:
            dst, dbase = defined[sym]
            if folder in rank and dst in rank and rank[dst] > rank[folder]:
                arrows.add(f"{base} (src/{folder}) uses {sym} of {dbase} (src/{dst}), a layer above it")
    breaches += sorted(arrows)

    for b in breaches:
        print(f"layer check: {b}", file=sys.stderr)
    if not breaches:
        print(f"layers hold: {' < '.join(layers)}; {len(files)} file names unique; no include of tests/")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
