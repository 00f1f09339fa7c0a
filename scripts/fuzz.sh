#!/usr/bin/env bash
# Fuzzes the readers of untrusted input with libFuzzer under ASan + UBSan (tests/fuzz/): builds
# the fuzz preset (clang), then runs each target for SECONDS (default 300) from its seed corpus
# tests/fuzz/corpus/<target>/ and reproducers tests/fuzz/regressions/<target>/. New corpus
# entries and crash files go to a scratch folder outside the repository, kept between runs so
# that a longer campaign goes on where the last one stopped:
#   $MOEBENCH_FUZZ_DIR (default /tmp/moebench-fuzz)/<target>/{corpus,findings,log.txt}
# Prints executions, coverage and findings per target; exits 1 when a target found a crash.
#   scripts/fuzz.sh                 every target, 300 s each (targets: config cluster safetensors bin_shard step_records)
#   scripts/fuzz.sh 3600 config     one target for an hour
#   scripts/fuzz.sh --seed-corpus   rewrites tests/fuzz/corpus/ with the core's writers (release build)
# A finding becomes a regression test: minimise it (build/fuzz/tests/fuzz/fuzz_<target>
# -minimize_crash=1 -runs=10000 FILE), fix the code, and commit the input under
# tests/fuzz/regressions/<target>/ (the release build replays it, label unit).
set -euo pipefail
cd "$(dirname "$0")/.."
all_targets=(config cluster safetensors bin_shard step_records)

if [ "${1:-}" = "--seed-corpus" ]; then
  scripts/build.sh release >/dev/null
  cmake --build --preset release --target fuzz_seed_corpus >/dev/null
  rm -rf tests/fuzz/corpus
  exec build/release/tests/fuzz/fuzz_seed_corpus . tests/fuzz/corpus
fi

seconds="${1:-300}"
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [ -f "tests/fuzz/fuzz_$t.cpp" ] || { echo "fuzz: unknown target $t (targets: ${all_targets[*]})" >&2; exit 2; }
done

scripts/build.sh fuzz >/dev/null
scratch="${MOEBENCH_FUZZ_DIR:-/tmp/moebench-fuzz}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" ASAN_OPTIONS="detect_leaks=1"
found=0
printf "%-13s %8s %12s %8s %8s %8s  %s\n" target seconds executions cov ft corpus findings
for t in "${targets[@]}"; do
  work="$scratch/$t"
  mkdir -p "$work/corpus" "$work/findings"
  inputs=("tests/fuzz/corpus/$t")
  [ -d "tests/fuzz/regressions/$t" ] && inputs+=("tests/fuzz/regressions/$t")
  before=$(find "$work/findings" -type f | wc -l)
  rc=0
  "build/fuzz/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$work/findings/" "$work/corpus" "${inputs[@]}" \
    >"$work/log.txt" 2>&1 || rc=$?
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$work/log.txt")
  last=$(grep -E '^#[0-9]+' "$work/log.txt" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corpus=$(find "$work/corpus" -type f | wc -l)
  new=$(( $(find "$work/findings" -type f | wc -l) - before ))
  printf "%-13s %8s %12s %8s %8s %8s  %s\n" "$t" "$seconds" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$corpus" \
    "$([ "$rc" -eq 0 ] && echo none || echo "$new in $work/findings (log: $work/log.txt)")"
  if [ "$rc" -ne 0 ]; then
    found=1
    grep -E 'ERROR: |SUMMARY: |fuzz_[a-z_]+: ' "$work/log.txt" | head -5 | sed 's/^/    /'
  fi
done
exit "$found"
