"""flaghistory/head.py: a head's read folded into the history as one more, newest release gives
exactly what `build.assemble` gives with that read as the newest release (synthetic reads that take
every turn — removal, return, deprecation, a domain not read — and the real reads of vLLM releases),
and the readers of the history answer for the head like for any release."""

from __future__ import annotations

import json

import httpx
import pytest

from driftmatrix.flaghistory.build import ReleaseRead, assemble, read_all
from driftmatrix.flaghistory.command_check import check_argv
from driftmatrix.flaghistory.commands import explain, explain_use
from driftmatrix.flaghistory.head import HeadError, head_label, with_head
from driftmatrix.flaghistory.history import FlagHistory
from driftmatrix.flaghistory.sources import list_releases
from driftmatrix.flaghistory.uses import Use
from driftmatrix.runner.settings import cache_dir


def _domain(names, deprecated=None, open_=None, fold=None, where="vllm/config/x.py"):
    return {
        "domain": "values of --x",
        "from": "literal",
        "where": where,
        "values": list(names),
        "fold": fold,
        "open": open_,
        "deprecated": deprecated or {},
        "open_with": [],
        "model_dependent": None,
    }


def _keys(names, closed=True, deprecated=None):
    return {
        "class": "XConfig",
        "where": "vllm/config/x.py",
        "closed": closed,
        "keys": list(names),
        "deprecated": deprecated or {},
    }


def _reads() -> list[ReleaseRead]:
    """Five releases: an option removed and back, one deprecated twice (the later text naming a
    replacement), a domain read in some releases only, a domain turning open, keys closing."""
    dep = {"--old": {"text": "old is deprecated", "replacement": None}}
    dep2 = {"--old": {"text": "use --new", "replacement": "--new"}}
    return [
        ReleaseRead(
            "0.1.0",
            ["--a", "--old", "--x", "-q", "--quantization"],
            {},
            [],
            [],
            {"--x": _domain(["p", "q"]), "--quantization": _domain(["awq"])},
            {"--cfg": _keys(["k1"], closed=False)},
            {"-q": "--quantization"},
        ),
        ReleaseRead(
            "0.2.0",
            ["--a", "--old", "--x", "--quantization"],
            dep,
            ["--option.key"],
            ["a diagnostic"],
            {
                "--quantization": _domain(
                    ["awq", "gptq"], deprecated={"awq": {"text": "awq is old", "replacement": None}}
                )
            },
            {"--cfg": _keys(["k1", "k2"])},
            {},
        ),
        ReleaseRead(
            "0.3.0",
            ["--old", "--x", "--new", "--quantization"],
            dep2,
            ["--option.key"],
            [],
            {"--x": _domain(["q", "r"], open_="str | X"), "--quantization": _domain(["gptq"], fold="lower")},
            {"--cfg": _keys(["k2"]), "--other": _keys(["z"])},
            {},
        ),
        ReleaseRead(
            "0.4.0",
            ["--x", "--new", "--quantization", "--a"],
            {},
            ["--option.key", "-O<level>"],
            [],
            {"--x": _domain(["p", "r"]), "--quantization": _domain(["awq", "gptq"])},
            {"--cfg": _keys(["k1", "k2", "k3"], deprecated={"k2": {"text": "k2 goes", "replacement": "k3"}})},
            {},
        ),
        ReleaseRead(
            "0.5.0",
            ["--x", "--a", "--brand-new", "--old", "-q", "--quantization"],
            {"--old": {"text": "back, still deprecated", "replacement": None}},
            ["-O<level>"],
            ["head note"],
            {"--quantization": _domain(["gptq", "marlin"]), "--brand": _domain(["b"], open_="str")},
            {"--cfg": _keys(["k3"], closed=False), "--new-cfg": _keys(["n"])},
            {"-q": "--quantization"},
        ),
    ]


def _same(folded: dict, whole: dict) -> None:
    folded = {k: v for k, v in folded.items() if k != "head"}
    for key in sorted(set(folded) | set(whole)):
        assert json.loads(json.dumps(folded.get(key))) == json.loads(json.dumps(whole.get(key))), key


@pytest.mark.parametrize("upto", [1, 2, 3, 4])
def test_folding_one_more_release_is_assemble(upto):
    reads = _reads()[: upto + 1]
    _same(with_head(assemble(reads[:-1], "src"), reads[-1], reads[-1].version), assemble(reads, "src"))


@pytest.mark.network
def test_folding_real_releases_is_assemble():
    """The real reads of vLLM's releases (cached under the driftmatrix cache once read): the newest
    of them folded in as a head is what the history of all of them says."""
    wanted = ["0.10.0", "0.17.0", "0.20.1", "0.30.0", "0.32.0", "0.33.0", "0.34.0"]
    with httpx.Client(timeout=120, follow_redirects=True) as client:
        releases = [r for r in list_releases(client, since="0.10.0") if r.version in wanted]
        reads = read_all(releases, cache_dir() / "flag-history", client)
    assert [r.version for r in reads] == wanted and all(r.options for r in reads)
    for upto in (3, len(reads) - 1):
        _same(
            with_head(assemble(reads[:upto], "src"), reads[upto], reads[upto].version),
            assemble(reads[: upto + 1], "src"),
        )


def _head_history() -> tuple[FlagHistory, str]:
    reads = _reads()
    base = assemble(reads[:-1], "src")
    label = head_label(base, "head", "1A2B3C4d")
    about = {"name": "the head's sources (vllm/ at 1a2b3c4)", "commit": "1a2b3c4"}
    return FlagHistory(with_head(base, reads[-1], label, about)), label


def test_the_head_is_the_newest_release_and_found_by_its_label():
    history, label = _head_history()
    assert label == "0.4.0+head.1a2b3c4d" and history.releases[-1] == label
    assert history.release_for(label) == label and history.release_for("0.4.0") == "0.4.0"
    assert history.release_for("0.4.0+cpu") == "0.4.0"
    assert history.options(label) == {"--x", "--a", "--brand-new", "--old", "-q", "--quantization"}
    assert history.data["head"]["after"] == "0.4.0" and history.data["head"]["commit"] == "1a2b3c4"


def test_what_the_head_adds_passes_and_what_it_removes_fails_in_its_words():
    history, label = _head_history()
    added = check_argv(history, ["vllm", "serve", "m", "--brand-new", "--quantization", "marlin"], [label])
    assert added.ok
    removed = check_argv(history, ["vllm", "serve", "m", "--new", "1"], [label])
    assert not removed.ok
    assert removed.uses[0].why[label] == (
        "--new is not in the head's sources (vllm/ at 1a2b3c4): vLLM 0.4.0 has it, the change removes or renames it"
    )
    # a release asked about an option only the head has: said as new in the head
    assert explain(history, "--brand-new", "0.4.0").startswith("--brand-new is new in the head's sources")
    # a value the head dropped, and one dropped releases ago keeps the history's own words
    awq = explain_use(history, Use("value", "--quantization", "--quantization", value="awq"), label)
    assert awq.startswith("`--quantization awq` is not in the values of --x of the head's sources")
    # an option removed before the head (not by it): the history's explanation
    assert explain(history, "--new", "0.2.0").startswith("--new was added in vLLM 0.3.0")


def test_a_head_that_gave_nothing_is_refused():
    reads = _reads()
    with pytest.raises(HeadError, match="no `vllm serve` options"):
        with_head(assemble(reads, "src"), ReleaseRead("x", diagnostics=["no serve sub-parser found"]), "0.5.0+head.a")
    with pytest.raises(HeadError, match="does not sort after"):
        with_head(assemble(reads, "src"), reads[0], "0.4.0+head.a")
