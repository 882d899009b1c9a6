#!/usr/bin/env bash
# Times a pipeline on a GPU machine with a runner binary built elsewhere: one unit at a time
# (-j 1), then concurrently (the default), both with --force so that every unit runs; then an
# unchanged re-run, twice (served from the cache); then the GPU-sharing stages alone at several
# --gpu-jobs values. Wall times go to $OUT/times.txt; the run directories and reports are packed.
#
#   examples/time-pipeline.sh [PIPELINE]      (default: pipeline.yaml)
#
# RUNNER names the binary (default target/release/exhibit); OUT the folder for the results
# (default /tmp/exhibit-times); GPU_JOBS the --gpu-jobs values to try (default "1 2 4 8").
set -u
cd "$(dirname "$0")/.."
runner=${RUNNER:-target/release/exhibit}
out=${OUT:-/tmp/exhibit-times}
pipeline=${1:-pipeline.yaml}
mkdir -p "$out"
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nproc
} >"$out/env.txt" 2>&1
timed() {
  local name=$1
  shift
  local start end ms
  start=$(date +%s%N)
  "$runner" "$pipeline" "$@" >"$out/$name.stdout" 2>"$out/$name.stderr"
  local code=$?
  end=$(date +%s%N)
  ms=$(((end - start) / 1000000))
  printf '%-24s exit %d  %d.%03d s  %s\n' "$name" "$code" $((ms / 1000)) $((ms % 1000)) "$*" |
    tee -a "$out/times.txt"
}
timed sequential --force -j 1
timed concurrent --force
timed rerun-1
timed rerun-2
shared=memcheck,racecheck,initcheck,synccheck,check,stress
for n in ${GPU_JOBS:-1 2 4 8}; do
  timed "gpu-jobs-$n" --force --only "$shared" --gpu-jobs "$n"
done
dir=$(dirname "$pipeline")
tar czf "$out/runs.tgz" "$dir/artifacts" "$dir/reports" 2>/dev/null
cat "$out/times.txt"
