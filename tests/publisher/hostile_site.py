"""Site inputs with hostile values, built with the project's own record dataclasses in the shapes
real runs write (tests/fixtures/site, tests/fixtures/gpu): a doc page path that closes `<title>`,
headings, anchors and command text with HTML, source URLs that are `javascript:`/`data:`, causes
and log excerpts with HTML, Markdown link and image syntax, mentions and bare web URLs (`WEB`), an
annotated page with `annotate`'s own admonition and fix for them, and host paths (twins, caches, a home
checkout, pytest's tmp dir, this checkout, a venv's vLLM) in every outcome field that can hold one.

Each script payload sets `window.__pwned` to its own number: a failing test says which one ran."""

from __future__ import annotations

import json
from pathlib import Path

from driftmatrix.extractor.snippet_record import Catalog, Lint, Snippet, Source, WrittenFor
from driftmatrix.runner.outcomes.outcome_record import Evidence, Outcome, TargetRef

REPO = Path(__file__).resolve().parents[2]
IMG = "<img src=x onerror=window.__pwned=2>"
PAGE_FILE = "docs/</title><script>window.__pwned=1</script>.md"
HTML_FILE = "page</title><svg onload=window.__pwned=6>.html"
TWIN_PATH = "/root/dmcache/standins/Qwen-Qwen3-8B-65b193c28268"
CACHED = "/root/.cache/driftmatrix/standins/google-gemma-4-E2B-it-0383a4e826fe"
VLLM_FILE = "/root/venv/lib/python3.11/site-packages/vllm/engine/arg_utils.py"
WEB = (
    "@vllm-project/some-team ![](https://evil.example/p.png) [fix](https://evil.example) https://evil.example/bare "
    "<https://evil.example/auto> www.evil.example user@evil.example"
)
"""Issue 30's attack, as vLLM's "invalid choice" repeats it: a mention, a tracking image, a web link,
bare and angle-bracket URLs. On a page all of it is text: no <img>, no <a> to the host."""
MD_LINK = (
    "[click](javascript:window.__pwned=9) ![i](javascript:window.__pwned=10) <javascript:window.__pwned=11> " + WEB
)
BAD_URLS = [
    "javascript:window.__pwned=3",
    "data:text/html,<script>window.__pwned=7</script>",
    " JaVaScRiPt:window.__pwned=12",
    "java\tscript:window.__pwned=13",
    "//evil.example/x",
    "vbscript:msgbox(1)",
    "/relative/../x",
]
GOOD_URL = 'https://docs.vllm.ai/en/v0.20.1/models/ok/#"><svg/onload=window.__pwned=14>'
"""An http(s) URL stays a link, whatever its fragment holds (attribute-escaped)."""


def _snippets(tmp: Path) -> list[Snippet]:
    wf = WrittenFor(">=0.20.1", f"the page says so {IMG} {MD_LINK}", "page")
    first = Source(
        "vllm-docs",
        "0.20.1",
        PAGE_FILE,
        3,
        IMG,
        BAD_URLS[0],
        f"vllm serve Qwen/Qwen3-8B --max-model-len 4096 # {IMG} {MD_LINK}",
        "fence:bash",
        wf,
    )
    second = Source(
        "html",
        "0.20.1",
        HTML_FILE,
        9,
        None,
        BAD_URLS[1],
        "vllm serve Qwen/Qwen3-8B --max-model-len 4096",
        "html:pre",
        wf,
    )
    linked = Source(
        "vllm-docs",
        "0.20.1",
        "docs/models/ok.md",
        12,
        "run",
        GOOD_URL,
        "vllm serve Qwen/Qwen3-8B --max-model-len 4096",
        "fence:bash",
        wf,
        title=f"Models {WEB}",
        heading=f"Run {WEB}",
    )
    hostile = Snippet(
        "s-0000000000a1",
        "serve",
        ["Qwen/Qwen3-8B", "--max-model-len", "4096"],
        {},
        "Qwen/Qwen3-8B",
        None,
        lints=[Lint("odd<b>", f"a lint {IMG} {MD_LINK}", 3, PAGE_FILE, "vllm-docs", "0.20.1")],
        sources=[first, second, linked],
    )
    others = [
        Snippet(
            f"s-0000000000b{i}",
            "serve",
            [f"{IMG}{i}", "--x"],
            {},
            f"{IMG} {MD_LINK} # {i}",
            None,
            runnable=i != 2,
            reason=f"not runnable {IMG} {tmp}/x" if i == 2 else None,
            sources=[
                Source(
                    "vllm-docs",
                    "0.20.1",
                    f"docs/{IMG}/p{i}.md",
                    5 + i,
                    IMG,
                    url,
                    f"vllm serve {IMG}{i}",
                    "fence:bash",
                    wf,
                )
            ],
        )
        for i, url in enumerate(BAD_URLS[2:], 1)
    ]
    return [hostile, *others]


def _fail(tmp: Path) -> Outcome:
    log = (
        f'ERROR [core.py:1136]   File "{VLLM_FILE}", line 1907, in create_engine_config\n'
        f'ERROR   File "/home/someone/checkout/runner/vllm_helper.py", line 155, in answer\n\n'
        f"{IMG} <script>window.__pwned=15</script> {MD_LINK}\nlog written to {tmp}/run/server.log\n"
        f"model {TWIN_PATH} from {REPO}/tests/x.json"
    )
    exc = {
        "type": "ValueError",
        "message": f"bad value {IMG} {MD_LINK} for {TWIN_PATH}/config.json",
        "location": {"file": VLLM_FILE, "line": 1907, "function": f"create_engine_config{IMG}"},
        "final": f"RuntimeError: Engine core initialization failed {IMG} {WEB}",
        "traceback": f'Traceback:\n  File "/home/someone/checkout/runner/vllm_helper.py", line 155\n'
        f'  File "{VLLM_FILE}", line 1907\nValueError: bad',
    }
    return Outcome(
        "s-0000000000a1",
        TargetRef("stable", "0.20.1", "132765e35", "vllm", "2.11.0", "5.8.0"),
        "config",
        "config",
        "FAIL",
        reason=f"{exc['type']}: {exc['message']}",
        stand_in=True,
        substitutions={"Qwen/Qwen3-8B": TWIN_PATH, "tokenizer": f"{tmp}/tok"},
        argv=[TWIN_PATH, "--max-model-len", "4096", "--download-dir", "/tmp/pytest-of-x/pytest-1/dl"],
        evidence=Evidence.from_json(
            dict(
                exception=exc,
                signature={"id": f"sig{IMG}", "explanation": MD_LINK},
                warnings=[
                    {
                        "file": "/root/site-0.20.1/vllm/config/speculative.py",
                        "line": 3,
                        "message": f"careful {IMG}",
                        "feature": False,
                    }
                ],
                effective_config={
                    "model": TWIN_PATH,
                    "tokenizer": f"/home/someone/checkout/tok{IMG}",
                    "download_dir": str(tmp),
                    "max_model_len": 4096,
                },
                log_excerpt=log,
                notes=[
                    f"Qwen/Qwen3-8B: stand-in qwen3 twin at {TWIN_PATH} {MD_LINK}",
                    f"carried from /home/someone/checkout/runner/envs.py and {REPO}/runner/x.py",
                    f"scratch in /tmp/pytest-of-x/pytest-1/work and {tmp}",
                ],
            )
        ),
        started="2026-12-02T16:37:37+00:00",
        duration_s=12.5,
        host={"hostname": "vm", "cpus": 2},
    )


def _warn(tmp: Path) -> Outcome:
    return Outcome(
        "s-0000000000a1",
        TargetRef(f"nightly{IMG}", "0.21.0", "abcdef123", "vllm"),
        "probe",
        "probe",
        "WARN",
        stand_in=True,
        substitutions={"Qwen/Qwen3-8B": CACHED},
        argv=[CACHED, "--max-model-len", "4096"],
        evidence=Evidence.from_json(
            dict(
                warnings=[
                    {
                        "file": "/root/site-0.21.0/vllm/config/vllm.py",
                        "line": 7,
                        "message": f"deprecated {IMG} {MD_LINK}",
                        "feature": True,
                    }
                ],
                effective_config={"model": CACHED, "async_scheduling": True},
                probes=[
                    {"name": "models", "ok": True, "status": 200, "detail": {"models": [CACHED]}, "duration_s": 0.1}
                ],
                server={"port": 1, "state": "ready", "log": f"{tmp}/server.log", "cwd": "/home/someone/checkout"},
                log_excerpt=f"loaded {CACHED}",
                notes=[f"env /root/.cache/driftmatrix/envs/vllm-0.21.0-ab/bin/python {IMG}"],
            )
        ),
        started="2026-12-02T17:00:00+00:00",
        duration_s=30.0,
        host={"hostname": "vm", "cpus": 2},
    )


def _others(snippets: list[Snippet], tmp: Path) -> list[Outcome]:
    out = []
    for s in snippets[1:]:
        out.append(
            Outcome(
                s.id,
                TargetRef("stable", "0.20.1", "132765e35", "vllm"),
                "parse",
                "parse",
                "SKIP",
                reason=f"placeholder {IMG} {MD_LINK} in {tmp}/{s.id}",
                started="2026-12-02T16:00:00+00:00",
            )
        )
    return out


def write(tmp: Path) -> tuple[Path, Path]:
    """snippets.json and outcomes.jsonl under `tmp` (which the outcomes also name, as a host path)."""
    snippets = _snippets(tmp)
    Catalog(snippets).write(tmp / "snippets.json")
    outcomes = [_fail(tmp), _warn(tmp), *_others(snippets, tmp)]
    (tmp / "outcomes.jsonl").write_text("".join(json.dumps(o.to_dict()) + "\n" for o in outcomes), encoding="utf-8")
    return tmp / "snippets.json", tmp / "outcomes.jsonl"


def annotated(tmp: Path) -> dict:
    """The site's "annotated pages" input for the hostile command, as `publish --docs` makes it: the
    admonition `annotate` writes for it (`decision`: its causes, option notes and where it runs) and
    a verified fix whose command, reasons and checks carry the hostile texts."""
    from driftmatrix.publisher import annotate as ann
    from driftmatrix.publisher.command_view import views_of
    from driftmatrix.publisher.results import load

    results = load(tmp / "snippets.json", [tmp / "outcomes.jsonl"])
    s = next(x for x in results.snippets if x.id == "s-0000000000a1")
    kind, title, body = ann.decision(views_of(results)[s.id], s.sources[0])
    block = s.sources[0].text
    adm = "\n".join(ann.admonition(kind, title, body))
    fix = ann.FixApplied(
        s.id,
        3,
        f"{block}\n```\n{MD_LINK}",
        f"vllm serve {WEB}",
        [f"why {MD_LINK}"],
        [("stable vLLM 0.20.1", "0.20.1", f"how {WEB}")],
    )
    page = ann.PagePatch(
        f"docs/annotated {IMG} {WEB}.md",
        f"{block}\n",
        f"{block}\n\n{adm}\n",
        [ann.Insert(s.id, 4, kind, f"{block}\n```\n{WEB}", adm)],
        [fix],
    )
    return ann.for_site([ann.Annotation(tmp / "docs", [page], [f"a problem {IMG} {MD_LINK}"])])
