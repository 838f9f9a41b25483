"""Code that runs inside a *target's* own Python (its vLLM, its torch, its transformers), not in
driftmatrix's: `vllm_helper.py` (the parse/config tiers), `twin_build.py` and
`twin_gemma4.py` (twins built with the target's transformers). They are run as scripts by
path and import only the standard library, the target's packages and their siblings here (`from .
import sibling`: run by path, a script makes itself a module of this folder's package, PEP 366, so
this file stays standard library only);
driftmatrix imports nothing from this folder but `vllm_paths` (standard library only), so the
two sides name vLLM's files the same way."""
