#!/usr/bin/env bash
# On the GPU machine (repository root), issue 47 point 10: `vllm serve` inside the GPU sandbox.
# Puts the carried Debian bubblewrap (`.carry/bwrap/`: bwrap and the libraries it links, taken from
# this machine's Debian packages) on PATH where the machine has none, says what the sandbox is
# there (`driftmatrix sandbox --check`), then runs benchmarks/gpu/run_on_device.sh with the sandbox
# required: no usable sandbox is an ERROR, never a plain process.
#   bash benchmarks/gpu/run_sandboxed.sh SECONDS [driftmatrix run arguments...]
set -uo pipefail
t0=$(date +%s)
budget=$1; shift
if ! command -v bwrap >/dev/null && [ -x .carry/bwrap/bwrap ]; then
  install -m 0755 .carry/bwrap/bwrap /usr/local/bin/bwrap
  if ldd /usr/local/bin/bwrap | grep -q "not found"; then
    cp .carry/bwrap/lib*.so* /usr/local/lib/ && ldconfig
  fi
fi
{ echo "bwrap: $(command -v bwrap) $(bwrap --version 2>&1)"; uname -r
  cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null; id; } | tee -a "$OUT/device.txt"
python3 -m driftmatrix.cli sandbox --check 2>&1 | tee "$OUT/sandbox-check.txt"
export DRIFTMATRIX_SANDBOX=required
bash benchmarks/gpu/run_on_device.sh $((budget - $(date +%s) + t0)) "$@"
