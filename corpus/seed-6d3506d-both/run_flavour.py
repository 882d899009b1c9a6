# Exhibit's driver for the corpus (not upstream code): runs the repository's
# quick_correctness.py unchanged, with the build build_v3_release.py makes for debug=True (-G)
# when V3_DEBUG=1, and its release build otherwise.
import functools
import os
import runpy

import build_v3_release

if os.environ.get("V3_DEBUG") == "1":
    build_v3_release.build_v3_release = functools.partial(
        build_v3_release.build_v3_release, debug=True
    )
runpy.run_path("quick_correctness.py", run_name="__main__")
