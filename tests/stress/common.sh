# Shared by the crash and concurrency tests: a scratch directory, a clang
# that counts its compiles, and the shape they warm. Sourced; $1 of the
# caller is the uqjit binary.
set -euo pipefail

uqjit=$1
real_clang=$(command -v "${UQJIT_CLANG:-clang-22}" || true)
if [ -z "$real_clang" ]; then
  echo "SKIP: no offline clang (clang-22)"
  exit 77
fi
unset UQJIT_CACHE_PATH UQJIT_DISABLE_JIT
work=$(mktemp -d /tmp/uq-stress-XXXXXX)
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR"
cache=$work/cache
log=$work/compiles.log
: > "$log"
# Each line of $log is one compile (the process id of that clang run).
cat > "$work/clang" <<WRAP
#!/bin/sh
[ "\$1" = --version ] || echo \$\$ >> "$log"
exec "$real_clang" "\$@"
WRAP
chmod +x "$work/clang"
export UQJIT_CLANG=$work/clang
# Every AMD target through clang (gfx90a would otherwise take hipRTC).
export UQJIT_AMD_COMPILER=clang
export UQJIT_QUIET=1

# Three AMD targets of one shape: decode and reduce kernels for each, plus
# the shared store kernels.
warm_args=(--batch 4 --q-heads 32 --kv-heads 4 --head-dim 256 --block-size 16
           --max-blocks-per-seq 64 --target gfx942,gfx950,gfx90a)

# The number of distinct kernels the shape warms.
count_keys() {
  "$uqjit" warm "${warm_args[@]}" --cache-dir "$work/none" --dry-run --json |
    sed -n 's/.*"keys": \([0-9]*\).*/\1/p'
}

# "good bad" from `uqjit cache verify --json`: the totals, ahead of the
# per-layer counts.
verify_counts() {
  # A warm killed before it made the cache directory left nothing to
  # check (`cache verify` refuses a directory that does not exist).
  if [ ! -e "$cache" ]; then
    echo "0 0"
    return
  fi
  "$uqjit" cache verify --cache-dir "$cache" --json |
    sed -n 's/^[^[]*"good": \([0-9]*\), "bad": \([0-9]*\).*/\1 \2/p'
}

# Waits (at most 60 s) until no clang logged in $log still runs: a killed
# uqjit leaves its compiler to finish on its own.
wait_compilers() {
  for _ in $(seq 600); do
    local alive=0
    while read -r pid; do
      if kill -0 "$pid" 2>/dev/null; then alive=1; break; fi
    done < "$log"
    [ "$alive" -eq 0 ] && return 0
    sleep 0.1
  done
  echo "FAIL: compilers still running after 60 s"
  return 1
}
