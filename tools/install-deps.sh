#!/usr/bin/env bash
# Installs what gpusched needs and is missing: Debian packages, then PyPI packages.
# Idempotent: a second run checks and installs nothing. Used by `make demo` and `make test`.
# `FUZZ=1 ./tools/install-deps.sh` (what `make fuzz` runs) also installs clang and its libFuzzer /
# sanitizer runtimes; `make test` never needs them.
set -euo pipefail

APT_PACKAGES=(g++ make cmake ninja-build pkg-config
              nlohmann-json3-dev libboost-dev libboost-graph-dev libeigen3-dev libcli11-dev
              catch2 libbenchmark-dev libpugixml-dev libyaml-cpp-dev libsimdjson-dev libre2-dev)
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
if [ "${FUZZ:-0}" = "1" ]; then
  # clang++-N -fsanitize=fuzzer,address,undefined with N >= 16 (older clang cannot capture
  # structured bindings in lambdas, which the code does), plus libclang-rt-N-dev (libFuzzer and
  # the sanitizer runtimes). Debian 12 has 16 and 19: the newest listed here that apt offers.
  apt-cache show clang >/dev/null 2>&1 || $SUDO apt-get update -qq   # empty package lists
  for v in 19 18 17 16 20 21; do
    if apt-cache show "clang-$v" "libclang-rt-$v-dev" >/dev/null 2>&1; then
      APT_PACKAGES+=("clang-$v" "libclang-rt-$v-dev" "llvm-$v")   # llvm-N: llvm-symbolizer-N (stacks)
      break
    fi
  done
fi
PY_PACKAGES=("scikit-build-core>=0.10" "pybind11>=2.12" "numpy" "pandas" "matplotlib" "pytest" "jsonschema"
             "dask[distributed]" "tqdm" "gymnasium")
PY_IMPORTS=(scikit_build_core pybind11 numpy pandas matplotlib pytest jsonschema distributed tqdm gymnasium)
PYTHON=${PYTHON:-python3}

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "gpusched: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

need_pip=0
for m in "${PY_IMPORTS[@]}"; do
  "$PYTHON" -c "import $m" 2>/dev/null || { need_pip=1; break; }
done
if [ $need_pip -eq 1 ]; then
  echo "gpusched: installing Python packages: ${PY_PACKAGES[*]}"
  "$PYTHON" -m pip install -q "${PY_PACKAGES[@]}"
fi
