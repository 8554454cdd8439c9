#!/usr/bin/env bash
# Installs the Debian packages the build, the tests and the benchmarks need.
# Safe to run again: it installs only what is missing. Needs root (or sudo).
#   cmake, gcc, g++     the build (g++: nvcc's host compiler for the CUDA backend, and the
#                       tests/emu tests, our CUDA kernels run on the CPU)
#   libopenblas-dev     CBLAS for the CPU backend's matrix products
#   libxsmm-dev         small-matrix kernels for the LSTM's per-step recurrent products
#   libdnnl-dev         oneDNN's LSTM primitive: the CPU's LSTM in bf16 (--precision bf16 on the CPU)
#   help2man            the programs' man pages, generated from their --help
#   clang               libFuzzer targets and the sanitizer build
#   python3-torch       the PyTorch reference generator, checkpoint round trip, CPU benchmark peer
#   python3-matplotlib  scripts/plot_metrics.py
#   python3-venv        a virtual environment for the one package Debian lacks:
#   safetensors (PyPI)  the official safetensors library, which the tests use to re-save checkpoints as
#                       another writer would (tests/cli/test_safetensors_resave.sh); installed into
#                       .venv/ (which also sees Debian's python3-torch and python3-numpy). Without network
#                       access this step says so and the tests that need it are skipped.
#   openmpi-bin, libopenmpi-dev   data-parallel training (mpirun -np N) and its tests
set -euo pipefail
want=(cmake gcc g++ make libopenblas-dev libxsmm-dev libdnnl-dev help2man clang python3 python3-numpy python3-torch python3-matplotlib
      python3-venv openmpi-bin libopenmpi-dev)
[ "${SHAKESPEARE_SETUP_MINIMAL:-0}" = 1 ] && want=(cmake gcc g++ make libopenblas-dev libxsmm-dev libdnnl-dev help2man)
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ "${SHAKESPEARE_SETUP_MINIMAL:-0}" = 1 ] && exit 0

SAFETENSORS_PIN=safetensors==0.8.0
venv=$(cd "$(dirname "$0")/.." && pwd)/.venv
if ! "$venv/bin/python3" -c 'import safetensors' 2> /dev/null; then
  echo "setup: installing $SAFETENSORS_PIN (PyPI) into $venv"
  if ! { /usr/bin/python3 -m venv --system-site-packages "$venv" &&
         "$venv/bin/pip" install -q --disable-pip-version-check --timeout 30 --retries 2 "$SAFETENSORS_PIN"; }; then
    echo "setup: could not install $SAFETENSORS_PIN; the tests that need it will be skipped" >&2
  fi
fi
