#!/usr/bin/env bash
# device_build.sh: configures and builds shakespeare with the CUDA backend on a GPU machine
# whose cuDNN and OpenBLAS may come from unusual places. Run from anywhere; builds into
# build-gpu/ of the repository (or --build-dir).
#
# Finds, and prints one line per finding:
#   nvcc      on PATH, else /usr/local/cuda/bin/nvcc (then exported as CUDACXX)
#   cuBLAS    beside nvcc's toolkit (CMake's CUDA::cublas)
#   cuDNN     CMake's find_package(CUDNN) (cmake/FindCUDNN.cmake): $CUDNN_ROOT if set, else the
#             toolkit's folder, else the system's, else python3's pip wheel nvidia-cudnn-cu13/cu12
#             (site-packages/nvidia/cudnn/{include,lib}, lib/libcudnn.so.9 only); this script
#             passes the hints (-DCUDNN_ROOT, -DSK_NVIDIA_WHEEL_PYTHON) and prints what CMake found.
#   NCCL      (optional) likewise cmake/FindNCCL.cmake: $NCCL_ROOT, the toolkit's, the system's,
#             else python3's pip wheel nvidia-nccl-cu* (site-packages/nvidia/nccl); if the CUDA
#             module then does not load, it is built again without (-DSHAKESPEARE_NCCL=OFF)
#   OpenBLAS  the system's (cblas.h + libopenblas.so in the usual Debian/Ubuntu places); else
#             .carry/root/usr (scripts/device_prep.sh, run on a machine with apt, makes it;
#             .carry/debs alone is unpacked here first) -> -DOPENBLAS_ROOT. SK_FORCE_CARRY=1
#             takes the carried copy even where the system has one (to test that path);
#             SK_FORCE_PIP_CUDNN=1 likewise searches only the pip wheel's cuDNN
#             (-DCUDNN_WHEEL_ONLY=ON), and SK_FORCE_PIP_NCCL=1 only its NCCL (-DNCCL_WHEEL_ONLY=ON).
# then runs  cmake -S . -B build-gpu [-G Ninja] -DCMAKE_BUILD_TYPE=Release -DSHAKESPEARE_WERROR=OFF
#            -DSK_NVIDIA_WHEEL_PYTHON=... [-DCUDNN_ROOT=...] [-DOPENBLAS_ROOT=...]   (Ninja where
#            the image has no make; warnings stay on but are not errors: the machine's host
#            compiler is not the one CI checks)
# then writes build-gpu/env.sh, which exports the LD_LIBRARY_PATH the programs need at run
# time (the folders of the cuDNN and NCCL CMake found, unless the system's: a wheel's
# libcudnn.so.9 dlopens its engine libraries from there; the carried OpenBLAS and libgfortran
# folders; the toolkit's lib folder), and runs cmake --build build-gpu -j16 [--target T]:
#   source build-gpu/env.sh && build-gpu/shakespeare-train --device cuda ...
# Finally it checks that every shared library of shakespeare-train and of the CUDA backend
# module it loads (build-gpu/libshakespeare_cuda.so, found beside the program) resolves under that env,
# and so do cuDNN's run-time sub-libraries, which libcudnn.so.9 dlopens only when a call needs
# them (libcudnn_graph, _ops, _adv, _cnn, _heuristic, the engine libraries) and what they need
# (libz, libnvrtc): ldd of the program alone does not show them.
# Exits 1 with a message naming what is missing (nvcc, cuDNN, OpenBLAS, CUDA backend off,
# build failure, unresolved library).
#
# Usage: scripts/device_build.sh [--build-dir DIR] [--target T] [--jobs N] [--quiet]
#   --quiet   build output only on failure (the last 40 lines); configure output likewise
# Env: CUDNN_ROOT (a prefix with include/cudnn.h and lib/ or lib64/libcudnn.so[.9]), NCCL_ROOT,
#      SK_FORCE_CARRY=1, SK_FORCE_PIP_CUDNN=1, SK_FORCE_PIP_NCCL=1,
#      SK_CUDA_ARCH (CMAKE_CUDA_ARCHITECTURES; default: CMakeLists's 90),
#      PYTHON (default python3: the interpreter whose pip cuDNN is looked for).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-gpu"
target=""
jobs=16
quiet=0
python=${PYTHON:-python3}

die() { echo "device_build.sh: error: $*" >&2; exit 1; }
found() { printf 'device_build: %-9s %s\n' "$1" "$2"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) [ $# -ge 2 ] || die "--build-dir needs a value"; build=$2; shift 2 ;;
    --target) [ $# -ge 2 ] || die "--target needs a value"; target=$2; shift 2 ;;
    --jobs) [ $# -ge 2 ] || die "--jobs needs a value"; [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "--jobs expects a positive integer, got \"$2\""; jobs=$2; shift 2 ;;
    --quiet) quiet=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option \"$1\" (see --help)" ;;
  esac
done
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
mkdir -p "$build"
command -v cmake >/dev/null || die "cmake not found on PATH"
ld_paths=()   # runtime library folders for env.sh, in order

# ---- nvcc and cuBLAS ---------------------------------------------------------------------
nvcc=$(command -v nvcc || true)
if [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ]; then nvcc=/usr/local/cuda/bin/nvcc; fi
[ -n "$nvcc" ] || die "nvcc not found (neither on PATH nor /usr/local/cuda/bin/nvcc): the CUDA backend needs the CUDA toolkit"
export CUDACXX="$nvcc"
toolkit=$(cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd)
found nvcc "$nvcc ($("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/release \1/p'); toolkit $toolkit)"
cublas=$(ls "$toolkit"/lib64/libcublas.so "$toolkit"/lib/libcublas.so "$toolkit"/targets/*/lib/libcublas.so 2>/dev/null | head -n 1 || true)
[ -n "$cublas" ] || die "libcublas.so not found in the toolkit $toolkit (lib64/, lib/, targets/*/lib/): CMake's CUDA::cublas needs it"
found cuBLAS "$cublas"

# ---- cuDNN and NCCL: hints for cmake/FindCUDNN.cmake and cmake/FindNCCL.cmake -------------
# CMake searches; this script checks the hints it was given and reports what CMake found.
if [ -n "${CUDNN_ROOT:-}" ] && [ "${SK_FORCE_PIP_CUDNN:-0}" != 1 ]; then
  [ -f "$CUDNN_ROOT/include/cudnn.h" ] || die "CUDNN_ROOT=$CUDNN_ROOT has no include/cudnn.h"
fi
python_path=$(command -v "$python" || true)

# ---- OpenBLAS ----------------------------------------------------------------------------
openblas_root=""
sys_inc="" sys_lib=""
for d in /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/x86_64-linux-gnu /usr/include/openblas \
         /usr/include/x86_64-linux-gnu/openblas-openmp /usr/include /usr/local/include; do
  [ -z "$sys_inc" ] && [ -f "$d/cblas.h" ] && sys_inc="$d/cblas.h"
done
for d in /usr/lib/x86_64-linux-gnu/openblas-pthread /usr/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-openmp \
         /usr/lib64 /usr/lib /usr/local/lib; do
  [ -z "$sys_lib" ] && [ -e "$d/libopenblas.so" ] && sys_lib="$d/libopenblas.so"
done
if [ -n "$sys_inc" ] && [ -n "$sys_lib" ] && [ "${SK_FORCE_CARRY:-0}" != 1 ]; then
  found OpenBLAS "system ($sys_inc, $sys_lib)"
else
  why="the system has none"
  [ "${SK_FORCE_CARRY:-0}" = 1 ] && why="SK_FORCE_CARRY=1"
  carry="$root/.carry/root/usr"
  if [ ! -f "$carry/include/x86_64-linux-gnu/openblas-pthread/cblas.h" ] && compgen -G "$root/.carry/debs/*.deb" >/dev/null; then
    echo "device_build: unpacking .carry/debs into .carry/root"
    bash "$root/scripts/device_prep.sh" --unpack-only >/dev/null || die "unpacking .carry/debs failed"
  fi
  [ -f "$carry/include/x86_64-linux-gnu/openblas-pthread/cblas.h" ] && [ -e "$carry/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so" ] \
    || die "OpenBLAS not found ($why, and no .carry/root/usr): run scripts/device_prep.sh on a machine with apt and carry .carry"
  openblas_root=$carry
  ld_paths+=("$carry/lib/x86_64-linux-gnu/openblas-pthread" "$carry/lib/x86_64-linux-gnu")
  found OpenBLAS "carried ($why) -> -DOPENBLAS_ROOT=$openblas_root"
fi

# ---- configure ---------------------------------------------------------------------------
# -U: forget cached find results, so that a changed root or hint is searched again.
gen=()
if ! command -v make >/dev/null && [ ! -f "$build/CMakeCache.txt" ]; then
  command -v ninja >/dev/null || die "neither make nor ninja is on PATH: CMake needs one to build"
  gen=(-G Ninja)
  found generator "Ninja (no make on this machine)"
fi
args=(-S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DSHAKESPEARE_CUDA=ON -DSHAKESPEARE_WERROR=OFF
      -UCUDNN_INCLUDE_DIR -UCUDNN_LIBRARY -UCBLAS_INCLUDE_DIR -UCBLAS_LIBRARY -UOPENBLAS_ROOT
      -UNCCL_INCLUDE_DIR -UNCCL_LIBRARY -UCUDNN_ROOT -UNCCL_ROOT)
[ -n "$python_path" ] && args+=("-DSK_NVIDIA_WHEEL_PYTHON=$python_path")
if [ "${SK_FORCE_PIP_CUDNN:-0}" = 1 ]; then args+=(-DCUDNN_WHEEL_ONLY=ON)
else args+=(-DCUDNN_WHEEL_ONLY=OFF); [ -n "${CUDNN_ROOT:-}" ] && args+=("-DCUDNN_ROOT=$CUDNN_ROOT"); fi
if [ "${SK_FORCE_PIP_NCCL:-0}" = 1 ]; then args+=(-DNCCL_WHEEL_ONLY=ON)
else args+=(-DNCCL_WHEEL_ONLY=OFF); [ -n "${NCCL_ROOT:-}" ] && args+=("-DNCCL_ROOT=$NCCL_ROOT"); fi
[ -n "$openblas_root" ] && args+=("-DOPENBLAS_ROOT=$openblas_root")
args+=(-DSHAKESPEARE_NCCL=ON) # (a fallback below may have turned it off in this build folder)
[ -n "${SK_CUDA_ARCH:-}" ] && args+=("-DCMAKE_CUDA_ARCHITECTURES=$SK_CUDA_ARCH")
echo "device_build: cmake ${args[*]}"
clog="$build/configure.log"
cmake "${args[@]}" >"$clog" 2>&1 || { tail -n 40 "$clog" >&2; die "cmake configure failed (log: $clog)"; }
[ "$quiet" = 1 ] || cat "$clog"
# cache_value NAME: NAME's value in the build's CMakeCache.txt.
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -n 1; }
grep -q 'CUDA backend: off (cuDNN not found' "$clog" && die "cuDNN not found: no \$CUDNN_ROOT, no cudnn.h with" \
  "libcudnn in the CUDA toolkit's folder or the system's, and ${python_path:-$python} has no pip wheel" \
  "nvidia-cudnn-cu* (site-packages/nvidia/cudnn with include/ and lib/); see $clog"
grep -q 'CUDA backend: on' "$clog" \
  || die "CMake turned the CUDA backend off: $(grep -o 'CUDA backend: off.*' "$clog" || echo 'no "CUDA backend" line; see '"$clog")"
# "cuDNN: 9.19.0 (/usr/local/cuda/lib64/libcudnn.so; from /usr/local/cuda/include)"
cudnn_line=$(grep -o 'cuDNN: [0-9].*' "$clog" || true)
found cuDNN "$(echo "$cudnn_line" | sed 's/^cuDNN: \([^ ]*\) (\(.*\); from \(.*\))$/\1 from \3 -> \2/')"
nccl_src=""
if grep -q 'NCCL: ON' "$clog"; then
  nccl_src=$(grep -o 'NCCL: ON.*' "$clog" | sed 's/.*; from \(.*\))$/\1/')
  found NCCL "$(grep -o 'NCCL: ON.*' "$clog" | sed 's/^NCCL: ON (\([^,]*\), \(.*\); from \(.*\))$/\1 from \3 -> \2/')"
else
  found NCCL "none (optional: without it GPU ranks cannot all-reduce, and the gpu_test_nccl_* tests skip)"
fi
found CMake "$(grep -o 'CUDA backend: on.*' "$clog"); $(grep -o 'CBLAS: .*' "$clog")"

# ---- runtime environment -----------------------------------------------------------------
# The folders of the cuDNN and NCCL found (a wheel's: libcudnn.so.9 dlopens its sub-libraries
# from its own folder, but the programs must find libcudnn.so.9 itself), unless the loader
# searches them anyway; then the toolkit's lib folder: cuDNN's runtime-compiled engines
# dlopen libnvrtc from it.
add_ld() { # add_ld DIR: appended unless a system folder or already listed (by its real path)
  case "$1" in ""|/lib|/lib64|/usr/lib|/usr/lib64|/lib/*-linux-gnu|/usr/lib/*-linux-gnu) return ;; esac
  local d; for d in "${ld_paths[@]}"; do [ "$(readlink -f "$d")" = "$(readlink -f "$1")" ] && return; done
  ld_paths+=("$1")
}
for var in CUDNN_LIBRARY NCCL_LIBRARY; do
  lib=$(cache_value "$var")
  case "$lib" in /*) add_ld "$(dirname "$lib")" ;; esac
done
for d in "$toolkit/lib64" "$toolkit/lib"; do [ -d "$d" ] && { add_ld "$d"; break; }; done
ld=$(IFS=:; echo "${ld_paths[*]}")
{
  echo "# Written by scripts/device_build.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ): run-time library folders"
  echo "# for the programs in this build (source it before running them)."
  printf 'export LD_LIBRARY_PATH=%q"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"\n' "$ld"
} >"$build/env.sh"
# The link step needs them too: ld follows libopenblas.so.0's NEEDED libgfortran.so.5.
export LD_LIBRARY_PATH="$ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
found runtime "LD_LIBRARY_PATH += $ld (written to ${build#"$root"/}/env.sh)"

# ---- build -------------------------------------------------------------------------------
bargs=(--build "$build" -j "$jobs")
[ -n "$target" ] && bargs+=(--target "$target")
echo "device_build: cmake ${bargs[*]}"
blog="$build/build.log"
if [ "$quiet" = 1 ]; then
  cmake "${bargs[@]}" >"$blog" 2>&1 || { tail -n 40 "$blog" >&2; die "build failed (log: $blog)"; }
else
  cmake "${bargs[@]}" 2>&1 | tee "$blog" || die "build failed (log: $blog)"
fi

# ---- check that the programs' and the CUDA module's libraries resolve --------------------
# The programs link no CUDA library: they dlopen the CUDA backend module, built beside them
# (build-gpu/libshakespeare_cuda.so, src/cuda/cuda_loader.c), which links cuBLAS and cuDNN.
exe="$build/shakespeare-train"
module="$build/libshakespeare_cuda.so"
[ -x "$exe" ] || die "$exe was not built"
[ -f "$module" ] || die "$module (the CUDA backend module the programs load) was not built"
for f in "$exe" "$module"; do
  missing=$(ldd "$f" 2>&1 | grep 'not found' || true)
  [ -z "$missing" ] || die "shared libraries of $f do not resolve under ${build#"$root"/}/env.sh: $missing"
done
for l in cudnn openblas gfortran cublas; do
  p=$(ldd "$exe" "$module" | awk -v l="lib$l" 'index($1, l) == 1 { print $3; exit }')
  [ -n "$p" ] && found "ldd" "lib$l -> $p"
done
# cuDNN's sub-libraries, from the folder the program's libcudnn.so.9 resolves to.
cudnn_so=$(ldd "$module" | awk 'index($1, "libcudnn.so") == 1 { print $3; exit }')
[ -n "$cudnn_so" ] || die "$module does not link libcudnn.so.9"
cudnn_dir=$(dirname "$(readlink -f "$cudnn_so")")
subs=0
for need in graph ops adv engines_precompiled engines_runtime_compiled heuristic; do
  ls "$cudnn_dir"/libcudnn_"$need".so* >/dev/null 2>&1 \
    || die "cuDNN's libcudnn_$need.so.9 is not beside $cudnn_so: calls that need it would fail at run time"
done
# libcuda.so.1 is the NVIDIA driver, not part of any build (cuDNN 9.2x's runtime-compiled
# engines link it): where the machine has no driver it is reported below, not a failure here.
for sub in "$cudnn_dir"/libcudnn_*.so.9; do
  bad=$(ldd "$sub" 2>&1 | grep 'not found' | grep -v '^[[:space:]]*libcuda\.so\.1 ' || true)
  [ -z "$bad" ] || die "$(basename "$sub") (dlopened by libcudnn.so.9) has unresolved libraries: $(echo $bad)"
  subs=$((subs + 1))
done
found cuDNN-libs "$subs sub-libraries in $cudnn_dir resolve (graph, ops, adv, engines, heuristic...)"
# libz: cuDNN 9's engines need it; a minimal image may lack it.
zlib=$(ldd "$cudnn_dir"/libcudnn_engines_precompiled.so* 2>/dev/null | awk '$1 ~ /^libz\.so/ { print $3; exit }')
# ldconfig_cache: the loader's cache (ldconfig -p; /sbin may not be on PATH), or nothing.
ldconfig_cache() { { command -v ldconfig >/dev/null && ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null || true; }
[ -n "$zlib" ] || zlib=$(ldconfig_cache | awk '/libz\.so\.1 / { print $NF; exit }')
[ -n "$zlib" ] || die "libz.so.1 not found: cuDNN 9's engine libraries need zlib"
found libz "$zlib"
driver=$(ldconfig_cache | awk '/libcuda\.so\.1 / { print $NF; exit }')
for d in ${LD_LIBRARY_PATH//:/ }; do [ -z "$driver" ] && [ -e "$d/libcuda.so.1" ] && driver="$d/libcuda.so.1"; done
if [ -n "$driver" ]; then
  found driver "$driver"
else
  echo "device_build: warning: libcuda.so.1 (the NVIDIA driver) not found: the programs will find no GPU here"
fi
# --version loads the module (it names the CUDA runtime and cuDNN it finds): the programs find it.
version=$("$exe" --version) || die "$exe --version failed"
if ! echo "$version" | grep -q '^backends: cpu, cuda (CUDA runtime' && [ -n "$nccl_src" ]; then
  # An NCCL that links but does not load beside this CUDA (a wheel for another CUDA major,
  # say) must not cost the GPU tests: build again without it, and say so.
  echo "device_build: warning: the CUDA module does not load with NCCL from $nccl_src" \
       "($(echo "$version" | grep '^backends' || echo "$version")); building without NCCL (-DSHAKESPEARE_NCCL=OFF)"
  cmake "${args[@]}" -DSHAKESPEARE_NCCL=OFF >"$clog" 2>&1 ||
    { tail -n 40 "$clog" >&2; die "cmake configure failed (log: $clog)"; }
  cmake "${bargs[@]}" >"$blog" 2>&1 || { tail -n 40 "$blog" >&2; die "build failed (log: $blog)"; }
  nccl_src=""
  version=$("$exe" --version) || die "$exe --version failed"
fi
echo "$version" | grep -q '^backends: cpu, cuda (CUDA runtime' \
  || die "$exe does not load its CUDA module: $(echo "$version" | grep '^backends' || echo "$version")"
found module "$module: $(echo "$version" | grep -o 'cuda (CUDA runtime.*')"
if [ -n "$nccl_src" ]; then
  echo "$version" | grep -q 'NCCL [0-9]' || die "NCCL was found ($nccl_src) but the module does not name it: see $clog"
fi
echo "device_build: ok: $exe (run it after: source ${build#"$root"/}/env.sh)"
