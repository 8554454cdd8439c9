#!/usr/bin/env bash
# device_prep.sh: OpenBLAS for a GPU machine that has none, fetched here with Debian's apt.
#
# The CPU backend links OpenBLAS (CMakeLists.txt: find_path cblas.h / find_library openblas,
# hinted by -DOPENBLAS_ROOT). A lent GPU machine may lack it and cannot reach a package
# registry, so this script, run on a Debian machine that can, downloads
#   libopenblas0-pthread     libopenblasp-r0.3.x.so (SONAME libopenblas.so.0)
#   libopenblas-pthread-dev  cblas.h, openblas_config.h, the libopenblas.so link
#   libopenblas-dev          (a metapackage; fetched for completeness, holds no files we use)
#   libgfortran5             NEEDED by libopenblas.so.0
#   libquadmath0             NEEDED by libgfortran.so.5
# (libc6, libgcc-s1 and gcc-12-base, the rest of the closure, are on any glibc system;
# libblas3/liblapack3 are not needed: libopenblas0-pthread ships its own, and we drop them)
# into .carry/debs/ and unpacks them into .carry/root/ (git-ignored), laid out as the .debs
# install, which CMakeLists.txt's PATH_SUFFIXES expect:
#   .carry/root/usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h
#   .carry/root/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so -> libopenblasp-r0.3.21.so
#   .carry/root/usr/lib/x86_64-linux-gnu/libgfortran.so.5, libquadmath.so.0
# Static archives, LAPACK, the reference-BLAS aliases, cmake/pkgconfig files and docs are
# pruned (about 40 MB remain, most of it the multi-CPU libopenblas), and every symbolic link
# is made relative so that it resolves inside .carry/root wherever the folder lands.
# scripts/device_build.sh then uses -DOPENBLAS_ROOT=$PWD/.carry/root/usr and puts the two
# lib folders on LD_LIBRARY_PATH (build-gpu/env.sh).
#
# Usage: scripts/device_prep.sh [--keep-debs | --debs-only | --unpack-only]
#   (default)      download, unpack into .carry/root, delete the .debs: carry ".carry" (~40 MB)
#   --keep-debs    keep .carry/debs as well (~13 MB more)
#   --debs-only    download only: carry ".carry" (~13 MB); device_build.sh unpacks it there
#   --unpack-only  no network: unpack .carry/debs/*.deb into .carry/root (device_build.sh
#                  runs this on the GPU machine; works with dpkg-deb or with ar + tar)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
carry="$root/.carry"
debs="$carry/debs"
dest="$carry/root"
pkgs=(libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libgfortran5 libquadmath0)
mode=default

die() { echo "device_prep.sh: error: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --keep-debs) mode=keep; shift ;;
    --debs-only) mode=debs; shift ;;
    --unpack-only) mode=unpack; shift ;;
    -h|--help) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option \"$1\" (see --help)" ;;
  esac
done

download() {
  command -v apt-get >/dev/null || die "apt-get not found: run this on a Debian/Ubuntu machine with network access"
  [ "$(dpkg --print-architecture 2>/dev/null || echo unknown)" = amd64 ] \
    || echo "device_prep.sh: note: this machine is not amd64; downloading amd64 packages anyway" >&2
  rm -rf "$debs"
  mkdir -p "$debs"
  # apt-get download needs the package lists; fetch them once if they are missing or stale.
  local o=(-oAPT::Architecture=amd64)
  if ! (cd "$debs" && apt-get "${o[@]}" -q download "${pkgs[@]}" >/dev/null 2>"$debs/.err"); then
    echo "device_prep.sh: apt-get download failed ($(tail -n 1 "$debs/.err")); running apt-get update" >&2
    local sudo_cmd=()
    [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get -qq update
    (cd "$debs" && apt-get "${o[@]}" -q download "${pkgs[@]}" >/dev/null 2>"$debs/.err") \
      || { cat "$debs/.err" >&2; die "apt-get download ${pkgs[*]} failed"; }
  fi
  rm -f "$debs/.err"
  echo "downloaded into .carry/debs:"
  (cd "$debs" && ls -l ./*.deb | awk '{printf "  %-60s %9d bytes\n", $9, $5}')
}

# deb_extract DEB DIR: dpkg -x, or ar + tar where dpkg-deb is missing.
deb_extract() {
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$1" "$2"
    return
  fi
  command -v ar >/dev/null || die "neither dpkg-deb nor ar is available to unpack $1"
  local member
  member=$(ar t "$1" | grep '^data\.tar') || die "$1 has no data.tar member"
  case "$member" in
    *.xz) ar p "$1" "$member" | tar -xJ -C "$2" ;;
    *.zst) ar p "$1" "$member" | zstd -dc | tar -x -C "$2" ;;
    *.gz) ar p "$1" "$member" | tar -xz -C "$2" ;;
    *) ar p "$1" "$member" | tar -x -C "$2" ;;
  esac
}

unpack() {
  compgen -G "$debs/*.deb" >/dev/null || die "no .deb files in $debs (run scripts/device_prep.sh on a machine with apt)"
  rm -rf "$dest"
  mkdir -p "$dest"
  for d in "$debs"/*.deb; do deb_extract "$d" "$dest"; done
  local lib="$dest/usr/lib/x86_64-linux-gnu" inc="$dest/usr/include/x86_64-linux-gnu/openblas-pthread"
  # Prune what neither the build nor the run uses.
  rm -rf "${dest:?}/usr/share" "$lib/cmake" "$lib/pkgconfig" "$lib/openblas-pthread/cmake" \
         "$lib/openblas-pthread/pkgconfig"
  find "$dest" \( -name '*.a' -o -name 'libblas.so*' -o -name 'liblapack.so*' \) \( -type f -o -type l \) -delete
  # Absolute links (alternatives, /usr/lib/...) would point outside the folder: retarget them
  # into it, relative; links left dangling by the pruning go.
  local link target abs
  while IFS= read -r -d '' link; do
    target=$(readlink "$link")
    if [ "${target#/}" != "$target" ]; then
      abs="$dest$target"
      if [ -e "$abs" ]; then
        ln -sfn "$(realpath --relative-to="$(dirname "$link")" "$abs")" "$link"
      else
        rm -f "$link"
        continue
      fi
    fi
    [ -e "$link" ] || rm -f "$link"
  done < <(find "$dest" -type l -print0)
  # The .so link the linker needs; made here if a package version lacks it.
  local real
  real=$(find "$lib/openblas-pthread" -maxdepth 1 -type f -name 'libopenblas*.so' | head -n 1)
  [ -n "$real" ] || die "no libopenblas*.so in the unpacked packages"
  [ -e "$lib/openblas-pthread/libopenblas.so" ] || ln -s "$(basename "$real")" "$lib/openblas-pthread/libopenblas.so"
  [ -e "$lib/openblas-pthread/libopenblas.so.0" ] || ln -s "$(basename "$real")" "$lib/openblas-pthread/libopenblas.so.0"
  find "$dest" -type d -empty -delete
  local f
  for f in "$inc/cblas.h" "$inc/openblas_config.h" "$lib/openblas-pthread/libopenblas.so" \
           "$lib/openblas-pthread/libopenblas.so.0" "$lib/libgfortran.so.5" "$lib/libquadmath.so.0"; do
    [ -e "$f" ] || die "${f#"$root"/} is missing after unpacking"
  done
  echo "unpacked into .carry/root (use -DOPENBLAS_ROOT=\$PWD/.carry/root/usr):"
  (cd "$dest" && find . \( -type f -o -type l \) | sort | while IFS= read -r p; do
    if [ -L "$p" ]; then printf '  %s -> %s\n' "${p#./}" "$(readlink "$p")"
    else printf '  %-70s %9d bytes\n' "${p#./}" "$(stat -c %s "$p")"; fi
  done)
  if command -v readelf >/dev/null; then
    echo "  libopenblas.so.0 NEEDED: $(readelf -d "$lib/openblas-pthread/libopenblas.so.0" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
  fi
}

case "$mode" in
  default) download; unpack; rm -rf "$debs" ;;
  keep) download; unpack ;;
  debs) download; rm -rf "$dest" ;;
  unpack) unpack ;;
esac
echo "total size of .carry: $(du -sh "$carry" | cut -f1) ($(du -sb "$carry" | cut -f1) bytes)"
