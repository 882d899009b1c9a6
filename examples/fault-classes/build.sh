#!/bin/sh
# Builds one fault-class program: build.sh BUILD_DIR ARCH CONFIG [DEFINES...]. A config named
# NAME_clean builds src/NAME.cu without the planted fault; NAME builds it with -DPLANT.
set -eu
out=$1 arch=$2 config=$3
shift 3
src=${config%_clean}
exec nvcc -O3 -lineinfo "-arch=$arch" -Xptxas -v "$@" -Isrc -o "$out/prog" "src/$src.cu"
