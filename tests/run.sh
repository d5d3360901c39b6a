#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The full test suite: installs what is missing, builds, runs the unit and
# end-to-end tests and a SOAK_SECONDS (default 60) soak, repeats the unit and
# end-to-end tests under ASan+UBSan, runs every libFuzzer target for a bounded
# time, and ends with "N passed, N failed[, N skipped]".
set -uo pipefail
cd "$(dirname "$0")/.."
bash .ci/install-deps || { echo "0 passed, 1 failed"; exit 1; }

FUZZ_SECONDS=${FUZZ_SECONDS:-20}
SOAK_SECONDS=${SOAK_SECONDS:-60}
passed=0 failed=0 skipped=0

# meson test prints "Ok: N", "Fail: N", "Skipped: N" ... in its summary.
count_meson() {
  local log=$1 ok fail skip timeout
  ok=$(awk '/^Ok:/{print $2}' "$log"); fail=$(awk '/^Fail:/{print $2}' "$log")
  skip=$(awk '/^Skipped:/{print $2}' "$log"); timeout=$(awk '/^Timeout:/{print $2}' "$log")
  passed=$((passed + ${ok:-0})); failed=$((failed + ${fail:-0} + ${timeout:-0})); skipped=$((skipped + ${skip:-0}))
  if [ -z "$ok" ]; then failed=$((failed + 1)); fi   # the build itself failed
}

build() { # dir, setup args...
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then meson setup "$dir" "$@" >/dev/null || return 1; fi
  ninja -C "$dir" >/dev/null || { ninja -C "$dir" | tail -30; return 1; }
}

echo "== build and test (debugoptimized)"
build build && meson test -C build --print-errorlogs 2>&1 | tee /tmp/fairgate-test.log | grep -E '^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout):'
count_meson /tmp/fairgate-test.log

# The soak suite is left out of a plain `meson test`; CI runs its short form
# (the full one: `meson test -C build --suite soak`, docs/testing.md).
echo "== soak, ${SOAK_SECONDS}s"
SOAK_SECONDS=$SOAK_SECONDS meson test -C build --suite soak --print-errorlogs 2>&1 | tee /tmp/fairgate-soak.log |
  grep -E '^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout):'
count_meson /tmp/fairgate-soak.log

# The benchmarks' short forms (bench/meson.build: --quick), so that they
# cannot rot; the dataplane harness's short form is the e2e test
# dataplane_bench.  Their figures are not judged here (docs/benchmarks.md).
echo "== benchmarks, short forms"
meson test -C build --benchmark --print-errorlogs 2>&1 | tee /tmp/fairgate-bench.log |
  grep -E '^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout):'
count_meson /tmp/fairgate-bench.log

echo "== ASan + UBSan build and test"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
build build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug &&
  meson test -C build-asan --print-errorlogs --timeout-multiplier 3 2>&1 | tee /tmp/fairgate-test-asan.log |
  grep -E '^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout):'
count_meson /tmp/fairgate-test-asan.log
unset ASAN_OPTIONS UBSAN_OPTIONS

echo "== libFuzzer targets, ${FUZZ_SECONDS}s each"
if CC=clang build build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false; then
  for target in proto netpkt settings control sim flowcontrol pending run etcd; do
    corpus=$(mktemp -d)
    cp tests/fuzz/corpus/$target/* "$corpus"/ 2>/dev/null
    if build-fuzz/tests/fuzz_$target -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 \
        -artifact_prefix=/tmp/fairgate-fuzz-$target- "$corpus" \
        >/tmp/fairgate-fuzz-$target.log 2>&1; then
      echo "ok   fuzz_$target ($(grep -o 'Done [0-9]* runs' /tmp/fairgate-fuzz-$target.log))"
      passed=$((passed + 1))
    else
      echo "FAIL fuzz_$target (log: /tmp/fairgate-fuzz-$target.log)"; tail -30 /tmp/fairgate-fuzz-$target.log
      failed=$((failed + 1))
    fi
    rm -rf "$corpus"
  done
else
  echo "FAIL fuzz build"; failed=$((failed + 1))
fi

if [ "$skipped" -gt 0 ]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
