#!/usr/bin/env bash
# Installs the Debian packages the build, the tests and the benchmarks need.
# Safe to run again: it installs only what is missing. Needs root (or sudo).
#   cmake, gcc, g++     the build (g++: nvcc's host compiler for the CUDA backend)
#   libopenblas-dev     CBLAS for the CPU backend's matrix products
#   clang               libFuzzer targets and the sanitizer build
#   python3-torch       the PyTorch reference generator, checkpoint round trip, CPU benchmark peer
#   python3-matplotlib  scripts/plot_metrics.py
set -euo pipefail
want=(cmake gcc g++ make libopenblas-dev clang python3 python3-numpy python3-torch python3-matplotlib)
[ "${SHAKESPEARE_SETUP_MINIMAL:-0}" = 1 ] && want=(cmake gcc g++ make libopenblas-dev)
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "setup: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
