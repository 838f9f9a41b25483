"""Commands for a `docker` target (GPU runners with a Docker engine): vLLM in its image.

The helper runs inside the image with `runner/intarget/` mounted; servers use the host's
network so the runner's loopback port and /health work unchanged; local model dirs are
mounted read-only at the same paths.  Teardown removes the container by name, since
killing the `docker run` client does not stop it.
"""

from __future__ import annotations

from runner.helper_client import HELPER

INNER = "/driftmatrix"
INNER_HELPER = f"{INNER}/{HELPER.name}"


def _mounts(dirs: list[str]) -> list[str]:
    return [a for d in sorted(set(dirs)) for a in ("-v", f"{d}:{d}:ro")]


def helper_command(image: str, model_dirs: list[str], env: dict[str, str]) -> list[str]:
    envs = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
    return ["docker", "run", "-i", "--rm", "--network", "none", *envs, *_mounts(model_dirs),
            "-v", f"{HELPER.parent}:{INNER}:ro", "--entrypoint", "python3", image, INNER_HELPER]


def server_command(image: str, name: str, serve_argv: list[str], env: dict[str, str], model_dirs: list[str],
                   gpu_ids: list[int]) -> list[str]:
    """`docker run` for the image's `vllm serve` entrypoint; `serve_argv` = args after `vllm serve`."""
    gpus = ["--gpus", f'"device={",".join(map(str, gpu_ids))}"'] if gpu_ids else ["--gpus", "all"]
    envs = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
    return ["docker", "run", "--rm", "--init", "--name", name, "--network", "host", "--ipc", "host", *gpus,
            *envs, *_mounts(model_dirs), image, *serve_argv]


def cleanup_command(name: str) -> list[str]:
    return ["docker", "rm", "-f", name]
