#!/usr/bin/env bash
# Validates the harness on a GPU machine in one go: probe, check (dtypes, masks, random shapes,
# head dims), stress (three sync policies), bench (warm/cold, events/graph), once under
# compute-sanitizer memcheck, and the fault corpus. Writes one JSON document per run and a log.
# Usage: gpu_validate.sh <harness-binary> <cubin-dir> <out-dir> [section ...]
#   sections: check stress bench memcheck faults planted (default: all but planted)
#   <cubin-dir> holds d64_m64_n64_s2_w4.cubin, d64_m128_n64_s2_w4.cubin,
#   d128_m128_n32_s2_w4.cubin, fault_<name>.cubin (each built with -DBLOCK_M=128
#   -DBLOCK_N=64 -DSTAGES=2 -DWARPS=4 -DHEAD_DIM=64) and, for `planted`, planted_<variant>.cubin
#   built from crates/harness/tests/fixtures/planted.cu with -DHEAD_DIM=64 and
#   clean: -DPLANT_FROM_LAUNCH=0, after1: =1, after3: =3, before1: =1 -DPLANT_OFFSET=-1.
set -uo pipefail
bin="${1:?usage: gpu_validate.sh <harness> <cubin-dir> <out-dir>}"
cubins="${2:?cubin dir}"
out="${3:?out dir}"
shift 3
sections=" ${*:-check stress bench memcheck faults} "
want() { case "$sections" in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
mkdir -p "$out/json"
summary="$out/summary.txt"
: >"$summary"

run() { # run <name> <timeout-s> <harness args...>
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$bin" "$@" --json --out "$out/json/$name.json" >/dev/null 2>"$out/json/$name.stderr"
  local rc=$?
  printf '%-44s rc=%-3s %3ss  %s\n' "$name" "$rc" "$((SECONDS - start))" \
    "$(head -c 300 "$out/json/$name.stderr" | tr '\n' ' ')" | tee -a "$summary"
}

echo "== versions"
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
nvcc --version | tail -2
compute-sanitizer --version | head -2

echo "== probe"
"$bin" --probe --out "$out/json/probe.json" | head -40

s64=2,8,512,64
c=$cubins/d64_m128_n64_s2_w4.cubin
if want check; then
echo "== check"
for cfg in d64_m64_n64_s2_w4 d64_m128_n64_s2_w4; do
  for dt in f16 bf16; do
    run "check_${cfg}_${dt}" 120 --cubin "$cubins/$cfg.cubin" --shape $s64 --dtype $dt --mode check --random-shapes 8 --config $cfg
    run "check_${cfg}_${dt}_causal" 120 --cubin "$cubins/$cfg.cubin" --shape $s64 --dtype $dt --causal --mode check --config $cfg
  done
done
for dt in f16 bf16; do
  run "check_d128_${dt}" 120 --cubin "$cubins/d128_m128_n32_s2_w4.cubin" --shape 2,8,512,128 --dtype $dt --mode check --random-shapes 8
  run "check_d128_${dt}_causal" 120 --cubin "$cubins/d128_m128_n32_s2_w4.cubin" --shape 2,8,512,128 --dtype $dt --causal --mode check
done
run check_d128_bf16_large_causal 120 --cubin "$cubins/d128_m128_n32_s2_w4.cubin" --shape 4,16,4096,128 --dtype bf16 --causal --mode check
run check_d64_shape_mismatch 60 --cubin "$cubins/d64_m128_n64_s2_w4.cubin" --shape 2,8,512,128 --dtype f16 --mode check
fi

if want stress; then
echo "== stress"
for sync in every every:10 end; do
  run "stress_d64_${sync/:/_}" 120 --cubin "$cubins/d64_m128_n64_s2_w4.cubin" --shape $s64 --dtype f16 --mode stress --launches 100 --sync $sync
done
fi

if want bench; then
echo "== bench"
run bench_seed_warm_events 60 --cubin "$c" --shape $s64 --dtype f16 --mode bench --max-seconds 2
run bench_seed_warm_graph 60 --cubin "$c" --shape $s64 --dtype f16 --mode bench --timing graph --max-seconds 2
run bench_seed_cold_events 60 --cubin "$c" --shape $s64 --dtype f16 --mode bench --cache cold --max-seconds 2
run bench_seed_warm_events_repeat 60 --cubin "$c" --shape $s64 --dtype f16 --mode bench --max-seconds 2
run bench_4k_d64_bf16 60 --cubin "$c" --shape 4,16,4096,64 --dtype bf16 --mode bench --max-seconds 2
run bench_4k_d64_bf16_causal 60 --cubin "$c" --shape 4,16,4096,64 --dtype bf16 --causal --mode bench --max-seconds 2
run bench_4k_d128_bf16 60 --cubin "$cubins/d128_m128_n32_s2_w4.cubin" --shape 4,16,4096,128 --dtype bf16 --mode bench --max-seconds 2
run bench_4k_d128_bf16_causal 60 --cubin "$cubins/d128_m128_n32_s2_w4.cubin" --shape 4,16,4096,128 --dtype bf16 --causal --mode bench --max-seconds 2
run bench_seed_cold_graph 60 --cubin "$c" --shape $s64 --dtype f16 --mode bench --cache cold --timing graph --max-seconds 2
run bench_seed_auto 60 --cubin "$c" --shape $s64 --dtype f16 --mode bench --timing auto --max-seconds 2
fi

if want memcheck; then
echo "== once under memcheck"
start=$SECONDS
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 86 "$bin" --cubin "$c" --shape $s64 --dtype f16 \
  --mode once --guard-bytes 0 --json --out "$out/json/once_memcheck.json" >"$out/memcheck.txt" 2>&1
echo "once_memcheck rc=$? $((SECONDS - start))s $(grep -E 'ERROR SUMMARY' "$out/memcheck.txt")" | tee -a "$summary"
fi

if want faults; then
echo "== fault corpus"
f=$cubins
run fault_tail_check 60 --cubin "$f/fault_tail_off_by_one.cubin" --shape 2,8,500,64 --dtype f16 --mode check --random-shapes 4
run fault_nan_check 60 --cubin "$f/fault_nan_masked_rows.cubin" --shape $s64 --dtype f16 --causal --mode check
run fault_uninit_check 60 --cubin "$f/fault_uninit_row_sum.cubin" --shape $s64 --dtype f16 --mode check
run fault_uninit_stress 60 --cubin "$f/fault_uninit_row_sum.cubin" --shape $s64 --dtype f16 --mode stress --launches 20
run fault_barrier_stress 60 --cubin "$f/fault_missing_kv_barrier.cubin" --shape 4,16,1024,64 --dtype f16 --mode stress --launches 50
run fault_barrier_check 60 --cubin "$f/fault_missing_kv_barrier.cubin" --shape 4,16,1024,64 --dtype f16 --mode check
run fault_ring_stress_every 60 --cubin "$f/fault_launch_counter_ring.cubin" --shape $s64 --dtype f16 --mode stress --launches 40
run fault_ring_stress_end 60 --cubin "$f/fault_launch_counter_ring.cubin" --shape $s64 --dtype f16 --mode stress --launches 40 --sync end
run fault_wmma_once 60 --cubin "$f/fault_wmma_local_q.cubin" --shape $s64 --dtype f16 --mode once
run fault_wmma_stress 60 --cubin "$f/fault_wmma_local_q.cubin" --shape $s64 --dtype f16 --mode stress --launches 10
run fault_wmma_check 60 --cubin "$f/fault_wmma_local_q.cubin" --shape $s64 --dtype f16 --mode check --random-shapes 2
fi

if want planted; then
echo "== planted out-of-bounds writes (tests/fixtures/planted.cu)"
p=$cubins
run planted_clean_check 60 --cubin "$p/planted_clean.cubin" --shape 2,4,200,64 --dtype f16 --mode check --random-shapes 4
run planted_clean_check_bf16 60 --cubin "$p/planted_clean.cubin" --shape 2,4,200,64 --dtype bf16 --causal --mode check
run planted_clean_stress_end 60 --cubin "$p/planted_clean.cubin" --shape 2,4,200,64 --dtype f16 --mode stress --launches 20 --sync end
run planted_after1_check 60 --cubin "$p/planted_after1.cubin" --shape 2,4,200,64 --dtype f16 --mode check
run planted_before1_check 60 --cubin "$p/planted_before1.cubin" --shape 2,4,200,64 --dtype f16 --mode check
run planted_after1_once 60 --cubin "$p/planted_after1.cubin" --shape 2,4,200,64 --dtype f16 --mode once
for sync in every every:4 end; do
  run "planted_after3_stress_${sync/:/_}" 60 --cubin "$p/planted_after3.cubin" --shape 2,4,200,64 --dtype f16 --mode stress --launches 10 --sync $sync
done
for guard in 0 65536; do
  start=$SECONDS
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 86 "$bin" --cubin "$p/planted_after1.cubin" \
    --shape 2,4,200,64 --dtype f16 --mode once --guard-bytes $guard --json --out "$out/json/planted_memcheck_guard$guard.json" \
    >"$out/planted_memcheck_guard$guard.txt" 2>&1
  echo "planted_memcheck_guard$guard rc=$? $((SECONDS - start))s $(grep -E 'ERROR SUMMARY' "$out/planted_memcheck_guard$guard.txt")" | tee -a "$summary"
done
fi

echo "== done"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv
cat "$summary"
python3 - "$out/json" <<'PY' | tee "$out/table.txt"
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    try:
        doc = json.loads(f.read_text())
    except Exception as e:
        print(f"{f.stem}: unreadable ({e})"); continue
    for r in doc.get("results", []):
        d = r.get("details", {})
        s = r["shape"]
        line = f"{f.stem[:34]:34} {s['batch']},{s['heads']},{s['seq_len']},{s['head_dim']} {r['dtype']}{' c' if r['causal'] else ''}"
        if r.get("check"):
            c = r["check"]
            line += f" pass={c['passed']} rel={c['rel_l2_err']:.2e} abs={c['max_abs_err']:.2e} ratio={d.get('worst_bound_ratio', 0):.2f} nan={c['nan_count']} unw={c['unwritten']} can={c['canaries_corrupted']}"
        if r.get("stress"):
            t = r["stress"]
            line += f" mism={t['mismatched_launches']} first={t['first_failure']} kind={t['failure_kind']} can={t['canaries_corrupted']} win={d.get('failure_window')}"
        if r.get("bench"):
            b = r["bench"]
            line += f" {b['cache']}/{b['timing']} p50={b['p50_us']:.2f} min={b['min_us']:.2f} p99={b['p99_us']:.2f} n={b['samples']} {b['tflops']:.1f}TF {b['gbps']:.0f}GB/s clk={b['sm_clock_mhz_before']}->{b['sm_clock_mhz_after']} stop={d.get('stop_reason')} noise={d.get('median_ci_rel')} peak={d.get('peak_copy_gbps')}"
        if r.get("error"):
            line += f" ERR={r['error']}"
        if r.get("skipped"):
            line += " SKIPPED"
        if r["mode"] == "once":
            line += f" launched={r['launched']} unw={d.get('unwritten')} nan={d.get('nan_count')} can={d.get('canaries_corrupted')}"
        print(line)
PY
