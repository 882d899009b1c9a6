"""Record a comparison of a result with its reference where Exhibit's report can read it.

Copy this file beside your program (it needs only the standard library; it uses numpy when it
is installed, and takes torch tensors, numpy arrays or nested lists)::

    from exhibit_compare import compare

    ok = compare("attention_out", out, ref, atol=1e-2, rtol=1e-2)

Each call checks ``|got - want| <= atol + rtol * |want|`` element by element (NaN where the
reference is not NaN is wrong) and appends one check to an ``exhibit.results/1`` document at
``out`` (default: ``$EXHIBIT_OUT``, which the runner sets to the unit's ``{out}``; with neither,
nothing is written). A failed check records which elements were wrong: their count, the
greatest difference and its index, the first few indices, the tensor as rows x columns (leading
dimensions folded into rows), the runs of rows and of columns holding a wrong element, how many
wrong elements are exactly 0, NaN or infinite, and the one ratio to the reference they share,
if any. The report words that pattern (a tail, a column range one tile covers, every k-th row,
zeros where nothing wrote). Returns whether the check passed; prints one line when it did not.
"""

import json
import math
import os
import sys

SCHEMA = "exhibit.results/1"
MAX_RUNS = 16
MAX_FIRST = 10

_results = []


def _flat(x):
    """The values of a tensor, array or nested list as floats in row-major order, and its
    shape."""
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().double().cpu()
        shape = list(x.shape)
        try:
            return x.numpy().reshape(-1), shape
        except (RuntimeError, ImportError):
            return [float(v) for v in x.reshape(-1).tolist()], shape
    if hasattr(x, "shape") and hasattr(x, "reshape"):  # a numpy array
        return x.astype("float64").reshape(-1), list(x.shape)
    shape = []
    probe = x
    while isinstance(probe, (list, tuple)):
        shape.append(len(probe))
        probe = probe[0] if probe else None
    values = []

    def walk(v):
        if isinstance(v, (list, tuple)):
            for w in v:
                walk(w)
        else:
            values.append(float(v))

    walk(x)
    return values, shape


def _runs(indices):
    """Sorted distinct indices as `[first, end)` runs, at most MAX_RUNS, and whether there were
    more."""
    runs = []
    for i in indices:
        if runs and runs[-1][1] == i:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1])
    return runs[:MAX_RUNS], len(runs) > MAX_RUNS


def _unravel(flat, shape):
    out = []
    for dim in reversed(shape or [1]):
        out.append(flat % dim if dim else 0)
        flat = flat // dim if dim else 0
    return list(reversed(out))


def _summary(got, want, shape, atol, rtol):
    total = len(want)
    cols = shape[-1] if shape else total
    cols = max(cols, 1)
    rows = total // cols if cols else 0
    wrong = []
    greatest, greatest_at = None, None
    for i in range(total):
        g, w = float(got[i]), float(want[i])
        if math.isnan(w):
            continue
        d = abs(g - w) if not math.isnan(g) else math.inf
        if d > atol + rtol * abs(w):
            wrong.append(i)
            if greatest is None or d > greatest:
                greatest, greatest_at = d, i
    if not wrong:
        return None
    zeros = sum(1 for i in wrong if float(got[i]) == 0.0)
    nan = sum(1 for i in wrong if math.isnan(float(got[i])))
    inf = sum(1 for i in wrong if math.isinf(float(got[i])))
    ratios = [float(got[i]) / float(want[i]) for i in wrong
              if float(want[i]) != 0.0 and math.isfinite(float(got[i]))]
    ratio = None
    if ratios and len(ratios) == len(wrong):
        lo, hi = min(ratios), max(ratios)
        mid = sum(ratios) / len(ratios)
        if hi - lo <= 1e-3 * max(abs(mid), 1e-30) and abs(mid - 1.0) > 1e-6 and abs(mid) > 1e-6:
            ratio = mid
    row_runs, more_rows = _runs(sorted({i // cols for i in wrong}))
    col_runs, more_cols = _runs(sorted({i % cols for i in wrong}))
    m = {
        "mismatched": len(wrong),
        "total": total,
        "first": [[i] for i in wrong[:MAX_FIRST]],
        "shape": [rows, cols],
        "wrong_rows": row_runs,
        "wrong_cols": col_runs,
        "zeros": zeros,
        "nan": nan,
        "inf": inf,
    }
    if greatest is not None and math.isfinite(greatest):
        m["greatest_abs"] = greatest
        m["greatest_at"] = _unravel(greatest_at, shape)
    if more_rows:
        m["more_rows"] = True
    if more_cols:
        m["more_cols"] = True
    if ratio is not None:
        m["ratio"] = ratio
    return m


def _summary_numpy(np, got, want, shape, atol, rtol):
    got = np.asarray(got, dtype="float64").reshape(-1)
    want = np.asarray(want, dtype="float64").reshape(-1)
    total = want.size
    cols = max(shape[-1] if shape else total, 1)
    rows = total // cols
    with np.errstate(invalid="ignore"):
        diff = np.where(np.isnan(got), np.inf, np.abs(got - want))
        bad = (diff > atol + rtol * np.abs(want)) & ~np.isnan(want)
    wrong = np.flatnonzero(bad)
    if wrong.size == 0:
        return None
    g = got[wrong]
    w = want[wrong]
    m = {
        "mismatched": int(wrong.size),
        "total": int(total),
        "first": [[int(i)] for i in wrong[:MAX_FIRST]],
        "shape": [int(rows), int(cols)],
        "zeros": int(np.count_nonzero(g == 0.0)),
        "nan": int(np.count_nonzero(np.isnan(g))),
        "inf": int(np.count_nonzero(np.isinf(g))),
    }
    m["wrong_rows"], more_rows = _runs(int(i) for i in np.unique(wrong // cols))
    m["wrong_cols"], more_cols = _runs(int(i) for i in np.unique(wrong % cols))
    if more_rows:
        m["more_rows"] = True
    if more_cols:
        m["more_cols"] = True
    d = diff[wrong]
    finite = np.isfinite(d)
    if finite.any():
        k = int(wrong[finite][np.argmax(d[finite])])
        m["greatest_abs"] = float(diff[k])
        m["greatest_at"] = [int(v) for v in np.unravel_index(k, shape or [total])]
    ok = (w != 0.0) & np.isfinite(g)
    if ok.all():
        r = g / w
        mid = float(r.mean())
        if (float(r.max() - r.min()) <= 1e-3 * max(abs(mid), 1e-30) and abs(mid - 1.0) > 1e-6
                and abs(mid) > 1e-6):
            m["ratio"] = mid
    return m


def compare(name, got, want, *, atol=1e-5, rtol=1e-5, out=None, program=None, file=None,
            line=None):
    """Compares `got` with `want` and records the check; returns whether it passed."""
    got_values, got_shape = _flat(got)
    want_values, shape = _flat(want)
    if len(got_values) != len(want_values):
        raise ValueError(f"{name}: {len(got_values)} values against {len(want_values)}")
    try:
        import numpy as np  # noqa: PLC0415 (optional)
    except ImportError:
        np = None
    if np is not None:
        m = _summary_numpy(np, got_values, want_values, shape, atol, rtol)
    else:
        m = _summary(got_values, want_values, shape, atol, rtol)
    entry = {"name": name, "passed": m is None}
    if m is not None:
        entry["mismatch"] = m
        if "greatest_abs" in m:
            entry["max_abs_err"] = m["greatest_abs"]
        entry["message"] = (
            f"Mismatched elements: {m['mismatched']} / {m['total']} "
            f"({100.0 * m['mismatched'] / max(m['total'], 1):.1f}%)"
        )
        print(f"{name}: {entry['message']}", file=sys.stderr)
    if file is not None:
        entry["file"] = file
    if line is not None:
        entry["line"] = line
    _results.append(entry)
    path = out or os.environ.get("EXHIBIT_OUT")
    if path:
        doc = {
            "schema": SCHEMA,
            "program": program or os.path.basename(sys.argv[0] or "program"),
            "results": _results,
        }
        tmp = f"{path}.tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, path)
    return m is None


if __name__ == "__main__":
    # A self-check: a 4 x 64 result whose columns 32-63 were never written.
    want = [[float(r * 64 + c + 1) for c in range(64)] for r in range(4)]
    got = [[v if c < 32 else 0.0 for c, v in enumerate(row)] for row in want]
    print(compare("self_check", got, want, out=sys.argv[1] if len(sys.argv) > 1 else None))
