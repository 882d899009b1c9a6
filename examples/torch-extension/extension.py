"""Imports the attn_ext module that build.py left in a build directory."""

import importlib.util
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = "attn_ext"


def default_build_dir():
    """$EXHIBIT_BUILD_DIR, else ./build next to this file."""
    return os.environ.get("EXHIBIT_BUILD_DIR") or str(HERE / "build")


def load(build_dir):
    """Returns the built extension module. Raises FileNotFoundError when there is none."""
    import torch  # noqa: F401, PLC0415 - the extension links against torch's libraries.

    found = sorted(Path(build_dir).glob(f"{NAME}*.so"))
    if not found:
        raise FileNotFoundError(f"no {NAME}*.so in {build_dir}: run `python3 build.py --build-dir "
                                f"{build_dir}` first")
    spec = importlib.util.spec_from_file_location(NAME, found[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
