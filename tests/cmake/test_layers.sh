#!/usr/bin/env bash
# test_layers.sh: the folders of src/ stay layered (scripts/check_layers.py: symbols of the
# core library and private includes point only down the layers; file names unique; nothing
# in src/ or kernels/ includes tests/), and the check can fail: with the layer order turned
# upside down it must name a breach.
set -euo pipefail
src=${SK_SOURCE_DIR:?SK_SOURCE_DIR: the source tree (set by ctest)}
build=${SK_BUILD_DIR:?SK_BUILD_DIR: the build tree (set by ctest)}
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }
command -v nm >/dev/null || { echo "skipped: no nm (binutils)"; exit 77; }
archive="$build/libshakespeare_core.a"
[ -f "$archive" ] || { echo "FAIL: no $archive" >&2; exit 1; }
python3 "$src/scripts/check_layers.py" "$src" "$archive"
upside_down=cli,train,sample,registry,distributed,cuda,cpu,backend,checkpoint,model,data,io,core
if out=$(python3 "$src/scripts/check_layers.py" "$src" "$archive" --layers "$upside_down" 2>&1); then
  echo "FAIL: the layer check passed with the layers upside down" >&2; exit 1
fi
grep -q "may not use" <<<"$out" || { echo "FAIL: the upside-down check named no breach: $out" >&2; exit 1; }
echo "upside down, it names $(grep -c 'may not use' <<<"$out") breaches"
