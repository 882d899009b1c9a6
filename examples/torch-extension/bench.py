#!/usr/bin/env python3
"""Times attn_ext.attn_fwd (or, with --sdpa, PyTorch's scaled_dot_product_attention).

    python3 bench.py [--build-dir DIR] [--sdpa] [--causal] [--shape B,H,S,D ...] [--json PATH]

Shapes (f16, head dim 64): the seed shape 2,8,512,64 and 4,16,2048,64, or those given with
--shape. Each is timed two ways, after WARMUP_CALLS warm-up calls:

  events  one call per sample between two CUDA events (includes host dispatch when the
          kernel is shorter than the dispatch);
  graph   a CUDA graph of GRAPH_CALLS calls, one replay per sample, time divided by
          GRAPH_CALLS (launch overhead mostly removed: the fair way for small shapes).

Sampling stops when the relative standard error of the mean is under 0.5 % (after at least
MIN_SAMPLES samples) or after --time-cap seconds. The statistics (median p50, percentiles,
TFLOP/s counting 4*B*H*S*S*D, halved when causal) go out as one exhibit.harness/1 document:
producer "attn_ext" and kernel "attn_fwd_kernel", or producer "sdpa" and kernel
"sdpa:default"; to stdout, or to --json PATH with a summary on stdout.

Exit status: 0 ok, 1 the extension is missing or a CUDA error, 2 usage, 4 no torch or GPU.
"""

import argparse
import dataclasses
import json
import math
import os
import statistics
import subprocess
import sys
import time

import extension

SCHEMA = "exhibit.harness/1"
KERNEL = "attn_fwd_kernel"
DEFAULT_SHAPES = ((2, 8, 512, 64), (4, 16, 2048, 64))
MIN_SAMPLES = 20
MAX_SAMPLES = 5000
GRAPH_CALLS = 20
WARMUP_CALLS = 10
TARGET_REL_SEM = 0.005


@dataclasses.dataclass
class Timed:
    """One timing way of one shape: the samples (us per call), or why there are none."""

    timing: str
    samples: list | None = None
    skipped: str | None = None
    clock_before: int | None = None
    clock_after: int | None = None


def parse_shape(p, text):
    try:
        dims = tuple(int(x) for x in text.split(","))
    except ValueError:
        dims = ()
    if len(dims) != 4 or min(dims) <= 0:
        p.error(f"--shape {text!r}: expected four positive integers B,H,S,D")
    return dims


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default=None)
    p.add_argument("--sdpa", action="store_true",
                   help="time torch's scaled_dot_product_attention (default backend) instead")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--shape", action="append", default=[], help="B,H,S,D (repeatable)")
    p.add_argument("--json", default=None, metavar="PATH",
                   help="write the exhibit.harness/1 document here (default: stdout)")
    p.add_argument("--time-cap", type=float, default=2.0,
                   help="seconds of sampling per shape and timing (default 2)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    # Empty values (unset placeholders in a pipeline's argv) mean "not given".
    args.build_dir = args.build_dir or extension.default_build_dir()
    args.json = args.json or None
    args.shapes = [parse_shape(p, s) for s in args.shape] or list(DEFAULT_SHAPES)
    return args


def device_info(torch):
    props = torch.cuda.get_device_properties(0)
    driver = None
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"],
            capture_output=True, text=True, timeout=20, check=False)
        if out.returncode == 0 and out.stdout.strip():
            driver = out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        driver = None
    return {
        "name": props.name,
        "sm_count": props.multi_processor_count,
        "compute_capability": f"{props.major}.{props.minor}",
        "driver_version": driver,
        "l2_bytes": getattr(props, "L2_cache_size", None),
        "memory_bytes": props.total_memory,
    }


def sm_clock_mhz(torch):
    try:
        return int(torch.cuda.clock_rate())
    except Exception:  # noqa: BLE001 - pynvml missing or unsupported: the field stays empty.
        return None


def summarize(samples_us, flops, bytes_moved):
    s = sorted(samples_us)
    n = len(s)

    def pct(q):
        return s[min(n - 1, max(0, math.ceil(q * n) - 1))]

    p50 = statistics.median(s)
    return {
        "samples": n,
        "min_us": s[0],
        "p50_us": p50,
        "p90_us": pct(0.90),
        "p99_us": pct(0.99),
        "mean_us": statistics.fmean(s),
        "stdev_us": statistics.stdev(s) if n > 1 else 0.0,
        "tflops": flops / (p50 * 1e-6) / 1e12,
        "gbps": bytes_moved / (p50 * 1e-6) / 1e9,
    }


def sample(torch, run_once, per_sample_calls, time_cap):
    """Times run_once() per sample with CUDA events until stable or time_cap seconds."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    samples = []
    t0 = time.monotonic()
    while len(samples) < MAX_SAMPLES:
        start.record()
        run_once()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0 / per_sample_calls)
        n = len(samples)
        if n >= MIN_SAMPLES:
            mean = statistics.fmean(samples)
            sem = statistics.stdev(samples) / math.sqrt(n)
            if sem / mean < TARGET_REL_SEM or time.monotonic() - t0 > time_cap:
                break
    return samples


def bench_call(torch, call, time_cap):
    """Times call() with events and with graph replay: a list of Timed."""
    for _ in range(WARMUP_CALLS):
        call()
    torch.cuda.synchronize()

    clk0 = sm_clock_mhz(torch)
    events = sample(torch, call, 1, time_cap)
    out = [Timed("events", events, None, clk0, sm_clock_mhz(torch))]

    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                call()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(GRAPH_CALLS):
                call()
        for _ in range(3):
            graph.replay()
        torch.cuda.synchronize()
        clk0 = sm_clock_mhz(torch)
        replays = sample(torch, graph.replay, GRAPH_CALLS, time_cap)
        out.append(Timed("graph", replays, None, clk0, sm_clock_mhz(torch)))
    except RuntimeError as e:
        if "CUDA error" in str(e):
            raise
        out.append(Timed("graph", skipped="graph capture failed: " + " ".join(str(e).split())[:300]))
    return out


def result(kernel, shape, causal, bench, skipped):
    b, h, s, d = shape
    return {
        "mode": "bench",
        "kernel": kernel,
        "config": os.environ.get("EXHIBIT_CONFIG") or None,
        "shape": {"batch": b, "heads": h, "seq_len": s, "head_dim": d},
        "dtype": "f16",
        "causal": causal,
        "launched": bench is not None,
        "error": None,
        "skipped": skipped,
        "check": None,
        "stress": None,
        "bench": bench,
    }


def main(argv):
    args = parse_args(argv)
    try:
        import torch  # noqa: PLC0415
    except ImportError as e:
        print(f"bench.py: no torch ({e})", file=sys.stderr)
        return 4
    if not torch.cuda.is_available():
        print("bench.py: torch reports no CUDA GPU", file=sys.stderr)
        return 4

    if args.sdpa:
        producer, kernel = "sdpa", "sdpa:default"
        sdpa = torch.nn.functional.scaled_dot_product_attention

        def attention(q, k, v):
            return sdpa(q, k, v, is_causal=args.causal)
    else:
        producer, kernel = "attn_ext", KERNEL
        try:
            ext = extension.load(args.build_dir)
        except (OSError, ImportError) as e:
            print(f"bench.py: {e}", file=sys.stderr)
            return 1

        def attention(q, k, v):
            return ext.attn_fwd(q, k, v, args.causal)

    results = []
    try:
        dev = device_info(torch)
        for shape in args.shapes:
            b, h, s, d = shape
            flops = 4.0 * b * h * s * s * d / (2.0 if args.causal else 1.0)
            bytes_moved = 4.0 * b * h * s * d * 2  # q, k, v read once, o written once
            gen = torch.Generator(device="cuda").manual_seed(args.seed)
            q, k, v = (torch.randn(shape, device="cuda", dtype=torch.float16, generator=gen)
                       for _ in range(3))
            for t in bench_call(torch, lambda: attention(q, k, v), args.time_cap):
                if t.samples is None:
                    results.append(result(kernel, shape, args.causal, None, t.skipped))
                    continue
                bench = {"cache": "warm", "timing": t.timing}
                bench.update(summarize(t.samples, flops, bytes_moved))
                bench["sm_clock_mhz_before"] = t.clock_before
                bench["sm_clock_mhz_after"] = t.clock_after
                bench["throttled"] = (
                    t.clock_after < t.clock_before * 0.97
                    if (t.clock_before and t.clock_after) else None)
                results.append(result(kernel, shape, args.causal, bench, None))
    except RuntimeError as e:
        print(f"bench.py: failed: {' '.join(str(e).split())}", file=sys.stderr)
        return 1

    doc = {"schema": SCHEMA, "producer": producer, "device": dev, "results": results}
    if args.json is None:
        print(json.dumps(doc, indent=2))
        return 0
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"{dev['name']}  {producer}  causal={args.causal}  -> {args.json}")
    for r in results:
        shape = ",".join(str(r["shape"][k]) for k in ("batch", "heads", "seq_len", "head_dim"))
        bench = r["bench"]
        if r["skipped"]:
            print(f"  {shape:<14} skipped: {r['skipped']}")
        else:
            print(f"  {shape:<14} {bench['timing']:<6} p50 {bench['p50_us']:9.2f} us  "
                  f"{bench['tflops']:7.1f} TFLOP/s  (n={bench['samples']})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
