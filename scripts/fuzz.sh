#!/usr/bin/env bash
# Fuzzes uqjit's parsers with libFuzzer under ASan and UBSan.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   run each target SECONDS (default 60)
#   scripts/fuzz.sh --check                 exit 0 when a fuzzing clang exists
#
# Targets (tests/fuzz/fuzz_<target>.c, seed corpora in tests/fuzz/<target>/):
# key_name, cache_entry, plan, cli_shape, hf_config; default all of them.
# FUZZ_CC names the clang (default: the first of clang-14, clang-22, clang
# that links -fsanitize=fuzzer; Debian's clang-14 does with
# libclang-rt-14-dev). The build goes to build-fuzz (FUZZ_BUILD). New inputs
# found stay in build-fuzz/corpus/<target>; FUZZ_MERGE=1 merges them back
# into the seed corpus. A crash leaves its input in build-fuzz/artifacts/ and
# makes the script exit 1. Prints one line per target: seconds, executions.
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(key_name cache_entry plan cli_shape hf_config)
build=${FUZZ_BUILD:-build-fuzz}

probe() {
  local cc=$1 dir
  command -v "$cc" >/dev/null 2>&1 || return 1
  dir=$(mktemp -d)
  printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' > "$dir/p.c"
  "$cc" -fsanitize=fuzzer,address,undefined "$dir/p.c" -o "$dir/p" >/dev/null 2>&1
  local rc=$?
  rm -rf "$dir"
  return $rc
}

fuzz_cc=${FUZZ_CC:-}
if [ -z "$fuzz_cc" ]; then
  for c in clang-14 clang-22 clang; do
    if probe "$c"; then fuzz_cc=$c; break; fi
  done
elif ! probe "$fuzz_cc"; then
  fuzz_cc=
fi

if [ "${1:-}" = "--check" ]; then
  [ -n "$fuzz_cc" ] && { echo "fuzz: using $fuzz_cc"; exit 0; }
  echo "fuzz: no clang links -fsanitize=fuzzer (apt-get install clang-14 libclang-rt-14-dev)"
  exit 1
fi
if [ -z "$fuzz_cc" ]; then
  echo "fuzz: no clang links -fsanitize=fuzzer (apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 2
fi

seconds=${1:-60}
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=("${all_targets[@]}")

if [ ! -d "$build" ]; then
  CC=$fuzz_cc meson setup "$build" -Dtests=enabled -Dbuildtype=debugoptimized \
    -Db_sanitize=address,undefined -Db_lundef=false \
    -Dc_args=-fsanitize=fuzzer-no-link >/dev/null
fi
meson compile -C "$build" -j "${FUZZ_JOBS:-2}" \
  $(for t in "${targets[@]}"; do echo "tests/fuzz/fuzz_$t"; done) >/dev/null

mkdir -p "$build/artifacts"
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export UQJIT_QUIET=1
status=0
total=0
printf '%-12s %8s %12s %s\n' target seconds executions result
for t in "${targets[@]}"; do
  exe="$build/tests/fuzz/fuzz_$t"
  work="$build/corpus/$t"
  log="$build/fuzz-$t.log"
  mkdir -p "$work"
  # -close_fd_mask=3: the parsers' usage messages would drown the log;
  # libFuzzer and the sanitizers keep their own copy of stderr.
  set +e
  "$exe" -max_total_time="$seconds" -print_final_stats=1 -close_fd_mask=3 \
    -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$build/artifacts/$t-" \
    "$work" "tests/fuzz/$t" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  result=ok
  if [ "$rc" -ne 0 ]; then
    result="FAILED (exit $rc, see $log)"
    status=1
    tail -40 "$log" >&2
  fi
  total=$((total + ${execs:-0}))
  printf '%-12s %8s %12s %s\n' "$t" "$seconds" "${execs:-?}" "$result"
  if [ "${FUZZ_MERGE:-0}" = 1 ] && [ "$rc" -eq 0 ]; then
    "$exe" -merge=1 -close_fd_mask=3 "tests/fuzz/$t" "$work" >/dev/null 2>&1 || true
  fi
done
echo "fuzz: $total executions in all"
exit $status
