#!/usr/bin/env bash
# `make gpu-wheels`: download into .whl/ (git-ignored) the wheels the GPU machine lacks
# (scripts/gpu_wheels.txt), built for its Python 3.12 on manylinux x86_64, without their
# dependencies (the machine has them). Then check the 64 MiB that one device call may carry:
# the working tree that travels (tracked + untracked, not ignored) plus .whl/. Wheels that do
# not fit are removed, last listed first, and named.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
BUDGET=$((64 * 1024 * 1024))
rm -rf .whl && mkdir -p .whl
grep -v '^\s*#' scripts/gpu_wheels.txt | grep -v '^\s*$' > .whl/.requirements
$PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl -r .whl/.requirements
rm .whl/.requirements

size() { if [ $# -gt 0 ]; then du -cb "$@" | tail -1 | cut -f1; else echo 0; fi; }
mapfile -t travels < <(git ls-files --cached --others --exclude-standard | while read -r f; do [ -f "$f" ] && echo "$f"; done)
tree=$(size "${travels[@]}")
left=$((BUDGET - tree))
unfit=()
while read -r name; do  # keep wheels in the listed order while they fit
    whl=$(ls .whl/"$(echo "$name" | cut -d= -f1 | tr - _)"-*.whl 2>/dev/null | head -1) || true
    [ -n "$whl" ] || { echo "missing wheel for $name"; exit 1; }
    w=$(size "$whl")
    if [ "$w" -le "$left" ]; then left=$((left - w)); else unfit+=("$(basename "$whl") ($((w / 1024)) KiB)"); rm "$whl"; fi
done < <(grep -v '^\s*#' scripts/gpu_wheels.txt | grep -v '^\s*$')
wheels=$(size .whl/*.whl)
awk -v t="$tree" -v w="$wheels" -v n="$(ls .whl/*.whl | wc -l)" 'BEGIN { printf "working tree that travels: \
%.1f MiB; .whl/: %.1f MiB (%d wheels); together %.1f of 64 MiB\n", t / 1048576, w / 1048576, n, (t + w) / 1048576 }'
ls -l .whl/*.whl | awk '{printf "  %8.1f KiB  %s\n", $5 / 1024, $NF}'
if [ ${#unfit[@]} -gt 0 ]; then
    echo "did NOT fit the budget (removed):"; printf '  %s\n' "${unfit[@]}"; exit 1
fi
echo "all wheels fit; name .whl in the device call's carry"
