#!/usr/bin/env bash
# test_find_modules.sh: cmake/FindCUDNN.cmake and cmake/FindNCCL.cmake, configured in a probe
# project against the CUDA toolkit's cuDNN and NCCL ($SK_CUDA_DIR, default /usr/local/cuda;
# skipped without them) and against a pip-wheel layout made from the same files:
# site-packages/nvidia/{cudnn,nccl}/{include,lib} holding only the versioned libraries
# (libcudnn.so.9, libnccl.so.2), as nvidia-cudnn-cu13 and nvidia-nccl-cu13 install them.
# Checks: the toolkit's found by default, with the version the headers state (read here with
# awk); the wheel found through the Python hint (SK_NVIDIA_WHEEL_PYTHON) with *_WHEEL_ONLY,
# and through the prefix hint (CUDNN_ROOT, NCCL_ROOT = the wheel's folder) ahead of the
# toolkit's; nothing found when the Python has no wheel and the others are ruled out.
set -euo pipefail
src=${SK_SOURCE_DIR:?SK_SOURCE_DIR: the source tree (set by ctest)}
cuda=${SK_CUDA_DIR:-/usr/local/cuda}
libdir=""
for d in "$cuda/lib64" "$cuda/lib"; do [ -e "$d/libcudnn.so.9" ] && [ -e "$d/libnccl.so.2" ] && libdir=$d; done
if [ ! -f "$cuda/include/cudnn_version.h" ] || [ ! -f "$cuda/include/nccl.h" ] || [ -z "$libdir" ]; then
  echo "skipped: no cuDNN 9 and NCCL 2 in $cuda (set SK_CUDA_DIR)"; exit 77
fi
command -v python3 >/dev/null || { echo "skipped: no python3 (the wheel search runs it)"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The wheel layout, by links to the toolkit's files.
site="$tmp/site-packages"
mkdir -p "$site/nvidia/cudnn/include" "$site/nvidia/cudnn/lib" "$site/nvidia/nccl/include" "$site/nvidia/nccl/lib"
ln -s "$cuda"/include/cudnn*.h "$site/nvidia/cudnn/include/"
ln -s "$libdir"/libcudnn*.so.9 "$site/nvidia/cudnn/lib/"
ln -s "$cuda/include/nccl.h" "$site/nvidia/nccl/include/"
ln -s "$libdir/libnccl.so.2" "$site/nvidia/nccl/lib/"
# Pythons with and without the wheels on their path.
printf '#!/bin/sh\nPYTHONPATH=%s exec python3 "$@"\n' "$site" >"$tmp/py-wheel"
printf '#!/bin/sh\nPYTHONPATH= exec python3 "$@"\n' >"$tmp/py-bare"
chmod +x "$tmp/py-wheel" "$tmp/py-bare"

mkdir -p "$tmp/probe"
cat >"$tmp/probe/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(probe LANGUAGES C)
list(APPEND CMAKE_MODULE_PATH "$src/cmake")
find_package(CUDNN)
find_package(NCCL)
message(STATUS "probe cudnn=\${CUDNN_FOUND}|\${CUDNN_VERSION}|\${CUDNN_LIBRARY}|\${CUDNN_INCLUDE_DIR}")
message(STATUS "probe nccl=\${NCCL_FOUND}|\${NCCL_VERSION}|\${NCCL_LIBRARY}|\${NCCL_INCLUDE_DIR}")
CMAKE
n=0
# probe ARGS...: configures a fresh build of the probe; sets $cudnn and $nccl to its report lines.
probe() {
  n=$((n + 1))
  cmake -S "$tmp/probe" -B "$tmp/b$n" "$@" >"$tmp/log$n" 2>&1 || { cat "$tmp/log$n" >&2; fail "configure $n failed"; }
  cudnn=$(sed -n 's/.*probe cudnn=//p' "$tmp/log$n")
  nccl=$(sed -n 's/.*probe nccl=//p' "$tmp/log$n")
  echo "probe $n ($*): cudnn $cudnn; nccl $nccl"
}
# version FILE MAJOR MINOR PATCH: "A.B.C" from FILE's #define lines.
version() {
  awk -v a="$2" -v b="$3" -v c="$4" '$1 == "#define" { v[$2] = $3 } END { print v[a] "." v[b] "." v[c] }' "$1"
}
cudnn_v=$(version "$cuda/include/cudnn_version.h" CUDNN_MAJOR CUDNN_MINOR CUDNN_PATCHLEVEL)
nccl_v=$(version "$cuda/include/nccl.h" NCCL_MAJOR NCCL_MINOR NCCL_PATCH)
real() { readlink -f "$1"; }

# 1. The toolkit's, by default (the wheel is not on this Python's path).
probe -DSK_NVIDIA_WHEEL_PYTHON="$tmp/py-bare" -DCUDAToolkit_ROOT="$cuda"
[ "${cudnn%%|*}" = TRUE ] || fail "cuDNN not found in $cuda"
IFS='|' read -r _ v lib inc <<<"$cudnn"
[ "$v" = "$cudnn_v" ] || fail "cuDNN version $v, the header says $cudnn_v"
[ "$(real "$inc")" = "$(real "$cuda/include")" ] || fail "cuDNN headers from $inc, not $cuda/include"
IFS='|' read -r f v lib inc <<<"$nccl"
[ "$f" = TRUE ] && [ "$v" = "$nccl_v" ] || fail "NCCL: found=$f version $v, the header says $nccl_v"
[ "$(real "$inc")" = "$(real "$cuda/include")" ] || fail "NCCL header from $inc, not $cuda/include"

# 2. The wheel alone, through the Python hint: the versioned libraries in its lib/.
probe -DSK_NVIDIA_WHEEL_PYTHON="$tmp/py-wheel" -DCUDNN_WHEEL_ONLY=ON -DNCCL_WHEEL_ONLY=ON
IFS='|' read -r f v lib inc <<<"$cudnn"
[ "$f" = TRUE ] && [ "$v" = "$cudnn_v" ] || fail "wheel cuDNN: found=$f version $v (header: $cudnn_v)"
[ "$lib" = "$site/nvidia/cudnn/lib/libcudnn.so.9" ] || fail "wheel cuDNN library $lib"
[ "$inc" = "$site/nvidia/cudnn/include" ] || fail "wheel cuDNN headers $inc"
IFS='|' read -r f v lib inc <<<"$nccl"
[ "$f" = TRUE ] && [ "$v" = "$nccl_v" ] || fail "wheel NCCL: found=$f version $v (header: $nccl_v)"
[ "$lib" = "$site/nvidia/nccl/lib/libnccl.so.2" ] || fail "wheel NCCL library $lib"

# 3. The prefix hints (the wheel's folders) come before the toolkit's.
probe -DSK_NVIDIA_WHEEL_PYTHON="$tmp/py-bare" -DCUDNN_ROOT="$site/nvidia/cudnn" -DNCCL_ROOT="$site/nvidia/nccl" \
      -DCUDAToolkit_ROOT="$cuda"
[ "$(cut -d'|' -f3 <<<"$cudnn")" = "$site/nvidia/cudnn/lib/libcudnn.so.9" ] ||
  fail "CUDNN_ROOT not searched first: $cudnn"
[ "$(cut -d'|' -f3 <<<"$nccl")" = "$site/nvidia/nccl/lib/libnccl.so.2" ] || fail "NCCL_ROOT not searched first: $nccl"

# 4. Wheel only, and this Python has none: not found (the callers then say so).
probe -DSK_NVIDIA_WHEEL_PYTHON="$tmp/py-bare" -DCUDNN_WHEEL_ONLY=ON -DNCCL_WHEEL_ONLY=ON
[ "${cudnn%%|*}" = FALSE ] && [ "${nccl%%|*}" = FALSE ] || fail "found without a wheel: $cudnn; $nccl"
echo "test_find_modules: ok"
