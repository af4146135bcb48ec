#!/usr/bin/env bash
# Installs whatever Debian packages are missing (plus EXTRA_PACKAGES, which test.sh sets), configures with CMake (Ninja) into build/, builds.
# Idempotent: with everything present it only runs an incremental build.
set -euo pipefail
cd "$(dirname "$0")/.."

# lld-16: links the statically linked LLVM and gRPC in seconds (CMakeLists.txt says why).
# libopenblas0-pthread: numpy's and PyTorch's BLAS for the bench/ peers (else the slow reference BLAS).
PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  llvm-16-dev lld-16 libspdlog-dev libfmt-dev libsqlite3-dev libgtest-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libxxhash-dev libonnx-dev
  libcpp-httplib-dev prometheus-cpp-dev libyaml-cpp-dev
  python3-grpcio python3-protobuf python3-pytest python3-onnx
  libopenblas0-pthread libxgboost-dev
)
missing=()
# shellcheck disable=SC2206
PACKAGES+=(${EXTRA_PACKAGES:-})
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

JOBS="${FUSETUNE_JOBS:-$(nproc)}"
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
# The default build also generates the Python client's gRPC stubs (client/python/fusetune/_proto,
# target python_stubs), so `PYTHONPATH=client/python` works and ctest's python_client finds them.
cmake --build build -j "$JOBS"
