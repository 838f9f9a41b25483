#!/usr/bin/env bash
# Runs on the H200 machine (repository root), after the payload parts were moved to
# /root/stage/<version>/ by the carrying calls.  Unpacks, then `driftmatrix run` on the
# GPU page for the given targets; outcomes + logs under $OUT.
#   bash benchmarks/gpu/run_on_device.sh TIER TARGET...
set -uo pipefail
tier=$1; shift
for v in 0.20.1 0.21.0; do
  if [ ! -d /root/site-$v ] && [ -d /root/stage/$v ]; then
    cat /root/stage/$v/part_* | python3 -c "import sys,tarfile; tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall('/root', filter='fully_trusted')"
  fi
done
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv | tee "$OUT/device.txt"
args=(); for t in "$@"; do args+=(--target "$t"); done
python3 -m driftmatrix.cli run benchmarks/gpu/snippets.json --targets benchmarks/gpu/targets-h200.toml \
  "${args[@]}" --tier "$tier" --stand-ins --gpus 1 --cache-dir /root/dmcache --workdir /root/dmwork \
  --format json -o "$OUT/outcomes.jsonl" 2>&1 | tail -n 40
nvidia-smi --query-gpu=memory.used --format=csv | tee -a "$OUT/device.txt"
tar -C /root/dmwork -czf "$OUT/logs.tgz" logs 2>/dev/null
