#!/usr/bin/env bash
# Install what tensorpod needs to build and test, from Debian's packages. Idempotent: quiet
# when everything is there. As root it installs what is missing; otherwise it prints the
# apt-get line to run and stops. Extra package names as arguments are installed too
# (make wave asks for gtkwave, which also provides fst2vcd; make fuzz for clang, libclang-rt-dev,
# which holds libFuzzer and the sanitizer runtimes, and llvm, which holds llvm-symbolizer).
set -euo pipefail

PACKAGES=(
  g++ make cmake ninja-build ccache  # toolchain
  verilator                          # RTL -> C++
  libsystemc-dev                     # SystemC (the pod testbench)
  libfmt-dev nlohmann-json3-dev libcli11-dev libgtest-dev libxtensor-dev  # C++ libraries (xtensor: .npy files)
  openmpi-bin libopenmpi-dev         # MPI: a pod split over processes (mpirun -np R tensorpod pod ...)
  python3                            # the ISA generator (configure) and the benchmark plots
  python3-matplotlib                 # the benchmark plots (make plots, make bench, a test)
  yosys z3                           # synthesis for the area figures (make area) and the proofs
                                     # (make formal: yosys-smtbmc with z3, ABC), each with tests
  "$@"
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "tensorpod: missing Debian packages: ${missing[*]}" >&2
  echo "tensorpod: install them as root with:" >&2
  echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

echo "tensorpod: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "tensorpod: dependencies installed"
