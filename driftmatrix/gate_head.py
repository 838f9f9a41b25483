"""`driftmatrix gate` in vLLM's own repository: the changed pages judged against the pull request's
own sources, not against released builds.

A page on vLLM's main branch is written for the code beside it. Judged on released builds, a pull
request that adds an option and documents it is "new doc-drift" (no release has the option yet),
and one that renames an option passes while its docs keep the old name — after ten minutes and
13 GB of installs. So where the repository is a vLLM source tree (its head holds the file the option
reader starts from), the head commit's `vllm/` is read statically by the reader every release is
read with (flaghistory/head_sources.py) and appended to the option history as its newest release
(flaghistory/head.py); each command on a changed page is asked about that head only, with the
machinery of `driftmatrix check` (`check_argv`). An option the change adds passes; one it removes
or renames fails in the head's words; one removed releases ago fails in vLLM's own. Nothing is
installed, started or run: no sandbox is needed.

Doc-drift is new unless the base version of the page has the same command and it fails there too
— judged against the *base's* sources (the merge base's `vllm/`, the same read when the change
leaves `vllm/` alone): a change that renames an option in the code and keeps the old name on a page
it touches brings that drift in. `--mode builds` (or `--builds`) keeps the build gate; in a vLLM
source tree it is advisory (released builds are not this change's code): said, never failing.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from driftmatrix.common.inert import code_span, terminal
from driftmatrix.gate import (
    Finding,
    GateError,
    GateResult,
    _git,
    _saved,
    changed_catalogs,
    changed_files,
    cmd_gate,
    markdown,
)
from driftmatrix.gate import add_parser as add_build_parser

MODES = ("auto", "head", "builds")
ADVISORY = (
    "Advisory: the builds checked are released vLLM, not this change's code (a vLLM source tree is "
    "judged against its own sources by default, `--mode head`); doc-drift here does not fail the gate."
)


# -- which mode ---------------------------------------------------------------------------------
def chosen_mode(args) -> str:
    """`head` where the change's head is a vLLM source tree (or `--mode head`), else `builds`; a
    build run in a vLLM source tree is marked advisory on `args`."""
    from driftmatrix.flaghistory.head_sources import is_vllm_commit

    vllm_tree = is_vllm_commit(Path(args.repo), args.head)
    if args.mode == "head" or (args.mode == "auto" and vllm_tree):
        return "head"
    args.advisory = ADVISORY if vllm_tree else ""
    return "builds"


def cmd_gate_modes(args) -> int:
    return cmd_gate_head(args) if chosen_mode(args) == "head" else cmd_gate(args)


def add_parser(sub) -> None:
    """The gate's parser (driftmatrix/gate.py) with the choice of what to judge against."""
    add_build_parser(sub)
    g = sub.choices["gate"]
    g.add_argument(
        "--mode",
        choices=MODES,
        default="auto",
        help="head: against the change's own vLLM sources, read statically (nothing installed or run); "
        "builds: run on the targets' CPU builds (advisory in a vLLM source tree); auto (default): "
        "head where the repository is a vLLM source tree, else builds",
    )
    g.add_argument("--builds", dest="mode", action="store_const", const="builds", help="the same as --mode builds")
    g.set_defaults(func=cmd_gate_modes)


# -- head mode ----------------------------------------------------------------------------------
def _histories(repo: Path, head: str, merge_base: str, cache: Path):
    """(head history, its label, base history, its label): the shipped history with the head's
    sources (and the base's, when `vllm/` differs) as the newest release."""
    from driftmatrix.flaghistory.commands import shipped
    from driftmatrix.flaghistory.head_sources import at_commit, head_history, is_vllm_commit

    shipped_history = shipped()
    if shipped_history is None:
        raise GateError("no usable option history (the shipped copy or DRIFTMATRIX_FLAG_HISTORY)")
    if not is_vllm_commit(repo, head):
        raise GateError(
            f"{head}: not a vLLM source tree (none of vllm/engine/arg_utils.py, "
            "vllm/entrypoints/cli/serve.py, vllm/scripts.py): --mode head has nothing to read"
        )
    source = at_commit(repo, head)
    head_hist = head_history(shipped_history, source, cache, repo)
    base_hist = head_hist
    if is_vllm_commit(repo, merge_base) and (base := at_commit(repo, merge_base)).key != source.key:
        base = replace(base, name=f"the base's sources (vllm/ at {base.ident})")
        base_hist = head_history(shipped_history, base, cache, repo)
    return head_hist, base_hist


def verdict(history, snippet) -> tuple[str, str]:
    """(judgement, why) of one command against the history's head: `doc-drift` when the head lacks
    an option, value or key of it (`check_argv`'s answer), `ok` when it parses there, `unknown` for
    what is not `vllm serve`'s options (LLM() arguments, another subcommand)."""
    from driftmatrix.common.vllm_plugins import plugins_of
    from driftmatrix.flaghistory.command_check import check_argv
    from driftmatrix.publisher.option_verdict import JUDGED_KINDS

    label = history.releases[-1]
    if snippet.kind not in JUDGED_KINDS:
        return "unknown", "not `vllm serve` options: not judged from the sources"
    check = check_argv(history, list(snippet.argv or []), [label], plugins_of(snippet))
    rejected = [a for a in check.uses if a.on.get(label) is False]
    if not rejected:
        return "ok", ""
    name = history.data["head"]["name"]
    return "doc-drift", "; ".join(a.why.get(label) or f"{a.use.text()} is not in {name}" for a in rejected)


def judge_head(head_cat, base_cat, changed: dict[str, str | None], head_hist, base_hist) -> list[Finding]:
    """Every (command, changed page) judgement; doc-drift is new unless the base page has the same
    command and the base's sources reject it too."""
    from driftmatrix.publisher.command_text import command

    base_by_id = {s.id: s for s in base_cat.snippets}
    findings = []
    for s in head_cat.snippets:
        kind, why = verdict(head_hist, s)
        for src in s.sources:
            new = False
            if kind == "doc-drift":
                old = base_by_id.get(s.id)
                on_base = old is not None and any(b.file == changed.get(src.file) for b in old.sources)
                new = not (on_base and verdict(base_hist, old)[0] == "doc-drift")
            findings.append(Finding(s.id, src.file, src.line, command(s), kind, new, why))
    return findings


def _described(result: GateResult, head_hist, base_hist) -> None:
    head = head_hist.data["head"]
    result.judged = f"against the change's own vLLM sources (vllm/ at {head['commit'][:7]})"
    result.notes.append(
        f"Each command on a changed page is asked about {head['name']} — commit {code_span(head['commit'])}, "
        f"read statically as release {code_span(head['label'])} after vLLM {code_span(head['after'])} — with the "
        "options, values and keys the option history reads from every release; nothing was installed or run."
    )
    if base_hist is not head_hist:
        result.notes.append(f"Drift already on the base: judged against {base_hist.data['head']['name']}.")


def run_head_gate(
    repo: Path, base: str, head: str, paths: list[str], work: Path, cache: Path, stable: str | None = None
) -> GateResult:
    from driftmatrix.release_pins import todays_stable

    result = GateResult(mode="head")
    changed = changed_files(repo, base, head, paths)
    work.mkdir(parents=True, exist_ok=True)
    merge_base = _git(repo, "merge-base", base, head).strip()
    head_hist, base_hist = _histories(repo, head, merge_base, cache)
    _described(result, head_hist, base_hist)
    stable = stable or todays_stable()
    found = changed_catalogs(repo, merge_base, head, paths, changed, work, None, stable, result)
    if found is None:
        return _saved(result, work)
    changed, head_cat, base_cat = found
    result.findings = judge_head(head_cat, base_cat, changed, head_hist, base_hist)
    return _saved(result, work)


def cmd_gate_head(args) -> int:
    """Head mode's exit status: 1 new doc-drift, 2 the change or the sources could not be read (never
    read as new doc-drift), 0 otherwise."""
    from driftmatrix.common.step_summary import write
    from driftmatrix.flaghistory.head import HeadError
    from driftmatrix.flaghistory.head_sources import SourcesError
    from driftmatrix.runner.settings import cache_dir

    cache = (Path(args.cache_dir) if args.cache_dir else cache_dir()) / "head-reads"
    try:
        result = run_head_gate(
            Path(args.repo), args.base, args.head, args.paths, Path(args.workdir), cache, args.stable
        )
    except (GateError, SourcesError, HeadError) as err:
        print(f"driftmatrix gate: {terminal(err)}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 — a crash is ours: never the exit status of new doc-drift
        print(f"driftmatrix gate: internal error ({type(err).__name__}: {terminal(err)})", file=sys.stderr)
        return 2
    full = code_span(Path(args.workdir) / "gate.json")
    text = markdown(result, "parse", full)
    print(terminal(text))
    write(text, args.summary, full)
    return 1 if result.new_drift else 0
