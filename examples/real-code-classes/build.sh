#!/bin/sh
# Builds one program: build.sh BUILD_DIR ARCH CONFIG [DEFINES...]. A config named NAME_clean
# builds src/NAME.cu without the planted fault; NAME builds it with -DPLANT; a config ending in
# _debug is a -G build of NAME, one ending in _wide builds NAME with the defines it names.
set -eu
out=$1 arch=$2 config=$3
shift 3
src=${config%_clean}
src=${src%_debug}
src=${src%_wide}
flags="-O3 -lineinfo"
case $config in *_debug) flags="-G -lineinfo" ;; esac
exec nvcc $flags "-arch=$arch" -Xptxas -v "$@" -Isrc -o "$out/prog" "src/$src.cu"
