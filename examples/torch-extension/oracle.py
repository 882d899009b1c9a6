#!/usr/bin/env python3
"""Checks attn_ext.attn_fwd against a float64 PyTorch reference.

    python3 oracle.py [--build-dir DIR] [--launches N] [--out PATH]

Each case runs attn_fwd on seeded random f16 inputs, synchronizes, and compares the output
with softmax(q k^T / 8) v computed in float64 from the same f16 inputs: every element must be
finite and within ATOL + RTOL * |reference|.

  --build-dir DIR  where build.py left attn_ext*.so (default $EXHIBIT_BUILD_DIR, else ./build)
  --launches N     stress: run only the seed shape (B=2, H=8, S=512, D=64, no mask), N times,
                   synchronizing and checking after every launch; every launch must also match
                   launch 1 bitwise (default 1, or $EXHIBIT_LAUNCHES: every case once)
  --out PATH       write the results as JSON (default $EXHIBIT_OUT), rewritten after each case:
                   {"schema": "exhibit.results/1", "program": "oracle.py",
                    "results": [{"name", "passed", "message", "max_abs_err"}]}

A CUDA error ends the run at once (the CUDA context is unusable after one), e.g.
"launch 9 of 16 failed: CUDA error: an illegal memory access was encountered".

Exit status: 0 every case passed, 1 a case failed, 2 usage, 4 no torch or no GPU.
"""

import argparse
import json
import math
import os
import sys
import traceback
from pathlib import Path

import extension

SCHEMA = "exhibit.results/1"
PROGRAM = "oracle.py"
ATOL = 2e-3
RTOL = 1e-2

SEED_SHAPE = (2, 8, 512, 64)  # B, H, S, D of the reported failure
# (name, shape, causal). The first is the seed case, the one --launches repeats. Tail shapes
# have S not a multiple of the 64-row query tile or the 32-key tile.
CASES = [
    ("seed 2x8x512x64", SEED_SHAPE, False),
    ("seed 2x8x512x64 causal", SEED_SHAPE, True),
    ("tail 1x4x200x64", (1, 4, 200, 64), False),
    ("tail 1x4x200x64 causal", (1, 4, 200, 64), True),
    ("tail 1x2x1000x64 causal", (1, 2, 1000, 64), True),
    ("one key 2x3x1x64", (2, 3, 1, 64), False),
]


class CudaFailure(Exception):
    """A CUDA error: the process cannot run further GPU work."""


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default=None)
    p.add_argument("--launches", default=None)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    # An empty value (an unset placeholder in a pipeline's argv) means "not given".
    args.build_dir = args.build_dir or extension.default_build_dir()
    args.out = args.out or os.environ.get("EXHIBIT_OUT") or None
    launches = args.launches or os.environ.get("EXHIBIT_LAUNCHES") or "1"
    try:
        args.launches = int(launches)
    except ValueError:
        p.error(f"--launches {launches!r}: expected a positive integer")
    if args.launches < 1:
        p.error(f"--launches {launches!r}: expected a positive integer")
    return args


class Results:
    """The exhibit.results/1 document, rewritten after every result."""

    def __init__(self, path):
        self.path = Path(path) if path else None
        self.results = []

    def add(self, name, passed, message=None, max_abs_err=None):
        entry = {"name": name, "passed": passed}
        if message:
            entry["message"] = message
        if max_abs_err is not None and math.isfinite(max_abs_err):
            entry["max_abs_err"] = max_abs_err
        self.results.append(entry)
        shown = f"max_abs_err {max_abs_err:.3g}" if max_abs_err is not None else ""
        print(f"{'PASS' if passed else 'FAIL'}  {name}  {message or shown}", flush=True)
        self.write()

    def write(self):
        if self.path is None:
            return
        doc = {"schema": SCHEMA, "program": PROGRAM, "results": self.results}
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(doc, indent=2) + "\n")
        tmp.replace(self.path)

    def failed(self):
        return sum(not r["passed"] for r in self.results)


def make_inputs(torch, shape, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return [torch.randn(shape, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3)]


def reference(torch, q, k, v, causal):
    """softmax(q k^T / sqrt(d)) v in float64."""
    q, k, v = (t.double() for t in (q, k, v))
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    if causal:
        s = q.shape[-2]
        mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def compare(torch, out, ref):
    """(passed, max_abs_err, message) for out against ref."""
    out64 = out.double()
    diff = (out64 - ref).abs()
    nonfinite = int((~torch.isfinite(out64)).sum())
    bad = ~(diff <= ATOL + RTOL * ref.abs())  # NaN compares false: counted as bad
    max_abs_err = float(diff.nan_to_num(float("inf")).max())
    if not bool(bad.any()):
        return True, max_abs_err, None
    first = tuple(int(i) for i in bad.nonzero()[0])
    msg = (f"{int(bad.sum())} of {bad.numel()} elements off ({nonfinite} not finite); "
           f"first at {list(first)}: got {float(out64[first]):.6g}, expected {float(ref[first]):.6g} "
           f"(atol {ATOL}, rtol {RTOL})")
    return False, max_abs_err, msg


def cuda_message(e):
    """The first line of a CUDA error as PyTorch reports it, e.g. 'CUDA error: ...'."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__


def is_cuda_error(e):
    return "CUDA error" in str(e) or type(e).__name__ == "AcceleratorError"


def run_case(torch, ext, name, shape, causal, launches, results, seed):
    """Runs one case `launches` times, checking after each launch."""
    q, k, v = make_inputs(torch, shape, seed)
    ref = reference(torch, q, k, v, causal)
    first = None
    worst = 0.0
    for i in range(1, launches + 1):
        at = f"launch {i} of {launches}"
        try:
            out = ext.attn_fwd(q, k, v, causal)
            torch.cuda.synchronize()
        except RuntimeError as e:
            traceback.print_exc()
            results.add(name, False, f"{at} failed: {cuda_message(e)}")
            if is_cuda_error(e):
                raise CudaFailure from e
            return
        passed, err, msg = compare(torch, out, ref)
        worst = max(worst, err)
        if not passed:
            results.add(name, False, f"{at}: {msg}", err)
            return
        if first is None:
            first = out
        elif not torch.equal(out, first):
            n = int((out != first).sum())
            results.add(name, False, f"{at}: {n} elements differ bitwise from launch 1", worst)
            return
    results.add(name, True, None, worst)


def main(argv):
    args = parse_args(argv)
    try:
        import torch  # noqa: PLC0415
    except ImportError as e:
        print(f"oracle.py: no torch ({e})", file=sys.stderr)
        return 4
    if not torch.cuda.is_available():
        print("oracle.py: torch reports no CUDA GPU", file=sys.stderr)
        return 4

    results = Results(args.out)
    try:
        ext = extension.load(args.build_dir)
    except (OSError, ImportError) as e:
        results.add("import attn_ext", False, str(e))
        return 1

    cases = CASES if args.launches == 1 else CASES[:1]
    print(f"oracle.py: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"extension {ext.__file__}, {args.launches} launch(es) per case", flush=True)
    try:
        for seed, (name, shape, causal) in enumerate(cases, start=1):
            run_case(torch, ext, name, shape, causal, args.launches, results, seed)
    except CudaFailure:
        return 1
    failed = results.failed()
    print(f"{len(results.results)} cases, {failed} failed", flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
