"""One command against the option history, release by release: for each of its options, values
and keys, the releases that take it; the releases on which the whole command parses; vLLM's own
deprecation words. No vLLM is needed: the history is read from each release's sources (statically).

"Parses" means every option exists and every value and key the history can judge is known to that
release. A value the history cannot judge (not read for that release, a placeholder, a plugin
option that may add names, a key vLLM ignores) never makes a command fail here; whether a known
value *works* with the command's model (a speculative method for a draft, a quantization for a
checkpoint) is said as "depends on the model" and left to runs (`driftmatrix check --run`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from driftmatrix.common import vllm_plugins
from driftmatrix.flaghistory.commands import deprecation_of, explain_use
from driftmatrix.flaghistory.history import FlagHistory
from driftmatrix.flaghistory.nearest import nearest
from driftmatrix.flaghistory.uses import Use, uses_of


def runs_of(releases: list[str], good: list[bool]) -> list[list[str]]:
    """[[first, last], …]: the unbroken runs of releases where `good` holds, oldest first."""
    runs: list[list[str]] = []
    for release, ok, before in zip(releases, good, [False, *good]):
        if ok and before:
            runs[-1][1] = release
        elif ok:
            runs.append([release, release])
    return runs


@dataclass
class UseAnswer:
    """What the history says of one option, value or key of the command."""

    use: Use
    accepted: list[list[str]]
    """The runs of releases that take it ([first, last], oldest first); [] when none does."""
    unanswered: list[list[str]]
    """The runs of releases the history cannot answer for (names not read, a placeholder, a plugin)."""
    on: dict[str, bool | None]
    """The asked releases: True takes it, False rejects it, None cannot say."""
    why: dict[str, str] = field(default_factory=dict)
    """Per asked release that rejects it: why, in vLLM's words where the history has them."""
    deprecated: dict | None = None
    """{since, text, replacement}: vLLM's deprecation at the newest asked release that takes it."""
    model_dependent: str | None = None
    """Set when whether this known value works depends on the model (runs decide, the history does not)."""
    plugin: str | None = None
    """Set when a plugin the page is written for may register this value (common/vllm_plugins.py):
    "registered by a plugin (vllm-gaudi), cannot say" — the history of stock vLLM does not decide it."""
    nearest: dict[str, list[str]] = field(default_factory=dict)
    """Per asked release that rejects a name no release read has: its nearest names there, best
    first (flaghistory/nearest.py: "did you mean --tool-parser-plugin?"); `why` ends with them too."""

    def as_json(self) -> dict:
        u = self.use
        return {
            "kind": u.kind,
            "text": u.text(),
            "option": u.option,
            "value": u.value,
            "key": u.key,
            "accepted": self.accepted,
            "unanswered": self.unanswered,
            "on": self.on,
            "why": self.why,
            "deprecated": self.deprecated,
            "model_dependent": self.model_dependent,
            "plugin": self.plugin,
            "nearest": self.nearest,
        }


@dataclass
class CommandCheck:
    """The whole command against the history."""

    argv: list[str]
    releases: list[str]
    """Every release the history read, oldest first."""
    parses: list[list[str]]
    """The runs of releases on which the whole command parses."""
    asked: list[str]
    """The releases asked about (`--version`, the page's releases, or the stable release)."""
    uses: list[UseAnswer]
    unread: list[str] = field(default_factory=list)
    """Asked releases the history has no reading for (before its first release, or not a version)."""

    @property
    def oldest(self) -> str | None:
        return self.parses[0][0] if self.parses else None

    @property
    def newest(self) -> str | None:
        return self.parses[-1][1] if self.parses else None

    def parses_on(self, release: str) -> bool | None:
        """None: the history read no such release."""
        if release in self.unread:
            return None
        return all(a.on.get(release) is not False for a in self.uses)

    @property
    def ok(self) -> bool:
        """The exit status's question: does it parse on every asked release (each one read)?"""
        return all(self.parses_on(r) for r in self.asked)

    def as_json(self) -> dict:
        return {
            "argv": self.argv,
            "asked": self.asked,
            "ok": self.ok,
            "unread": self.unread,
            "parses_on": {r: self.parses_on(r) for r in self.asked},
            "parses": self.parses,
            "oldest": self.oldest,
            "newest": self.newest,
            "releases": [self.releases[0], self.releases[-1]] if self.releases else [],
            "uses": [a.as_json() for a in self.uses],
        }


def _answer(
    history: FlagHistory, use: Use, answers: list[bool | None], asked: list[str], given: frozenset[str]
) -> UseAnswer:
    """`answers`: the history's, release by release."""
    on = {r: history.accepts_use(use, r, given) for r in asked}
    why = {r: text for r, ok in on.items() if ok is False and (text := explain_use(history, use, r))}
    taking = [r for r in asked if on[r]]
    deprecated = deprecation_of(history, use, taking[-1]) if taking else None
    dependent = history.values.get(use.domain, {}).get("model_dependent") if use.kind == "value" else None
    near = {r: list(names) for r, ok in on.items() if ok is False and (names := nearest(history, use, r))}
    return UseAnswer(
        use,
        runs_of(history.releases, [a is True for a in answers]),
        runs_of(history.releases, [a is None for a in answers]),
        on,
        why,
        deprecated,
        dependent,
        nearest=near,
    )


def _plugin_value(history: FlagHistory, use: Use, plugins: list[str]) -> str | None:
    """A value a plugin may register, or an option one may add, on a command written for a plugin."""
    return vllm_plugins.registered_value(use.kind, use.domain, plugins) or vllm_plugins.added_option(
        use.kind, history.record(use.written) is not None, plugins
    )


def check_argv(history: FlagHistory, argv: list[str], asked: list[str], plugins: list[str] = ()) -> CommandCheck:
    """`asked`: release versions (a build's `0.20.1+cpu` or a nightly read as the history reads them);
    `plugins`: the vLLM plugins the command's page is written for (their values: cannot say)."""
    uses = uses_of(history, argv)
    given = frozenset(u.option for u in uses)
    table = [
        [
            None if _plugin_value(history, u, list(plugins)) else history.accepts_use(u, r, given)
            for r in history.releases
        ]
        for u in uses
    ]
    answers = [_answer(history, u, row, asked, given) for u, row in zip(uses, table)]
    for answer in answers:
        if why := _plugin_value(history, answer.use, list(plugins)):
            answer.plugin, answer.on, answer.why, answer.model_dependent = why, dict.fromkeys(answer.on), {}, None
            answer.nearest = {}
    whole = [all(row[i] is not False for row in table) for i in range(len(history.releases))]
    unread = [r for r in asked if history.release_for(r) is None]
    return CommandCheck(argv, list(history.releases), runs_of(history.releases, whole), asked, answers, unread)
