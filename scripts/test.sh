#!/usr/bin/env bash
# Installs dependencies, builds the release preset and runs every test with CTest.
# Extra arguments go to ctest (e.g. -L unit, -R tst_moe).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
cd build/release
exec ctest --output-on-failure -j "$(nproc)" "$@"
