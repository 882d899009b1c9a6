#!/usr/bin/env bash
# Runs example pipelines on a GPU machine with a runner binary built elsewhere (the GPU machine
# needs no cargo), then packs their run directories and reports for the trip back.
#
#   examples/run-on-gpu.sh [PIPELINE...]     (default: both examples)
#
# RUNNER names the binary (default target/release/exhibit); OUT the folder for the results
# (default /tmp/exhibit-examples); BUDGET the seconds each pipeline may take (default 540): a
# pipeline still running then is interrupted, and its run directory says so.
set -u
cd "$(dirname "$0")/.."
runner=${RUNNER:-target/release/exhibit}
out=${OUT:-/tmp/exhibit-examples}
budget=${BUDGET:-540}
mkdir -p "$out"
[ $# -gt 0 ] || set -- examples/cuda-cpp/pipeline.yaml examples/torch-extension/pipeline.yaml
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -1
  compute-sanitizer --version | tail -1
  ncu --version | tail -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} >"$out/env.txt" 2>&1
for pipeline in "$@"; do
  name=$(basename "$(dirname "$pipeline")")
  start=$(date +%s)
  timeout -s INT "$budget" "$runner" "$pipeline" >"$out/$name.log" 2>&1
  code=$?
  echo "$pipeline: exit $code in $(($(date +%s) - start)) s" | tee -a "$out/summary.txt"
done
dirs=$(for pipeline in "$@"; do d=$(dirname "$pipeline"); echo "$d/artifacts $d/reports"; done)
# shellcheck disable=SC2086
tar czf "$out/runs.tgz" $dirs 2>/dev/null
ls -la "$out"
