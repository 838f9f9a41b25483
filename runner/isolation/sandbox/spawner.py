"""Every process that must die with the runner (a helper, a server) is forked by one long-lived thread.

Why: a child that must die with the runner asks the kernel for SIGKILL when its parent dies
(PR_SET_PDEATHSIG; bubblewrap's `--die-with-parent` sets it too). The kernel's "parent" there is
the *thread* that forked it, not the process: a helper started from a thread pool's worker (all
targets' helpers start side by side) was killed as soon as that pool's threads ended, ~10 s after
it had imported vLLM, and the first job started it again — every run paid each target's import
twice. This thread lives as long as the runner's process, so "dies with its parent" means dies with
the runner, as intended.
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor

_FORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="driftmatrix-spawner")
"""One worker thread, started on first use and kept until the process exits (an executor's idle
worker waits for work; it is not ended when a caller's thread ends)."""


def spawn(argv: list[str], **popen_args) -> subprocess.Popen:
    """`subprocess.Popen(argv, **popen_args)`, forked by the spawner thread (see above); the caller
    gets the same Popen, and Popen's own errors (OSError) are raised in the caller."""
    return _FORKER.submit(subprocess.Popen, argv, **popen_args).result()
