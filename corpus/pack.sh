#!/bin/sh
# Packs one captured run (an $OUT/<entry>.tgz from capture.sh) as corpus/<entry>/run.tar.xz:
# the run directory as `run/` (manifest, every stage's logs) with the capture's
# environment.txt, without JIT caches and build products (never the upstream source).
# Usage: corpus/pack.sh CAPTURE.tgz ENTRY
set -eu
capture=$(realpath "$1") entry=$2
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xzf "$capture" -C "$work"
# The run directory: the newest one holding a manifest (a checkout may have an artifacts/ of
# its own).
run=$(find "$work/artifacts" -mindepth 2 -maxdepth 2 -name manifest.json | sort | tail -1)
run=$(dirname "$run")
mv "$run" "$work/run"
cp "$work/environment.txt" "$work/run/environment.txt"
find "$work/run" -depth -type d -name jit -path '*/build/*' -exec rm -rf {} +
find "$work/run" -type f \( -name '*.so' -o -name '*.o' -o -name '*.cubin' -o -name '*.ncu-rep' \) -delete
# A build's own products (the program it linked, in its stage's build directory).
find "$work/run" -type f -path '*/build/*/build/*' -perm -u+x -delete
tar -cJf "$here/$entry/run.tar.xz" -C "$work" run
echo "$here/$entry/run.tar.xz: $(tar -tJf "$here/$entry/run.tar.xz" | wc -l) entries"
