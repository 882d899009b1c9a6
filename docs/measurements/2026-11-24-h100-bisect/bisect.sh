#!/bin/bash
# Two generated histories bisected with the runner built on the build machine:
# 1. examples/cuda-cpp, 30 commits, one of which plants an out-of-bounds read (memcheck);
# 2. the built-in attention kernel, 12 commits, one of which adds a backoff (--slower).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/log"
exec > >(tee "$OUT/log/console.txt") 2>&1
REPO=$PWD
R=$REPO/target/gpu/runner
echo "== machine"; date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
git --version || { echo "no git on this machine"; exit 9; }
nvcc --version | tail -2; compute-sanitizer --version | head -2

H=/tmp/hist; rm -rf "$H"; mkdir -p "$H"
cp -r examples/cuda-cpp/src examples/cuda-cpp/tests "$H/"
cp "$REPO/target/gpu/cuda-cpp.yaml" "$H/pipeline.yaml"
printf 'artifacts/\nreports/\n' > "$H/.gitignore"
echo "# kernels" > "$H/README.md"
cd "$H" || exit 8
git init -q -b main; git config user.name "Exhibit example"; git config user.email example@example.com
git add -A; git commit -qm "Kernels and their tests"
for i in $(seq 1 29); do
  if [ "$i" -eq "${PLANT_AT:-19}" ]; then
    sed -i 's|^#if PLANT_OOB$|#if 1  // was: PLANT_OOB|' src/kernels.cu
    grep -n "was: PLANT_OOB" src/kernels.cu
    git commit -qam "stencil_1d: let the tail's last thread through the guard"
  elif [ $((i % 3)) -eq 0 ]; then
    echo "note $i" >> README.md; git commit -qam "README: note $i"
  elif [ $((i % 7)) -eq 0 ]; then
    sed -i "1i // revision $i" src/kernels.cu; git commit -qam "kernels: revision header $i"
  else
    echo "// tweak $i" >> tests/test_kernels.cu; git commit -qam "tests: tweak $i"
  fi
done
git log --oneline | cat
echo "== bisect (memcheck)"
s=$(date +%s.%N)
"$R" bisect HEAD~29 HEAD pipeline.yaml > "$OUT/log/oob.md" 2> "$OUT/log/oob.err"; echo "exit $?"
e=$(date +%s.%N); echo "wall $(echo "$e - $s" | bc) s"
tail -5 "$OUT/log/oob.err"
cat "$OUT/log/oob.md"
echo "== the user's tree after"; git status --porcelain | head; git worktree list; git rev-parse --abbrev-ref HEAD
mkdir -p "$OUT/log/oob"; cp -r artifacts/bisect-* "$OUT/log/oob/"

echo "== bisect (--slower): the built-in kernel"
S=/tmp/slow; rm -rf "$S"; mkdir -p "$S"
cp -r "$REPO/kernel" "$S/"
cp "$REPO/target/gpu/slow.yaml" "$S/pipeline.yaml"
printf 'artifacts/\nreports/\n' > "$S/.gitignore"
echo "# attention" > "$S/README.md"
cd "$S" || exit 8
git init -q -b main; git config user.name "Exhibit example"; git config user.email example@example.com
git add -A; git commit -qm "Attention forward"
for i in $(seq 1 12); do
  if [ "$i" -eq 7 ]; then
    python3 "$REPO/target/gpu/backoff.py" kernel/attention.cu
    git commit -qam "attention: back off before the first load"
  elif [ $((i % 3)) -eq 0 ]; then
    echo "note $i" >> README.md; git commit -qam "README: note $i"
  else
    echo "// tweak $i" >> kernel/attention.cu; git commit -qam "attention: tweak $i"
  fi
done
git log --oneline | cat
s=$(date +%s.%N)
"$R" bisect --slower d64 HEAD~12 HEAD pipeline.yaml > "$OUT/log/slower.md" 2> "$OUT/log/slower.err"; echo "exit $?"
e=$(date +%s.%N); echo "wall $(echo "$e - $s" | bc) s"
tail -5 "$OUT/log/slower.err"
cat "$OUT/log/slower.md"
mkdir -p "$OUT/log/slower"; cp -r artifacts/bisect-* "$OUT/log/slower/"
cd "$OUT" && tar czf bisect.tgz log && rm -rf log
