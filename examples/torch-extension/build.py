#!/usr/bin/env python3
"""Builds the attn_ext PyTorch extension (csrc/) into a build directory.

    python3 build.py [--build-dir DIR] [--arch sm_90] [--incremental] [-DNAME=VALUE ...]

The extension is compiled with torch.utils.cpp_extension.load (ninja, verbose), so the log
shows every compiler command and nvcc's ptxas resource usage (-Xptxas=-v): registers, spills,
shared memory per kernel. Everything lands in the build directory: build.ninja, the object
files and attn_ext*.so, which oracle.py and bench.py import from there.

  --build-dir DIR  default $EXHIBIT_BUILD_DIR, else ./build
  --arch sm_XY     the GPU architecture to compile for (default $EXHIBIT_ARCH, else the
                   architecture of the GPUs torch sees); sets TORCH_CUDA_ARCH_LIST
  --nvcc PATH      the nvcc to use (default: torch's choice, from CUDA_HOME or PATH)
  --incremental    keep earlier objects (default: rebuild from scratch, so that the log
                   always shows ptxas's output)
  -DNAME=VALUE     passed to nvcc, e.g. -DPLANT_WMMA_LOCAL=1 or -DPLANT_LAUNCH_RING=1

Exit status: 0 built, 1 the build failed, 2 usage, 4 no torch.
"""

import argparse
import os
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = "attn_ext"
SOURCES = [HERE / "csrc" / "attn_api.cpp", HERE / "csrc" / "attn_fwd.cu"]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default=None)
    p.add_argument("--arch", default=os.environ.get("EXHIBIT_ARCH") or None)
    p.add_argument("--nvcc", default=None)
    p.add_argument("--incremental", action="store_true")
    args, extra = p.parse_known_args(argv)
    # Empty values (unset placeholders in a pipeline's argv) mean "not given".
    args.build_dir = args.build_dir or os.environ.get("EXHIBIT_BUILD_DIR") or str(HERE / "build")
    args.defines = []
    for word in filter(None, extra):
        if not re.fullmatch(r"-D[A-Za-z_][A-Za-z0-9_]*(=.*)?", word):
            p.error(f"unexpected argument {word!r}: only -DNAME=VALUE words may follow the options")
        args.defines.append(word)
    if args.arch:
        m = re.fullmatch(r"(?:sm_|compute_)?(\d+)(\d)([af]?)", args.arch.strip())
        if not m:
            p.error(f"--arch {args.arch!r}: expected sm_XY, e.g. sm_90 or sm_90a")
        args.torch_arch = f"{m.group(1)}.{m.group(2)}{m.group(3)}"
    return args


def clean(build_dir):
    """Removes what an earlier build left, so that ninja compiles everything again."""
    for pattern in ("build.ninja", ".ninja_deps", ".ninja_log", "*.o", f"{NAME}*.so", "lock"):
        for path in build_dir.glob(pattern):
            path.unlink()


def main(argv):
    args = parse_args(argv)
    build_dir = Path(args.build_dir).resolve()
    build_dir.mkdir(parents=True, exist_ok=True)

    # These must be set before torch.utils.cpp_extension is imported.
    if args.arch:
        os.environ["TORCH_CUDA_ARCH_LIST"] = args.torch_arch
    if args.nvcc:
        nvcc = Path(shutil.which(args.nvcc) or args.nvcc).resolve()
        os.environ["PYTORCH_NVCC"] = str(nvcc)
        os.environ.setdefault("CUDA_HOME", str(nvcc.parent.parent))
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(build_dir / "torch_extensions"))

    try:
        import torch  # noqa: F401, PLC0415
        from torch.utils import cpp_extension  # noqa: PLC0415
    except ImportError as e:
        print(f"build.py: PyTorch is needed to build the extension ({e})", file=sys.stderr)
        return 4

    if not args.incremental:
        clean(build_dir)

    cuda_flags = ["-O3", "-lineinfo", "-Xptxas=-v"] + args.defines
    print(f"build.py: building {NAME} in {build_dir}", flush=True)
    print(f"build.py: TORCH_CUDA_ARCH_LIST={os.environ.get('TORCH_CUDA_ARCH_LIST', '(torch default)')}"
          f" nvcc flags: {' '.join(cuda_flags)}", flush=True)
    try:
        cpp_extension.load(
            name=NAME,
            sources=[str(s) for s in SOURCES],
            extra_cflags=["-O3"],
            extra_cuda_cflags=cuda_flags,
            build_directory=str(build_dir),
            verbose=True,
        )
    except Exception as e:  # noqa: BLE001 - ninja's output is already printed above.
        print(f"build.py: build failed: {e}", file=sys.stderr)
        return 1
    built = sorted(build_dir.glob(f"{NAME}*.so"))
    print(f"build.py: built {built[0] if built else '(no .so found!)'}", flush=True)
    return 0 if built else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
