#!/usr/bin/env bash
# Build the payload that carries a CUDA vLLM onto the H200 machine (which cannot download
# anything): the vllm wheel + its requirements resolved as of the
# release date for CPython 3.12 / manylinux x86_64, minus what the device image has (torch,
# torchvision, torchaudio, triton) and the optional GPU extras small dense models never use,
# unzipped into one site/ folder, FA2 and xgrammar's static library dropped, xz-compressed and
# split into 48 MiB parts (one per `run` call, each carried from an ignored folder).
#
#   [PINS="transformers==5.8.0"] [KEEP="nvidia-cutlass-dsl"] benchmarks/gpu/prepare_payload.sh VERSION RELEASE_DATE WORKDIR
#   e.g. PINS="transformers==5.8.0" benchmarks/gpu/prepare_payload.sh 0.20.1 2026-05-04 /work/gpuprep
# PINS replaces the resolved versions of those packages (vLLM 0.20.1 + Gemma 4 needs
# transformers 5.8: 5.7 mis-loads the assistant, 5.17 on the device writes per-layer configs).
set -euo pipefail
version=$1 date=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work" && cd "$work"
[ -x uvenv/bin/uv ] || { python3 -m venv uvenv && uvenv/bin/pip install -q uv; }
plat=(); for n in 5 12 17 24 26 27 28 31 34 35; do plat+=(--platform "manylinux_2_${n}_x86_64"); done
plat+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64 --platform linux_x86_64)
mkdir -p "wheels-$version"
ls "wheels-$version"/vllm-*.whl >/dev/null 2>&1 || pip download "vllm==$version" --no-deps --only-binary=:all: \
  --python-version 3.12 --implementation cp "${plat[@]}" -d "wheels-$version"
whl=$(ls "wheels-$version"/vllm-*.whl | head -1)
unzip -p "$whl" "vllm-$version.dist-info/METADATA" | sed -n 's/^Requires-Dist: //p' | grep -v 'extra ==' \
  > "req-$version.in"
skip="torch torchvision torchaudio triton flashinfer-python flashinfer-cubin tilelang nvidia-cudnn-frontend \
fastsafetensors nvidia-cutlass-dsl quack-kernels tokenspeed-mla"
# KEEP="nvidia-cutlass-dsl" carries an extra after all (vLLM 0.26.0 runs Gemma 4's attention through
# FlashAttention 4's CuTe path, which imports cutlass: ~90 MB compressed, two more parts)
for name in ${KEEP:-}; do skip=$(echo " $skip " | sed "s/ $name / /"); done
: > "overrides-$version.txt"
for name in $skip; do echo "$name ; sys_platform == 'never'" >> "overrides-$version.txt"; done
uvenv/bin/uv pip compile "req-$version.in" --python-version 3.12 --python-platform x86_64-manylinux_2_35 \
  --exclude-newer "${date}T00:00:00Z" --override "overrides-$version.txt" --no-header --no-annotate \
  -o "lock-$version.txt"
# what the device image already has (../.library/device/KINDS.md, "Python packages already
# there"), except transformers/tokenizers: vLLM 0.20.1 needs transformers 5.8 for Gemma 4
has=" $(tr ',' '\n' < "$here/device-packages.txt" | tr -d ' ' | tr 'A-Z_' 'a-z-' | tr '\n' ' ') "
grep -v '^ *#' "lock-$version.txt" | sed 's/ *;.*//' | grep . | while read -r pin; do
  name=$(echo "${pin%%==*}" | tr 'A-Z_' 'a-z-')
  case "$has" in *" $name "*) [ "$name" = transformers ] || [ "$name" = tokenizers ] || continue ;; esac
  echo "$pin"
done > "pins-$version.txt"
for pin in ${PINS:-}; do
  name=${pin%%==*}; grep -vi "^$name==" "pins-$version.txt" > "pins-$version.tmp" || true
  echo "$pin" >> "pins-$version.tmp"; mv "pins-$version.tmp" "pins-$version.txt"
done
pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${plat[@]}" \
  -r "pins-$version.txt" -d "wheels-$version" >/dev/null
rm -rf "site-$version" && mkdir "site-$version"
python3 -m zipfile -e "$whl" "site-$version/"
while read -r pin; do  # only the pinned wheels (the folder may hold older downloads)
  stem=$(echo "${pin%%==*}" | tr 'A-Z-' 'a-z_'); ver=${pin##*==}
  for w in "wheels-$version"/*.whl; do
    b=$(basename "$w" | tr 'A-Z-' 'a-z_')
    case "$b" in "${stem}_${ver}_"*|"${stem}_${ver}."*) python3 -m zipfile -e "$w" "site-$version/" ;; esac
  done
done < "pins-$version.txt"
rm -f "site-$version"/vllm/vllm_flash_attn/_vllm_fa2_C*.so
rm -rf "site-$version"/xgrammar/lib
du -sh "site-$version"
tar -C "$work" -cf - "site-$version" | xz -T2 -6 > "payload-$version.tar.xz"
rm -rf "parts-$version" && mkdir "parts-$version"
split -b 48M -d "payload-$version.tar.xz" "parts-$version/part_"
sha256sum "payload-$version.tar.xz" | tee "payload-$version.sha256"
ls -la "parts-$version"
