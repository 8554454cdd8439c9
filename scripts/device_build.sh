#!/usr/bin/env bash
# device_build.sh: configures and builds shakespeare with the CUDA backend on a GPU machine
# whose cuDNN and OpenBLAS may come from unusual places. Run from anywhere; builds into
# build-gpu/ of the repository (or --build-dir).
#
# Finds, and prints one line per finding:
#   nvcc      on PATH, else /usr/local/cuda/bin/nvcc (then exported as CUDACXX)
#   cuBLAS    beside nvcc's toolkit (CMake's CUDA::cublas)
#   cuDNN     $CUDNN_ROOT if set; else /usr/local/cuda/include/cudnn.h with its libcudnn.so;
#             else the system's (/usr/include[/x86_64-linux-gnu]); else python3's pip wheel
#             nvidia-cudnn-cu13/cu12 (site-packages/nvidia/cudnn/{include,lib}). The wheel has
#             only libcudnn.so.9, no libcudnn.so for CMake's find_library(cudnn), so the script
#             makes BUILD/cudnn-root/{include,lib} (links) and passes that as -DCUDNN_ROOT.
#   NCCL      (optional) the toolkit's, the system's, else python3's pip wheel nvidia-nccl-cu*
#             (site-packages/nvidia/nccl), linked as BUILD/nccl-root -> -DNCCL_ROOT; if the
#             CUDA module then does not load, it is built again without (-DSHAKESPEARE_NCCL=OFF)
#   OpenBLAS  the system's (cblas.h + libopenblas.so in the usual Debian/Ubuntu places); else
#             .carry/root/usr (scripts/device_prep.sh, run on a machine with apt, makes it;
#             .carry/debs alone is unpacked here first) -> -DOPENBLAS_ROOT. SK_FORCE_CARRY=1
#             takes the carried copy even where the system has one (to test that path);
#             SK_FORCE_PIP_CUDNN=1 likewise skips CUDNN_ROOT, the toolkit's and the system's cuDNN,
#             and SK_FORCE_PIP_NCCL=1 the toolkit's and the system's NCCL.
# then runs  cmake -S . -B build-gpu [-G Ninja] -DCMAKE_BUILD_TYPE=Release -DSHAKESPEARE_WERROR=OFF
#            -DCUDNN_ROOT=... [-DOPENBLAS_ROOT=...]   (Ninja where the image has no make; warnings
#            stay on but are not errors: the machine's host compiler is not the one CI checks)
# and        cmake --build build-gpu -j16 [--target T]
# and writes build-gpu/env.sh, which exports the LD_LIBRARY_PATH the programs need at run
# time (the wheel's cuDNN folder: libcudnn.so.9 dlopens its engine libraries from there; the
# carried OpenBLAS and libgfortran folders):
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
# Env: CUDNN_ROOT (a prefix with include/cudnn.h and lib/ or lib64/libcudnn.so),
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
    -h|--help) sed -n '2,39p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

# pip_nvidia_dir NAME HEADER: the folder of $python's pip wheel nvidia-NAME-cu* (holding
# include/HEADER and lib/), or nothing. nvidia.NAME may be a namespace package (no __file__):
# take its __path__, and fall back to scanning sys.path for nvidia/NAME.
pip_nvidia_dir() {
  command -v "$python" >/dev/null || return 0
  "$python" - "$1" "$2" <<'EOF' 2>/dev/null || true
import importlib, os, sys
name, header = sys.argv[1], sys.argv[2]
cands = []
try:
    m = importlib.import_module("nvidia." + name)
    cands += list(getattr(m, "__path__", [])) + ([os.path.dirname(m.__file__)] if getattr(m, "__file__", None) else [])
except Exception:
    pass
cands += [os.path.join(p, "nvidia", name) for p in sys.path if p]
for c in cands:
    if os.path.isfile(os.path.join(c, "include", header)) and os.path.isdir(os.path.join(c, "lib")):
        print(os.path.realpath(c))
        break
EOF
}

# ---- cuDNN -------------------------------------------------------------------------------
# cudnn_version DIR: "9.x.y" from cudnn_version.h (or cudnn.h) in DIR.
cudnn_version() {
  local h="$1/cudnn_version.h"
  [ -f "$h" ] || h="$1/cudnn.h"
  awk '/#define CUDNN_MAJOR /{a=$3} /#define CUDNN_MINOR /{b=$3} /#define CUDNN_PATCHLEVEL /{c=$3} END{print a"."b"."c}' "$h"
}
# make_cudnn_prefix INCDIR LIBFILE: BUILD/cudnn-root/{include -> INCDIR, lib/libcudnn.so -> LIBFILE}.
make_cudnn_prefix() {
  local p="$build/cudnn-root"
  rm -rf "$p"
  mkdir -p "$p/lib"
  ln -s "$1" "$p/include"
  ln -s "$2" "$p/lib/libcudnn.so"
  # The SONAME too, so that this prefix's lib/ alone also serves at run time.
  [ "$(basename "$2")" = libcudnn.so.9 ] || ln -s "$2" "$p/lib/libcudnn.so.9"
  cudnn_root="$p"
}
cudnn_root="" cudnn_inc="" cudnn_src=""
force_pip=${SK_FORCE_PIP_CUDNN:-0}
if [ -n "${CUDNN_ROOT:-}" ] && [ "$force_pip" != 1 ]; then
  [ -f "$CUDNN_ROOT/include/cudnn.h" ] || die "CUDNN_ROOT=$CUDNN_ROOT has no include/cudnn.h"
  cudnn_root=$CUDNN_ROOT cudnn_inc="$CUDNN_ROOT/include" cudnn_src="CUDNN_ROOT"
elif [ "$force_pip" != 1 ] && [ -f /usr/local/cuda/include/cudnn.h ] && ls /usr/local/cuda/lib64/libcudnn.so /usr/local/cuda/lib/libcudnn.so >/dev/null 2>&1; then
  cudnn_root=/usr/local/cuda cudnn_inc=/usr/local/cuda/include cudnn_src="CUDA toolkit folder"
else
  for inc in /usr/include /usr/include/x86_64-linux-gnu; do
    for lib in /usr/lib/x86_64-linux-gnu/libcudnn.so.9 /usr/lib/x86_64-linux-gnu/libcudnn.so /usr/lib64/libcudnn.so.9; do
      if [ -z "$cudnn_src" ] && [ "$force_pip" != 1 ] && [ -f "$inc/cudnn.h" ] && [ -e "$lib" ]; then
        make_cudnn_prefix "$inc" "$lib"
        cudnn_inc=$inc cudnn_src="system ($lib)"
      fi
    done
  done
  if [ -z "$cudnn_src" ]; then
    pipdir=$(pip_nvidia_dir cudnn cudnn.h)
    if [ -n "$pipdir" ]; then
      lib=$(ls "$pipdir"/lib/libcudnn.so.[0-9]* "$pipdir"/lib/libcudnn.so 2>/dev/null | head -n 1 || true)
      [ -n "$lib" ] || die "the pip cuDNN at $pipdir has include/cudnn.h but no lib/libcudnn.so*"
      make_cudnn_prefix "$pipdir/include" "$lib"
      cudnn_inc="$pipdir/include" cudnn_src="pip wheel of $python ($pipdir)"
      ld_paths+=("$pipdir/lib")
    fi
  fi
fi
[ -n "$cudnn_src" ] || die "cuDNN not found: no \$CUDNN_ROOT, no /usr/local/cuda/include/cudnn.h with lib64/libcudnn.so, no system cudnn.h, and $python has no nvidia.cudnn package with include/ and lib/"
found cuDNN "$(cudnn_version "$cudnn_inc") from $cudnn_src -> -DCUDNN_ROOT=$cudnn_root"

# ---- NCCL (optional: GPU ranks sum their gradients with it) -----------------------------
# The toolkit's, the system's, or the pip wheel nvidia-nccl-cu* (PyTorch's), which has only
# libnccl.so.2: BUILD/nccl-root/{include, lib/libnccl.so} links for CMake's find_library.
nccl_root="" nccl_src=""
force_pip_nccl=${SK_FORCE_PIP_NCCL:-0}
if [ "$force_pip_nccl" != 1 ] && [ -f "$toolkit/include/nccl.h" ] &&
   ls "$toolkit"/lib64/libnccl.so "$toolkit"/lib/libnccl.so >/dev/null 2>&1; then
  nccl_root=$toolkit nccl_src="CUDA toolkit folder"
elif [ "$force_pip_nccl" != 1 ] && [ -f /usr/include/nccl.h ] && [ -e /usr/lib/x86_64-linux-gnu/libnccl.so ]; then
  nccl_src="system (/usr/lib/x86_64-linux-gnu/libnccl.so)"
else
  pipdir=$(pip_nvidia_dir nccl nccl.h)
  lib=$([ -n "$pipdir" ] && ls "$pipdir"/lib/libnccl.so.[0-9]* "$pipdir"/lib/libnccl.so 2>/dev/null | head -n 1 || true)
  if [ -n "$lib" ]; then
    nccl_root="$build/nccl-root"
    rm -rf "$nccl_root"
    mkdir -p "$nccl_root/lib"
    ln -s "$pipdir/include" "$nccl_root/include"
    ln -s "$lib" "$nccl_root/lib/libnccl.so"
    # The SONAME too, so that this prefix's lib/ (in the build's RPATH) alone serves at run time.
    [ "$(basename "$lib")" = libnccl.so ] || ln -s "$lib" "$nccl_root/lib/$(basename "$lib")"
    nccl_src="pip wheel of $python ($pipdir)"
    ld_paths+=("$pipdir/lib")
  fi
fi
if [ -n "$nccl_src" ]; then
  nccl_h=${nccl_root:-/usr}/include/nccl.h
  nccl_v=$(awk '/#define NCCL_(MAJOR|MINOR|PATCH) /{v=v (v ? "." : "") $3} END{print v}' "$nccl_h")
  found NCCL "$nccl_v from $nccl_src${nccl_root:+ -> -DNCCL_ROOT=$nccl_root}"
else
  found NCCL "none (optional: without it GPU ranks cannot all-reduce, and the gpu_test_nccl_* tests skip)"
fi

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

# ---- runtime environment -----------------------------------------------------------------
# The toolkit's lib folder too: cuDNN's runtime-compiled engines dlopen libnvrtc from it.
for d in "$toolkit/lib64" "$toolkit/lib"; do [ -d "$d" ] && { ld_paths+=("$d"); break; }; done
ld=$(IFS=:; echo "${ld_paths[*]}")
{
  echo "# Written by scripts/device_build.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ): run-time library folders"
  echo "# for the programs in this build (source it before running them)."
  printf 'export LD_LIBRARY_PATH=%q"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"\n' "$ld"
} >"$build/env.sh"
# The link step needs them too: ld follows libopenblas.so.0's NEEDED libgfortran.so.5.
export LD_LIBRARY_PATH="$ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
found runtime "LD_LIBRARY_PATH += $ld (written to ${build#"$root"/}/env.sh)"

# ---- configure and build -----------------------------------------------------------------
# -U: forget cached find results, so that a changed root is searched again.
gen=()
if ! command -v make >/dev/null && [ ! -f "$build/CMakeCache.txt" ]; then
  command -v ninja >/dev/null || die "neither make nor ninja is on PATH: CMake needs one to build"
  gen=(-G Ninja)
  found generator "Ninja (no make on this machine)"
fi
args=(-S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DSHAKESPEARE_CUDA=ON -DSHAKESPEARE_WERROR=OFF
      -UCUDNN_INCLUDE_DIR -UCUDNN_LIBRARY -UCBLAS_INCLUDE_DIR -UCBLAS_LIBRARY -UOPENBLAS_ROOT
      "-DCUDNN_ROOT=$cudnn_root")
[ -n "$openblas_root" ] && args+=("-DOPENBLAS_ROOT=$openblas_root")
args+=(-DSHAKESPEARE_NCCL=ON) # (a fallback below may have turned it off in this build folder)
[ -n "$nccl_root" ] && args+=("-UNCCL_INCLUDE_DIR" "-UNCCL_LIBRARY" "-DNCCL_ROOT=$nccl_root")
[ -n "${SK_CUDA_ARCH:-}" ] && args+=("-DCMAKE_CUDA_ARCHITECTURES=$SK_CUDA_ARCH")
echo "device_build: cmake ${args[*]}"
clog="$build/configure.log"
cmake "${args[@]}" >"$clog" 2>&1 || { tail -n 40 "$clog" >&2; die "cmake configure failed (log: $clog)"; }
[ "$quiet" = 1 ] || cat "$clog"
grep -q 'CUDA backend: on' "$clog" \
  || die "CMake turned the CUDA backend off: $(grep -o 'CUDA backend: off.*' "$clog" || echo 'no "CUDA backend" line; see '"$clog")"
found CMake "$(grep -o 'CUDA backend: on.*' "$clog"); $(grep -o 'CBLAS: .*' "$clog")"
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
# (build-gpu/libshakespeare_cuda.so, src/cudaload/cuda_loader.c), which links cuBLAS and cuDNN.
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
