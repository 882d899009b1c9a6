#!/usr/bin/env python3
"""PyTorch scaled_dot_product_attention baseline, timed like the harness's bench mode.

For each problem (--problem B,H,S,D:dtype[:causal], repeated; or one as --shape B,H,S,D --dtype
[--causal]) and each requested backend (the default dispatch, and flash, cudnn and efficient
forced through torch.nn.attention.sdpa_kernel), the forward pass is timed one or both ways
(--timing both, the default; events; graph; or auto, the harness's choice by the time per call,
both ways within a factor of 2 of its threshold):

  events  one call per sample between two CUDA events, in a Python loop (includes host dispatch
          when the kernel is shorter than the dispatch);
  graph   a CUDA graph of back-to-back calls lasting about GRAPH_REPLAY_TARGET_US (1 to
          MAX_GRAPH_CALLS calls, from the warm-up's time per call, as the harness does), one
          replay per sample, time divided by the calls.

The first backend warms up for 200 ms (--warmup-ms, as the harness; later ones, with the GPU
already busy, for a quarter of it), then each way samples until the median is
known to 0.5 % (the half-width of its distribution-free 95 % confidence interval, relative to
it) after at least MIN_SAMPLES, or until the time cap: the harness's rule, so that both sides of
a comparison are measured alike. Each result's details say why sampling stopped (`stop`), with
the warm-up's time per call and the calls per sample. torch is imported once for all
the problems. The output is one exhibit.harness/1 document (producer "sdpa", kernel
"sdpa:<backend>", mode "bench", one result per problem, backend and timing, each naming its
shape, dtype and causal flag; a backend that cannot run a problem is a result with `skipped` set
to the reason; a problem that failed outside a backend has one result per backend with `error`
set).

Exit codes: 0 ok, 2 usage, 3 a CUDA or PyTorch error outside a backend (the document still holds
every problem's results), 4 no torch or no GPU.
"""

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
import warnings

SCHEMA = "exhibit.harness/1"
BACKENDS = ("default", "flash", "cudnn", "efficient")
# As the harness: enough samples that p99 rests on at least two above it.
MIN_SAMPLES = 200
MAX_SAMPLES = 5000
GRAPH_REPLAY_TARGET_US = 500.0
# The harness's `--timing auto` threshold: graph replay under this many us per call.
LAUNCH_BOUND_US = 50.0
MAX_GRAPH_CALLS = 100
WARMUP_BATCH = 10
TARGET_NOISE = 0.005
SHAPE_DIMS = 4
DTYPES = ("f16", "bf16")


@dataclasses.dataclass
class Problem:
    """One attention problem: the shape B,H,S,D, the dtype and the mask."""

    dims: list
    dtype: str
    causal: bool

    def label(self):
        shape = ",".join(str(x) for x in self.dims)
        return f"{shape} {self.dtype}{' causal' if self.causal else ''}"


@dataclasses.dataclass
class Timed:
    """One timing way of one backend: the samples (us per call), or why there are none."""

    timing: str
    samples: list | None = None
    skipped: str | None = None
    clock_before: int | None = None
    clock_after: int | None = None
    details: dict = dataclasses.field(default_factory=dict)


def parse_dims(p, flag, text):
    """B,H,S,D as four positive integers, or a usage error naming the flag."""
    try:
        dims = [int(x) for x in text.split(",")]
    except ValueError:
        p.error(f"{flag} {text!r}: expected four integers B,H,S,D")
    if len(dims) != SHAPE_DIMS or min(dims) <= 0:
        p.error(f"{flag} {text!r}: expected four positive integers B,H,S,D")
    return dims


def parse_problem(p, text):
    """B,H,S,D:dtype[:causal] as a Problem, or a usage error."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        p.error(f"--problem {text!r}: expected B,H,S,D:dtype or B,H,S,D:dtype:causal")
    dims = parse_dims(p, "--problem", parts[0])
    if parts[1] not in DTYPES:
        p.error(f"--problem {text!r}: dtype {parts[1]!r} is not one of {', '.join(DTYPES)}")
    if len(parts) == 3 and parts[2] != "causal":
        p.error(f"--problem {text!r}: expected `causal` after the dtype, not {parts[2]!r}")
    return Problem(dims, parts[1], len(parts) == 3)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problem", action="append", default=[], metavar="B,H,S,D:DTYPE[:causal]",
                   help="a problem to time; repeat for several (one torch import for all)")
    p.add_argument("--shape", help="B,H,S,D: one problem, with --dtype and --causal")
    p.add_argument("--dtype", choices=DTYPES)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--backend", default="all", metavar="all|" + ",".join(BACKENDS),
                   help="the backends to time: all (default), or a comma-separated list")
    p.add_argument("--timing", default="both", choices=("both", "auto", "events", "graph"),
                   help="the ways to time (default both); auto: as the harness's --timing auto, "
                        "with both taken within a factor of 2 of its threshold")
    p.add_argument("--json", action="store_true", help="print the exhibit.harness/1 document")
    p.add_argument("--time-cap", type=float, default=2.0,
                   help="seconds of sampling per backend and timing (default 2)")
    p.add_argument("--warmup-ms", type=float, default=200.0,
                   help="warm-up before sampling, milliseconds (default 200, as the harness); "
                        "backends after the first warm up for a quarter of it")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    args.cold_gpu = True
    if args.backend == "all":
        args.backends = BACKENDS
    else:
        args.backends = tuple(args.backend.split(","))
        unknown = [b for b in args.backends if b not in BACKENDS]
        if unknown or len(set(args.backends)) != len(args.backends):
            p.error(f"--backend {args.backend!r}: expected all, or some of "
                    f"{', '.join(BACKENDS)}, each once")
    single = args.shape is not None or args.dtype is not None or args.causal
    if args.problem and single:
        p.error("give --problem, or --shape with --dtype (and --causal), not both")
    if args.problem:
        args.problems = [parse_problem(p, text) for text in args.problem]
    elif not single:
        p.error("name a problem: --problem B,H,S,D:dtype[:causal], or --shape B,H,S,D --dtype")
    elif args.shape is None or args.dtype is None:
        p.error("--shape and --dtype name one problem together (--causal masks it)")
    else:
        args.problems = [Problem(parse_dims(p, "--shape", args.shape), args.dtype, args.causal)]
    return args


def load_torch():
    """Returns torch, or exits 4 with a message when torch or a CUDA GPU is absent."""
    try:
        import torch  # noqa: PLC0415
    except ImportError as e:
        print(f"sdpa baseline skipped: no torch ({e})", file=sys.stderr)
        sys.exit(4)
    if not torch.cuda.is_available():
        print("sdpa baseline skipped: torch reports no CUDA GPU", file=sys.stderr)
        sys.exit(4)
    return torch


def device_info(torch):
    props = torch.cuda.get_device_properties(0)
    driver = None
    try:
        import subprocess  # noqa: PLC0415

        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"],
            capture_output=True, text=True, timeout=20, check=False)
        if out.returncode == 0 and out.stdout.strip():
            driver = out.stdout.strip().splitlines()[0]
    except (OSError, ValueError, subprocess.SubprocessError):
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


def backend_context(torch, name):
    """A context manager forcing one SDPA backend (or none for the default dispatch)."""
    import contextlib  # noqa: PLC0415

    if name == "default":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: PLC0415

    which = {
        "flash": SDPBackend.FLASH_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
    }[name]
    return sdpa_kernel([which])


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


def median_ci_relative(samples):
    """Half the width of a distribution-free 95 % confidence interval of the median, relative to
    the median (order statistics of rank n/2 -+ 1.96 sqrt(n)/2), as the harness computes it: one
    slow outlier moves it far less than it moves the mean. None under 8 samples."""
    n = len(samples)
    if n < 8:
        return None
    s = sorted(samples)
    half = 1.96 * math.sqrt(n) / 2.0
    lo = max(0, math.floor(n / 2.0 - half))
    hi = min(n - 1, math.ceil(n / 2.0 + half))
    median = statistics.median(s)
    return (s[hi] - s[lo]) / 2.0 / median if median > 0 else None


def sample(torch, run_once, per_sample_calls, time_cap):
    """Times run_once() per sample with CUDA events until the median is known to TARGET_NOISE
    or time_cap seconds: the samples (us per call) and why sampling stopped (`converged`,
    `time_cap`, `sample_cap`)."""
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
        # Sorting costs O(n log n): the rule is checked every 16th sample.
        if n >= MIN_SAMPLES and (n - MIN_SAMPLES) % 16 == 0:
            noise = median_ci_relative(samples)
            if noise is not None and noise <= TARGET_NOISE:
                return samples, "converged"
            if time.monotonic() - t0 > time_cap:
                return samples, "time_cap"
    return samples, "sample_cap"


def warm_up(torch, call, warmup_ms):
    """Calls in timed batches of WARMUP_BATCH until warmup_ms have passed (at least two
    batches), so that clocks settle and one-time costs (cuDNN's plan, the first dispatch) are
    paid: the us per call of the last batch, which no one-time cost inflates."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    t0 = time.monotonic()
    batches = 0
    while True:
        start.record()
        for _ in range(WARMUP_BATCH):
            call()
        end.record()
        end.synchronize()
        batches += 1
        if batches >= 2 and (time.monotonic() - t0) * 1e3 >= warmup_ms:
            return start.elapsed_time(end) * 1000.0 / WARMUP_BATCH


def ways(timing, call_us):
    """The timing ways to take for --timing `timing`, given the warm-up's us per call. `auto`
    follows the harness's rule (graph under LAUNCH_BOUND_US, events above) with a factor of 2
    either side where both are taken, so that a kernel timed by the harness finds its like here
    unless the two differ by more than that around the threshold."""
    if timing == "both":
        return ("events", "graph")
    if timing != "auto":
        return (timing,)
    taken = []
    if call_us >= LAUNCH_BOUND_US / 2:
        taken.append("events")
    if call_us < LAUNCH_BOUND_US * 2:
        taken.append("graph")
    return tuple(taken)


def bench_backend(torch, name, qkv, causal, warmup_ms, args):
    """Times one backend on (q, k, v) the ways --timing asks for: a list of Timed."""
    F = torch.nn.functional
    q, k, v = qkv
    with backend_context(torch, name):
        def call():
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                call_us = warm_up(torch, call, warmup_ms)
        except RuntimeError as e:
            why = [str(w.message) for w in caught] + [str(e)]
            reason = "backend unavailable: " + " ".join(" ".join(why).split())[:600]
            asked = ("events", "graph") if args.timing in ("both", "auto") else (args.timing,)
            return [Timed(way, skipped=reason) for way in asked]
        return [time_way(torch, way, call, call_us, args.time_cap)
                for way in ways(args.timing, call_us)]


def time_way(torch, way, call, call_us, time_cap):
    """One backend timed one way (`events` or `graph`), after its warm-up: a Timed."""
    if way == "events":
        clk0 = sm_clock_mhz(torch)
        events, stop = sample(torch, call, 1, time_cap)
        details = {"warmup_mean_us": call_us, "launches_per_sample": 1, "stop": stop}
        return Timed("events", events, None, clk0, sm_clock_mhz(torch), details)
    # Enough calls per replay to last about GRAPH_REPLAY_TARGET_US, as the harness does.
    graph_calls = max(1, min(MAX_GRAPH_CALLS,
                             math.ceil(GRAPH_REPLAY_TARGET_US / max(call_us, 0.1))))
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                call()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(graph_calls):
                call()
        for _ in range(3):
            graph.replay()
        torch.cuda.synchronize()
    except RuntimeError as e:
        return Timed("graph", skipped="graph capture failed: " + " ".join(str(e).split())[:300])
    clk0 = sm_clock_mhz(torch)
    replays, stop = sample(torch, graph.replay, graph_calls, time_cap)
    details = {"warmup_mean_us": call_us, "launches_per_sample": graph_calls, "stop": stop}
    return Timed("graph", replays, None, clk0, sm_clock_mhz(torch), details)


def result(name, problem, bench, skipped, error=None, details=None):
    b, h, s, d = problem.dims
    return {
        "mode": "bench",
        "kernel": f"sdpa:{name}",
        "config": None,
        "shape": {"batch": b, "heads": h, "seq_len": s, "head_dim": d},
        "dtype": problem.dtype,
        "causal": problem.causal,
        "launched": bench is not None,
        "error": error,
        "skipped": skipped,
        "check": None,
        "stress": None,
        "bench": bench,
        "details": details or {},
    }


def bench_problem(torch, problem, backends, args):
    """The results of every backend and timing on one problem."""
    b, h, s, d = problem.dims
    dtype = torch.float16 if problem.dtype == "f16" else torch.bfloat16
    flops = 4.0 * b * h * s * s * d / (2.0 if problem.causal else 1.0)
    bytes_moved = 4.0 * b * h * s * d * 2  # q, k, v read once, o written once
    # Each problem draws its inputs from the seed: its figures do not depend on the others.
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype, generator=gen)
               for _ in range(3))
    results = []
    for name in backends:
        # The process's first backend warms the GPU up from idle; later ones find it busy and
        # pay only their own one-time costs.
        warmup_ms = args.warmup_ms if args.cold_gpu else args.warmup_ms / 4
        args.cold_gpu = False
        for t in bench_backend(torch, name, (q, k, v), problem.causal, warmup_ms, args):
            if t.samples is None:
                results.append(result(name, problem, None, t.skipped))
                continue
            bench = {"cache": "warm", "timing": t.timing}
            bench.update(summarize(t.samples, flops, bytes_moved))
            bench["sm_clock_mhz_before"] = t.clock_before
            bench["sm_clock_mhz_after"] = t.clock_after
            bench["throttled"] = (
                t.clock_after < t.clock_before * 0.97
                if (t.clock_before and t.clock_after) else None)
            results.append(result(name, problem, bench, None, details=t.details))
    return results


def main(argv):
    args = parse_args(argv)
    torch = load_torch()
    backends = args.backends
    try:
        dev = device_info(torch)
    except RuntimeError as e:
        print(f"sdpa baseline failed: {' '.join(str(e).split())}", file=sys.stderr)
        return 3
    by_problem = []
    failed = False
    for problem in args.problems:
        try:
            by_problem.append((problem, bench_problem(torch, problem, backends, args)))
        except RuntimeError as e:
            # The other problems' figures still count: this one's results carry the error.
            why = " ".join(str(e).split())
            print(f"sdpa baseline failed on {problem.label()}: {why}", file=sys.stderr)
            by_problem.append((problem, [result(name, problem, None, None, why[:600])
                                         for name in backends]))
            failed = True

    results = [r for _, rs in by_problem for r in rs]
    doc = {"schema": SCHEMA, "producer": "sdpa", "device": dev, "results": results}
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(dev["name"])
        for problem, rs in by_problem:
            print(f"  {problem.label()}")
            for r in rs:
                bench = r["bench"]
                if r["error"]:
                    print(f"    {r['kernel']:<16} error: {r['error']}")
                elif r["skipped"]:
                    print(f"    {r['kernel']:<16} skipped: {r['skipped']}")
                else:
                    print(f"    {r['kernel']:<16} {bench['timing']:<6} "
                          f"p50 {bench['p50_us']:9.2f} us  "
                          f"{bench['tflops']:7.1f} TFLOP/s  (n={bench['samples']})")
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
