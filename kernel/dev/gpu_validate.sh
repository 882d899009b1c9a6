#!/usr/bin/env bash
# Runs on the GPU machine from the repository root: correctness, timing, SDPA baseline, fault
# behaviour and compute-sanitizer runs for cubins built by kernel/dev/build.sh.
# Usage: kernel/dev/gpu_validate.sh <cubin-dir> <attn_check-binary> <out-dir> [phase ...]
# Phases: env check bench sdpa faults sanfaults sanmain (default: all). Each phase writes <out>/<phase>.log.
set -uo pipefail
cubins="$1"
checker="$2"
out="$3"
shift 3
phases="${*:-env check bench sdpa faults sanfaults sanmain}"
mkdir -p "$out"
has() { case " $phases " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
named() {
  local f
  for f in "$cubins"/d64_*.cubin "$cubins"/d128_*.cubin "$cubins"/[xe]_d64_*.cubin "$cubins"/[xe]_d128_*.cubin; do
    [ -e "$f" ] && basename "$f" .cubin
  done
}
dim_of() { sed -E 's/^([xe]_)?d([0-9]+)_.*/\2/' <<<"$1"; }

if has env; then
  {
    date -u +%Y-%m-%dT%H:%M:%SZ
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
    nvcc --version | tail -2
    compute-sanitizer --version | head -2
    ncu --version | tail -1
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  } >"$out/env.log" 2>&1
  cat "$out/env.log"
fi

if has check; then
  for c in ${CHECK_CONFIGS:-$(named)}; do
    d=$(dim_of "$c")
    shapes="1,1,1,$d:1,2,17,$d:2,3,64,$d:1,2,100,$d:2,2,128,$d:1,3,333,$d:2,8,512,$d:1,2,1000,$d:1,1,2111,$d:1,4,4096,$d"
    timeout 120 "$checker" "$cubins/$c.cubin" check --dtype f16,bf16 --causal 0,1 --shape "$shapes" --max-rows 384
    echo "exit=$? config=$c"
  done >"$out/check.log" 2>&1
  grep -c 'passed=1' "$out/check.log" | sed 's/^/check passed: /'
  grep -E 'passed=0|error|exit=[^0]' "$out/check.log" | head -20
fi

if has bench; then
  for c in $(named); do
    d=$(dim_of "$c")
    if [ "$d" = 64 ]; then
      timeout 60 "$checker" "$cubins/$c.cubin" bench --dtype f16 --causal 0 --shape 2,8,512,64
    fi
    timeout 60 "$checker" "$cubins/$c.cubin" bench --dtype bf16 --causal 0,1 --shape "4,16,4096,$d" --time-cap 2
  done >"$out/bench.log" 2>&1
  sed -E 's/cubin=[^ ]*\/([^ /]*)\.cubin/\1/; s/ (bm|bn|stages|threads|smem|rounds|per_round|min_us|max_us)=[^ ]*//g' "$out/bench.log"
fi

if has sdpa; then
  {
    python3 kernel/baselines/sdpa.py --shape 2,8,512,64 --dtype f16 --json --time-cap 2
    for d in 64 128; do
      python3 kernel/baselines/sdpa.py --shape "4,16,4096,$d" --dtype bf16 --json --time-cap 1
      python3 kernel/baselines/sdpa.py --shape "4,16,4096,$d" --dtype bf16 --causal --json --time-cap 1
    done
  } >"$out/sdpa.jsonl" 2>"$out/sdpa.err"
  echo "sdpa exit=$?"
  python3 - "$out/sdpa.jsonl" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
dec = json.JSONDecoder(); i = 0
while i < len(text):
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    doc, i = dec.raw_decode(text, i)
    for r in doc["results"]:
        s = r["shape"]; b = r["bench"]
        head = f'{r["kernel"]:<15} {s["batch"]},{s["heads"]},{s["seq_len"]},{s["head_dim"]} {r["dtype"]} causal={int(r["causal"])}'
        if b: print(f'{head} {b["timing"]:<6} p50_us={b["p50_us"]:.2f} tflops={b["tflops"]:.1f} n={b["samples"]}')
        else: print(f'{head} skipped: {r["skipped"][:120]}')
PY
  tail -5 "$out/sdpa.err"
fi

if has faults; then
  f() { echo "### $*"; timeout 120 "$@" 2>&1 | tail -40; echo "exit=${PIPESTATUS[0]}"; }
  {
    for d in 64 128; do
      f "$checker" "$cubins/fault_wmma_local_q_d$d.cubin" once --dtype f16 --shape "2,8,512,$d"
      f "$checker" "$cubins/fault_wmma_local_q_d$d.cubin" once --dtype bf16 --shape "2,8,512,$d"
      f "$checker" "$cubins/fault_missing_kv_barrier_d$d.cubin" check --dtype f16 --causal 0,1 --shape "2,8,512,$d:4,16,2048,$d"
      f "$checker" "$cubins/fault_missing_kv_barrier_d$d.cubin" stress --dtype f16 --shape "4,16,2048,$d" --launches 10
      f "$checker" "$cubins/fault_launch_counter_ring_d$d.cubin" stress --dtype f16 --shape "2,8,512,$d" --launches 40
      f "$checker" "$cubins/fault_uninit_row_sum_d$d.cubin" check --dtype f16 --causal 0 --shape "2,8,512,$d"
      f "$checker" "$cubins/fault_uninit_row_sum_d$d.cubin" stress --dtype f16 --shape "2,8,512,$d" --launches 5
      f "$checker" "$cubins/fault_nan_masked_rows_d$d.cubin" check --dtype f16,bf16 --causal 0,1 --shape "2,8,512,$d:1,2,100,$d"
      f "$checker" "$cubins/fault_tail_off_by_one_d$d.cubin" check --dtype f16,bf16 --causal 0,1 --shape "1,2,100,$d:1,2,128,$d:1,2,17,$d"
    done
  } >"$out/faults.log" 2>&1
  grep -E '^###|^(once|check|stress) |^error|exit=' "$out/faults.log" |
    sed -E 's/cubin=[^ ]*\/([^ /]*)\.cubin/\1/; s/ (bm|bn|stages|threads|smem|rows)=[^ ]*//g; s/^### .*\/(fault_[a-z_0-9]+)\.cubin/### \1/'
fi

cs() {
  local tool="$1" name="$2"
  shift 2
  echo "### $tool $name $*"
  timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 86 --print-limit 20 "$@" >"$out/san_${tool}_${name}.log" 2>&1
  echo "exit=$?"
  grep -E '^========= ' "$out/san_${tool}_${name}.log" | grep -vE '^========= +(at|by|in|Host|Device|Saved|=|Address|[0-9#])' |
    sed -E 's/0x[0-9a-f]+/0x../g; s/\([0-9]+,[0-9]+,[0-9]+\)/(..)/g' | sort | uniq -c | sort -rn | head -8
}

if has sanfaults; then
  {
    cs memcheck wmma_local_q "$checker" "$cubins/fault_wmma_local_q_d64.cubin" once --dtype f16 --shape 1,2,64,64
    cs racecheck missing_kv_barrier "$checker" "$cubins/fault_missing_kv_barrier_d64.cubin" once --dtype f16 --shape 1,1,256,64
    cs memcheck launch_counter_ring "$checker" "$cubins/fault_launch_counter_ring_d64.cubin" stress --dtype f16 --shape 2,8,512,64 --launches 6
    cs initcheck uninit_row_sum "$checker" "$cubins/fault_uninit_row_sum_d64.cubin" once --dtype f16 --shape 1,2,100,64
    cs memcheck tail_off_by_one "$checker" "$cubins/fault_tail_off_by_one_d64.cubin" once --dtype f16 --shape 1,2,100,64 --guard-bytes 0
  } >"$out/sanfaults.log" 2>&1
  cat "$out/sanfaults.log"
fi

if has sanmain; then
  {
    for c in ${SAN_CONFIGS:-d64_m128_n64_s2_w4 d128_m128_n32_s2_w4}; do
      d=$(dim_of "$c")
      for tool in memcheck racecheck initcheck synccheck; do
        cs "$tool" "$c" "$checker" "$cubins/$c.cubin" once --dtype f16,bf16 --causal 0,1 --shape "1,2,100,$d"
      done
    done
  } >"$out/sanmain.log" 2>&1
  cat "$out/sanmain.log"
fi
