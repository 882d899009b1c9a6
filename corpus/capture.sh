#!/bin/sh
# Captures the field corpus on a GPU machine: runs each entry's pipeline.yaml in its upstream
# checkout (prepared under .corpus-src/<entry>/ as each SOURCE.md says) and the project's own
# class programs (examples/...), all at once (BUDGET: the seconds each may take, default 560), and packs every run directory
# (manifest, logs, report) into $OUT/<entry>.tgz. SERIAL=1 runs them one after another, for
# entries whose timings or Nsight Compute replays must have the GPU to themselves.
# Usage: corpus/capture.sh RUNNER ENTRY...
set -u
runner=$(realpath "$1")
shift
out=${OUT:-/tmp/corpus-out}
mkdir -p "$out"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -2
  compute-sanitizer --version | tail -1
  ncu --version | tail -1
  python3 -c 'import torch; print("torch", torch.__version__)'
  date -u +%FT%TZ
} > /tmp/environment.txt 2>&1
one() {
  name=$1 pipeline=$2
  dir=$(dirname "$pipeline")
  (cd "$dir" && timeout "${BUDGET:-560}" "$runner" pipeline.yaml > runner.out 2>&1; echo "runner exit $?" >> runner.out)
  cp /tmp/environment.txt "$dir/environment.txt"
  tar -czf "$out/$name.tgz" -C "$dir" --exclude='*.so' --exclude='*.o' --exclude='*.ncu-rep' \
    --exclude='prog' --exclude='sgemm' --exclude='layernorm_forward' --exclude='softmax_k0' \
    --exclude='48_hopper_warp_specialized_gemm' --exclude='xsbench' artifacts reports runner.out environment.txt
  echo "== $name"; tail -5 "$dir/runner.out"
}
for entry in "$@"; do
  case $entry in
    examples/*) name=$(basename "$entry") pipeline=$entry/pipeline.yaml ;;
    *) name=$entry pipeline=$(find ".corpus-src/$entry" -name pipeline.yaml | head -1) ;;
  esac
  if [ "${SERIAL:-0}" = 1 ]; then one "$name" "$pipeline"; else one "$name" "$pipeline" & fi
done
wait
ls -la "$out"
