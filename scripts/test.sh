#!/usr/bin/env bash
# Installs dependencies, builds the release preset and runs every test with CTest, then builds
# the fuzz preset (clang, ASan + UBSan) and runs each fuzz target for 30 s from its corpus
# (ctest -L fuzz; tests/fuzz/). Extra arguments go to the release ctest (e.g. -L unit,
# -R tst_moe), and then the fuzz stage is left out.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
(cd build/release && ctest --output-on-failure -j "$(nproc)" "$@")
[ $# -gt 0 ] && exit 0
scripts/build.sh fuzz
cd build/fuzz
exec ctest --output-on-failure -j "$(nproc)" -L fuzz
