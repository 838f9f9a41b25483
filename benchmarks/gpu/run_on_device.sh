#!/usr/bin/env bash
# Runs on the H200 machine (repository root), after the payload parts were moved to
# /root/stage/<version>/ by the carrying calls.  Unpacks what is not unpacked yet, then one
# `driftmatrix run` over the GPU pages with the given arguments, stopped (SIGTERM: servers torn
# down, finished outcomes kept) before the call's limit.  Outcomes accumulate in
# /root/dmwork/outcomes.jsonl across calls (a rerun skips finished jobs); each call returns
# the whole file, the server logs and the device report under $OUT.
#   bash benchmarks/gpu/run_on_device.sh SECONDS [driftmatrix run arguments...]
#   e.g. bash benchmarks/gpu/run_on_device.sh 520 --target vllm-0.21.0 --tier probe --stand-ins
# SNIPPETS=FILE runs another snippets file (the twins sample: benchmarks/gpu/twins_sample.py). A
# carried `.carry/sd/vllm-<version>-<hash>/` (the docs of a release's sdist, as runner/source_trees
# caches them) is put in the runner's cache: offline, the twins' architectures come from its
# docs/models/supported_models.md.
set -uo pipefail
budget=$1; shift
t0=$(date +%s)
for stage in /root/stage/*/; do
  v=$(basename "$stage")
  if [ ! -d /root/site-$v ] && [ -d /root/stage/$v ]; then
    cat /root/stage/$v/part_* | python3 -c "import sys,tarfile; tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall('/root', filter='fully_trusted')"
    # bytecode once, here: the sandbox binds the carried tree read-only (the targets file's PYTHONPATH),
    # so its processes could never write it and each would compile vLLM's imports afresh (+30 s measured
    # per `import vllm.entrypoints.openai.api_server` on a CPU runner; the wheels carry no .pyc)
    python3 -m compileall -q -j 0 /root/site-$v > /dev/null 2>&1 || true
    echo "payload $v sha256 $(cat /root/stage/$v/part_* | sha256sum | cut -c1-64)" | tee -a "$OUT/device.txt"
  fi
done
mkdir -p /root/dmwork /root/dmcache/sdists
[ -d .carry/sd ] && cp -r .carry/sd/. /root/dmcache/sdists/
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv | tee -a "$OUT/device.txt"
start=$(date +%s)
timeout -k 20 -s TERM $((budget - (start - t0) - 28)) \
  python3 -m driftmatrix.cli run "${SNIPPETS:-benchmarks/gpu/snippets.json}" --targets benchmarks/gpu/targets-h200.toml \
  --gpus 1 --cache-dir /root/dmcache --workdir /root/dmwork --format json -o /root/dmwork/outcomes.jsonl "$@" \
  > /root/dmwork/events.jsonl 2>&1
echo "driftmatrix run: exit $? after $(( $(date +%s) - start )) s" | tee -a "$OUT/device.txt"
tail -n 5 /root/dmwork/events.jsonl | cut -c1-400
nvidia-smi --query-gpu=memory.used --format=csv | tee -a "$OUT/device.txt"
echo "vLLM server processes left: $(pgrep -fc 'vllm.entrypoints|EngineCore' || true)" | tee -a "$OUT/device.txt"
cp /root/dmwork/outcomes.jsonl "$OUT/" 2>/dev/null
tar -C /root/dmwork -czf "$OUT/logs.tgz" logs events.jsonl 2>/dev/null
du -sh /root/dmcache/standins/* 2>/dev/null | tee -a "$OUT/device.txt"
