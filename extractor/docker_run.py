"""A container started from a shell line, read into its parts: `docker run … IMAGE args` (or
`podman run`, `nerdctl run`, `docker container run`) — the docker options (which of them take a
value), the `-e` environment, `--entrypoint`, the image and the words after it — and `kubectl run NAME
--image=IMAGE [--command] -- words` (extractor/shell_commands.py tells what the container runs and
makes an Invocation of it). Nothing is filtered here: which of these start vLLM is the caller's
question."""

from __future__ import annotations

import re
from dataclasses import dataclass

from driftmatrix.extractor.shell_lexer import Word

_VLLM_SERVER_IMAGE = re.compile(r"^(docker\.io/)?vllm/vllm-(openai|tpu|omni)")
"""Images whose entry point is vLLM's OpenAI server (`vllm serve`; the legacy api_server module in
older tags): the words after the image are the server's arguments."""

# `docker run` options that take a value (the rest are booleans); from `docker run --help`.
_DOCKER_VALUED = {
    "-a",
    "--attach",
    "--add-host",
    "--annotation",
    "--blkio-weight",
    "--cap-add",
    "--cap-drop",
    "--cgroup-parent",
    "--cgroupns",
    "--cidfile",
    "--cpu-period",
    "--cpu-quota",
    "--cpu-shares",
    "-c",
    "--cpus",
    "--cpuset-cpus",
    "--cpuset-mems",
    "--device",
    "--device-cgroup-rule",
    "--dns",
    "--dns-option",
    "--dns-search",
    "--domainname",
    "--entrypoint",
    "-e",
    "--env",
    "--env-file",
    "--expose",
    "--gpus",
    "--group-add",
    "--health-cmd",
    "--health-interval",
    "--health-retries",
    "--health-start-period",
    "--health-timeout",
    "-h",
    "--hostname",
    "--ip",
    "--ip6",
    "--ipc",
    "--isolation",
    "--kernel-memory",
    "-l",
    "--label",
    "--label-file",
    "--link",
    "--log-driver",
    "--log-opt",
    "--mac-address",
    "-m",
    "--memory",
    "--memory-reservation",
    "--memory-swap",
    "--memory-swappiness",
    "--mount",
    "--name",
    "--network",
    "--net",
    "--network-alias",
    "--oom-score-adj",
    "--pid",
    "--pids-limit",
    "--platform",
    "-p",
    "--publish",
    "--pull",
    "--restart",
    "--runtime",
    "--security-opt",
    "--shm-size",
    "--stop-signal",
    "--stop-timeout",
    "--storage-opt",
    "--sysctl",
    "--tmpfs",
    "--ulimit",
    "-u",
    "--user",
    "--userns",
    "--uts",
    "-v",
    "--volume",
    "--volume-driver",
    "--volumes-from",
    "-w",
    "--workdir",
}


def is_server_image(image: str) -> bool:
    """Whether the image's own entry point is vLLM's OpenAI server (`vllm/vllm-openai:v0.8.5`)."""
    return _VLLM_SERVER_IMAGE.match(image) is not None


@dataclass
class ContainerRun:
    """A container a shell line starts."""

    image: Word
    options: list[str]
    """The tool's options (`--gpus all`, `--ipc=host`; kubectl's `--image=…`), values included."""
    env: list[Word]
    """`-e K=V`, `--env K=V` (kubectl `--env=K=V`) as `K=V` words."""
    entry: list[Word] | None
    """The program that replaces the image's entry point: `--entrypoint python3` -> [python3],
    `--entrypoint=""` -> [] (the words after the image are the command), kubectl's `--command -- vllm
    serve …` -> the words after `--`; None: the image's own entry point runs."""
    args: list[Word]
    """The words after the image (kubectl: after `--`), appended to the entry point."""


def container_run(cmd: list[Word]) -> ContainerRun | None:
    """`docker run …`, `podman run …`, `docker container run …` or `kubectl run …`, read; else None."""
    texts = [w.text for w in cmd]
    if texts[:2] == ["kubectl", "run"]:
        return _kubectl_run(cmd)
    if len(texts) < 2 or texts[0] not in ("docker", "podman", "nerdctl"):
        return None
    i = 2 if texts[1] == "run" else 3 if texts[1:3] == ["container", "run"] else 0
    return _docker_run(cmd, i) if i else None


def _docker_run(cmd: list[Word], i: int) -> ContainerRun | None:
    options: list[str] = []
    env: list[Word] = []
    entry: list[Word] | None = None
    while i < len(cmd) and cmd[i].text.startswith("-"):
        opt = cmd[i].text
        name = opt.split("=", 1)[0]
        takes_value = "=" not in opt and name in _DOCKER_VALUED
        value = cmd[i + 1] if takes_value and i + 1 < len(cmd) else None
        options.append(opt)
        if value is not None:
            options.append(value.text)
        inline = _inline(cmd[i], name)
        if name in ("-e", "--env"):
            if inline is not None:
                env.append(inline)
            elif value is not None and "=" in value.text:
                env.append(value)
        elif name == "--entrypoint":
            entry = _entry_words(inline if inline is not None else value)
        i += 2 if value is not None else 1
    if i >= len(cmd):
        return None
    return ContainerRun(cmd[i], options, env, entry, cmd[i + 1 :])


def _inline(word: Word, name: str) -> Word | None:
    """The value of `--name=value` as a word of its own, or None (no `=`)."""
    if "=" not in word.text[len(name) :]:
        return None
    return Word(word.text.split("=", 1)[1], word.line, word.expansions, word.quoted)


def _entry_words(word: Word | None) -> list[Word] | None:
    """`--entrypoint X`: X as the program ("" clears the entry point); `--entrypoint "vllm serve"`,
    which docker would look up as one program, is read as the `vllm serve` its author meant."""
    if word is None:
        return None
    if word.text == "":
        return []
    return [Word(part, word.line) for part in word.text.split()] if word.text == "vllm serve" else [word]


# `kubectl run` options that take a value (`--image IMAGE` as well as `--image=IMAGE`).
_KUBECTL_VALUED = {
    "--image",
    "--env",
    "--port",
    "-l",
    "--labels",
    "--overrides",
    "--override-type",
    "-n",
    "--namespace",
    "--restart",
    "--image-pull-policy",
    "--serviceaccount",
    "--annotations",
    "--pod-running-timeout",
    "--timeout",
    "-o",
    "--output",
    "--context",
    "--cluster",
    "--kubeconfig",
    "--field-manager",
    "--dry-run",
}


def _kubectl_run(cmd: list[Word]) -> ContainerRun | None:
    """`kubectl run NAME --image=IMAGE [--env=K=V] [--command] -- WORDS`: WORDS are the container's
    arguments (its image's entry point runs them), or with `--command` its command."""
    options: list[str] = []
    env: list[Word] = []
    image: Word | None = None
    positional: list[Word] = []
    command = False
    i = 2
    while i < len(cmd) and cmd[i].text != "--":
        opt = cmd[i].text
        name = opt.split("=", 1)[0]
        if not opt.startswith("-"):
            positional.append(cmd[i])
            i += 1
            continue
        value = _inline(cmd[i], name)
        took = value is None and name in _KUBECTL_VALUED and i + 1 < len(cmd)
        if took:
            value = cmd[i + 1]
        options += [opt, value.text] if took else [opt]
        if name == "--image" and value is not None:
            image = value
        elif name == "--env" and value is not None and "=" in value.text:
            env.append(value)
        command = command or name == "--command"
        i += 2 if took else 1
    if image is None:
        return None
    words = cmd[i + 1 :] if i < len(cmd) else positional[1:]  # after `--`, else after NAME
    return ContainerRun(image, options, env, words if command else None, [] if command else words)
