"""How both sides name a vLLM source file: `vllm/…/file.py`, wherever vLLM is installed
(site-packages, a carried tree like /root/site-0.20.1/vllm, a source checkout). Standard library
only: imported by `vllm_helper.py` in a target's Python and by driftmatrix's log reader."""


def relative(path: str) -> str:
    """`vllm/...` for a file of an installed vLLM; any other path unchanged."""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.rsplit(marker, 1)[1]
    if "/vllm/" in path:
        return "vllm/" + path.rsplit("/vllm/", 1)[1]
    return path
