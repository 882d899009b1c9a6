#!/usr/bin/env bash
# Builds slow.cu once per slowness class and captures Nsight Compute's full set on the kernel
# that class slows down: the report (.ncu-rep), its details page and its source page (CUDA and
# SASS, per instruction), as CSV. Run on a GPU machine from this folder:
#   OUT=<folder> bash capture.sh
# Writes <OUT>/slow-kernels.tar.gz; each capture has a .meta.json sidecar.
set -uo pipefail
out=${OUT:?set OUT}
work=$(mktemp -d)
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)
nvcc_version=$(nvcc --version | tail -n 1)
ncu_version=$(ncu --version | tail -n 1)
# class -> kernel it slows down
# (CLASSES, when set, names the classes to capture: "regs no_tensor".)
for pair in bank:transpose uncoalesced:transpose local:lookup_sum few_blocks:reduce \
            smem_occ:staged_scale regs:poly small_blocks:axpb no_tensor:matmul \
            none:transpose none_poly:poly none_matmul:matmul; do
  class=${pair%%:*} kernel=${pair#*:}
  case " ${CLASSES:-$class} " in *" $class "*) ;; *) continue ;; esac
  nvcc -O3 -lineinfo -arch=sm_90 -Xptxas -v -DSLOW_$class -o "$work/$class" src/slow.cu \
    > "$work/$class.ptxas.log" 2>&1
  start=$(date +%s.%N)
  ncu --set full --import-source yes -k "regex:^$kernel\$" -c 1 -f -o "$work/$class" \
    "$work/$class" > "$work/$class.ncu.stdout.log" 2>&1
  code=$?
  end=$(date +%s.%N)
  ncu --import "$work/$class.ncu-rep" --csv --page details > "$work/$class.details.csv" 2>&1
  ncu --import "$work/$class.ncu-rep" --csv --page source --print-source cuda,sass \
    > "$work/$class.source.csv" 2>&1
  sed -i "s#$work#<build>#g; s#$PWD#<repo>/examples/slow-kernels#g" "$work/$class".*.csv "$work/$class".*.log
  python3 - "$work/$class.meta.json" "$class" "$kernel" "$code" "$start" "$end" "$gpu" "$nvcc_version" "$ncu_version" <<'PY'
import json, sys
path, cls, kernel, code, start, end, gpu, nvcc, ncu = sys.argv[1:10]
json.dump({"program": "examples/slow-kernels/src/slow.cu built with -DSLOW_" + cls,
           "commands": ["nvcc -O3 -lineinfo -arch=sm_90 -Xptxas -v -DSLOW_%s -o <build>/%s src/slow.cu" % (cls, cls),
                        "ncu --set full --import-source yes -k regex:^%s$ -c 1 -f -o <build>/%s <build>/%s" % (kernel, cls, cls),
                        "ncu --import <build>/%s.ncu-rep --csv --page details" % cls,
                        "ncu --import <build>/%s.ncu-rep --csv --page source --print-source cuda,sass" % cls],
           "ncu_exit_code": int(code), "profiling_seconds": round(float(end) - float(start), 2),
           "gpu": gpu, "nvcc": nvcc, "ncu": ncu,
           "note": "captured by examples/slow-kernels/capture.sh; machine paths replaced by <build> and <repo>"},
          open(path, "w"), indent=2)
PY
  echo "$class: ncu exit $code, $(wc -l < "$work/$class.source.csv") source rows"
done
tar czf "$out/slow-kernels.tar.gz" -C "$work" .
