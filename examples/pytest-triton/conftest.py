import os
import sys

# The kernels module sits beside the tests' directory.
sys.path.insert(0, os.path.dirname(__file__))
