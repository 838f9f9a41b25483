"""`docker run … IMAGE args` (or `podman run`, `docker container run`) read into its parts: the
docker options (which of them take a value), the `-e` environment, the image and the server's
arguments after it (extractor/shell_commands.py makes an Invocation of them)."""

from __future__ import annotations

import re

from driftmatrix.extractor.shell_lexer import Word

_VLLM_SERVER_IMAGE = re.compile(r"^(docker\.io/)?vllm/vllm-(openai|tpu|omni)")

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


def docker_run(cmd: list[Word]) -> tuple[Word, list[str], list[Word], list[Word], bool] | None:
    """(image, docker options, env words, server args, whether the words after the image were
    `vllm serve`) for `docker run … IMAGE args`."""
    texts = [w.text for w in cmd]
    if len(texts) < 2 or texts[0] not in ("docker", "podman"):
        return None
    i = 2 if texts[1] == "run" else 3 if texts[1:3] == ["container", "run"] else 0
    if not i:
        return None
    options: list[str] = []
    env: list[Word] = []
    while i < len(cmd) and texts[i].startswith("-"):
        opt = texts[i]
        name = opt.split("=", 1)[0]
        takes_value = "=" not in opt and name in _DOCKER_VALUED
        value = cmd[i + 1] if takes_value and i + 1 < len(cmd) else None
        options.append(opt)
        if value is not None:
            options.append(value.text)
        if name in ("-e", "--env"):
            if "=" in opt[len(name) :]:
                env.append(Word(opt.split("=", 1)[1], cmd[i].line, cmd[i].expansions, cmd[i].quoted))
            elif value is not None and "=" in value.text:
                env.append(value)
        i += 2 if value is not None else 1
    if i >= len(cmd):
        return None
    image, args = cmd[i], cmd[i + 1 :]
    serve = [w.text for w in args[:2]] == ["vllm", "serve"]
    if serve:
        args = args[2:]
    elif not _VLLM_SERVER_IMAGE.match(image.text):
        return None
    return image, options, env, args, serve
