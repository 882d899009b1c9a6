#!/usr/bin/env bash
# Builds every named config of attention.cu (and every fault variant) into <out>/, printing the
# ptxas resource line per entry point and the SASS inventory (HMMA, LDSM, LDGSTS, LDL, STL).
# Usage: kernel/dev/build.sh <out-dir> [config-name ...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
kernel="$(dirname "$here")"
out="${1:?usage: build.sh <out-dir> [config ...]}"
shift || true
mkdir -p "$out"

# name:HEAD_DIM:BLOCK_M:BLOCK_N:STAGES:WARPS[:extra nvcc flags]
configs=(
  "d64_m128_n64_s2_w4:64:128:64:2:4"
  "d64_m128_n96_s2_w4:64:128:96:2:4"
  "d64_m64_n128_s2_w4:64:64:128:2:4"
  "d64_m64_n64_s2_w4:64:64:64:2:4"
  "d128_m128_n48_s2_w4:128:128:48:2:4"
  "d128_m128_n32_s2_w4:128:128:32:2:4"
  "d128_m64_n64_s2_w4:128:64:64:2:4"
)
# Configs that spill (x_) and experiments (e_), built with EXPERIMENTS=1 for comparison only.
if [ "${EXPERIMENTS:-0}" = 1 ]; then
  configs+=(
    "x_d64_m128_n128_s2_w4:64:128:128:2:4"
    "x_d128_m128_n64_s2_w4:128:128:64:2:4"
    "e_d64_m128_n64_s3_w4:64:128:64:3:4"
    "e_d64_m128_n64_s2_w4_q0:64:128:64:2:4:-DQ_IN_REGS=0"
    "e_d64_m128_n64_s3_w8:64:128:64:3:8"
    "e_d64_m128_n128_s2_w8:64:128:128:2:8"
    "e_d64_m32_n64_s2_w2:64:32:64:2:2"
    "e_d128_m128_n48_s3_w4:128:128:48:3:4"
    "e_d128_m128_n32_s3_w4:128:128:32:3:4"
    "e_d128_m128_n64_s2_w8:128:128:64:2:8"
  )
fi
if [ "$#" -gt 0 ]; then
  wanted=" $* "
  sel=()
  for c in "${configs[@]}"; do
    case "$wanted" in *" ${c%%:*} "*) sel+=("$c") ;; esac
  done
  configs=("${sel[@]}")
fi

inventory() {
  local cubin="$1"
  local sass
  sass="$(cuobjdump -sass "$cubin")"
  printf '  sass: HMMA=%s LDSM=%s LDGSTS=%s LDL=%s STL=%s BPT=%s\n' \
    "$(grep -c 'HMMA' <<<"$sass" || true)" "$(grep -c 'LDSM' <<<"$sass" || true)" \
    "$(grep -c 'LDGSTS' <<<"$sass" || true)" "$(grep -c 'LDL' <<<"$sass" || true)" \
    "$(grep -c 'STL' <<<"$sass" || true)" "$(grep -c 'BPT.TRAP' <<<"$sass" || true)"
}

build() {
  local src="$1" name="$2" d="$3" bm="$4" bn="$5" st="$6" w="$7"
  shift 7
  local cubin="$out/$name.cubin"
  nvcc -cubin -O3 -lineinfo -arch=sm_90 -Xptxas -v \
    -DBLOCK_M="$bm" -DBLOCK_N="$bn" -DSTAGES="$st" -DWARPS="$w" -DHEAD_DIM="$d" "$@" \
    -o "$cubin" "$src" >"$out/$name.ptxas.txt" 2>&1 || { cat "$out/$name.ptxas.txt"; return 1; }
  echo "$name"
  # One line per entry point: registers, stack frame, spill stores/loads; then any warning.
  awk '/Compiling entry function/ { match($0, /\047[^\047]+\047/); fn = substr($0, RSTART + 1, RLENGTH - 2) }
       /bytes stack frame/ { stack = $1; st = $5; ld = $9 }
       /Used [0-9]+ registers/ { for (i = 1; i <= NF; i++) if ($(i) == "Used") regs = $(i + 1)
         printf "  %-22s regs=%s stack=%s spill_stores=%s spill_loads=%s\n", fn, regs, stack, st, ld }' \
    "$out/$name.ptxas.txt"
  grep -i 'warning' "$out/$name.ptxas.txt" | sed -E 's#^[^ ]*/include/#  <cuda>/include/#; s#^warning: [^ ]*/include/#  warning: <cuda>/include/#' | sort -u || true
  inventory "$cubin"
}

for c in "${configs[@]}"; do
  IFS=: read -r name d bm bn st w extra <<<"$c"
  # shellcheck disable=SC2086
  build "$kernel/attention.cu" "$name" "$d" "$bm" "$bn" "$st" "$w" $extra
done

if [ "${FAULTS:-1}" = 1 ]; then
  for f in "$kernel"/faults/*.cu; do
    [ -e "$f" ] || continue
    base="$(basename "$f" .cu)"
    build "$f" "fault_${base}_d64" 64 128 64 2 4 || true
    build "$f" "fault_${base}_d128" 128 128 32 2 4 || true
  done
fi
