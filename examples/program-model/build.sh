#!/bin/sh
# Builds one program: build.sh BUILD_DIR ARCH CONFIG [DEFINES...]. A config named NAME_clean
# builds src/NAME.cu without the planted fault; NAME builds it with the defines its config names
# (-DPLANT=1 where there is a fault to plant).
set -eu
out=$1 arch=$2 config=$3
shift 3
src=${config%_clean}
exec nvcc -O3 -lineinfo "-arch=$arch" -Xptxas -v "$@" -Isrc -o "$out/prog" "src/$src.cu"
