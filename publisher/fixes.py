"""Fix candidates for documented commands, and which of them the runner verified.

A candidate is a text edit of the command as the page shows it (publisher/fix_edits.py), made
only where the evidence says what the fix is:
- a build of the page's versions rejects an option (`unrecognized arguments`) that the option
  history says was removed: its replacement when vLLM's deprecation text names one (`--disable-x`
  replaced by `--enable-x` becomes `--no-enable-x`, the same meaning); dropped when the command
  already gives that replacement with the same meaning (`--enable-reasoning --reasoning-parser
  deepseek_r1`: "When `--reasoning-parser` is specified, reasoning mode is automatically enabled"),
  or when vLLM's text says the option has no effect any more; any other rejected option: no candidate;
- a `key=value` value where the option takes JSON, when a build of the page's versions fails
  on it: the JSON form;
- an option, value or config key no vLLM release read has, refused by the failing builds, whose
  releases have one clear nearest name (publisher/nearest_fix.py): that name — a guess from the
  spelling, verified like any candidate only by running it;
- an unknown speculative `method` (the engine config refuses it): the config without `method`,
  so the release resolves one for the draft model (the fix's engine config records which);
- `\\` followed by blanks or a comment (bash ends the command there): `\\`, comments above.
The fixed text is extracted again by the real extractor; the fix is a Snippet (`fix` set, the
documented command's id) that `driftmatrix run` runs as variant `fix`, through the tiers its
original was run with. It is *verified* when it runs (PASS or WARN) there, at least as deep as the
original got, on every build the original failed on and every build of the page's versions where
it ran; only verified fixes reach the docs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from driftmatrix.extractor.snippet_builder import Place, from_shell_text
from driftmatrix.extractor.snippet_record import Snippet
from driftmatrix.flaghistory.commands import refused_uses, rejected_options, rejected_tokens, shipped
from driftmatrix.flaghistory.history import FlagHistory
from driftmatrix.publisher import defects, fix_edits, nearest_fix, verdict_words
from driftmatrix.publisher.judgement import Judge, Judgement
from driftmatrix.publisher.results import Results
from driftmatrix.runner.argv.edit import FIX
from driftmatrix.runner.outcomes.vocabulary import GOOD, stage_rank

NO_EFFECT = re.compile(
    r"\bno (longer has any )?effect\b|\bis ignored\b|\bnow the default\b|\bno longer (needed|used)\b", re.IGNORECASE
)


def _option_edits(history: FlagHistory, j: Judgement, s: Snippet) -> tuple[list[list[str]], list[str]] | None:
    """Edits for the options the failing builds rejected; None when one of them has no fix."""
    edits, why = [], []
    for k in j.failing:
        message = k.outcome.evidence.exception and k.outcome.evidence.exception.message
        rejected = rejected_tokens(message)  # options and the values argparse left with them
        for option in rejected_options(message):
            if any(option == e[0].split()[0] for e in edits):
                continue
            record = history.record(option)
            release = history.release_for(k.version)
            if record is None and (near := nearest_fix.option_edit(history, option, _versions(j))):
                edits, why = (edits, why) if near[0] in edits else (edits + [near[0]], why + [near[1]])
                continue
            gone = history.removal(record, release) if release else None  # for good, or in a gap
            if record is None or gone is None:
                return None  # not a removal the history can vouch for on this build
            values = _values_after(option, rejected)
            if given := _already_given(option, record, values, s.argv):
                edits.append([" ".join([option, *values]), ""])
                why.append(
                    f"{option} was removed in vLLM {gone}; vLLM named {record['replacement']} "
                    f"instead, and the command already gives {given}; vLLM said: “{record['deprecation']}”"
                )
            elif replacement := _replacement(history, option, record, k.version, values):
                edits.append([option, replacement])
                why.append(
                    f"{option} was removed in vLLM {gone}; vLLM's deprecation names "
                    f"{record['replacement']} instead"
                    + (f" (so {replacement}, the same meaning)" if replacement != record["replacement"] else "")
                )
            elif NO_EFFECT.search(record.get("deprecation") or ""):
                edits.append([" ".join([option, *values]), ""])
                why.append(f"{option} was removed in vLLM {gone}; vLLM said: “{record['deprecation']}”")
            else:
                return None
    return edits, why


def _value_edits(history: FlagHistory, j: Judgement, s: Snippet) -> tuple[list[list[str]], list[str]] | None:
    """A value the failing builds refused (argparse's `invalid choice`, vLLM's unknown parser name) that
    vLLM renamed, with its text naming the new name: that name, where the build has it. None when a
    refused value has no such fix."""
    edits, why = [], []
    for k in j.failing:
        message = k.outcome.evidence.exception and k.outcome.evidence.exception.message
        for use in refused_uses(history, message) + nearest_fix.config_keys(history, message, s.argv or []):
            if near := nearest_fix.use_edit(history, use, s.argv or [], _versions(j)):
                edits, why = (edits, why) if near[0] in edits else (edits + [near[0]], why + [near[1]])
                continue
            if use.kind != "value":
                return None  # a config key vLLM moved: editing JSON is not a mechanical swap
            record, release = history.value_record(use), history.release_for(k.version)
            new = (record or {}).get("replacement")
            gone = history.removal(record, release) if release else None
            if not new or gone is None:
                return None
            if history.accepts_use(replace(use, value=new), k.version) is not True:
                return None
            glue = "=" if f"{use.written}={use.value}" in (s.argv or []) else " "
            edit = [f"{use.written}{glue}{use.value}", f"{use.written}{glue}{new}"]
            if edit not in edits:
                edits.append(edit)
                why.append(
                    f"{use.text()} was removed in vLLM {gone}; vLLM's text names {new} instead"
                    + (f": “{record['deprecation']}”" if record.get("deprecation") else "")
                )
    return edits, why


def _versions(j: Judgement) -> list[str]:
    """The versions of the builds the command failed on, oldest first: a nearest name must be theirs."""
    return list(dict.fromkeys(k.version for k in j.failing))


def _replacement(history: FlagHistory, option: str, record: dict, version: str, values: list[str]) -> str | None:
    """What replaces `option` with the same meaning, or None: vLLM's named replacement; its value
    when vLLM's text gives one (`` `--mm-processor-cache-gb 0` ``, `--x=ray`) for an option that had
    none; `--disable-x` → `--no-enable-x`. A `--no-x` twin, or a value on both sides: None."""
    new = record.get("replacement")
    if not new or option.startswith("--no-"):
        return None
    bare_old = option[2:]
    if bare_old.startswith("disable-") and new[2:] == "enable-" + bare_old[len("disable-") :]:
        new = "--no-" + new[2:]  # `--disable-x` → `--enable-x` would invert it: `--no-enable-x`
    elif bare_old.startswith("disable-") != new[2:].startswith("disable-") and "enable" in new:
        return None  # some other change of polarity: not a mechanical swap
    value = _named_value(new, record)
    if value and values:
        return None  # both take a value: which one the docs meant is not known
    full = f"{new} {value}" if value else new
    return full if history.accepts(new, version) else None


def _already_given(option: str, record: dict, values: list[str], argv: list[str]) -> str | None:
    """`--reasoning-parser deepseek_r1` when the command already gives what vLLM named instead of the
    removed `option` (`--enable-reasoning`: "When `--reasoning-parser` is specified, reasoning mode
    is automatically enabled"), with the same meaning: the value vLLM's text names, or the removed
    option's own values; then the option only repeats it and is dropped. None otherwise, and for a
    `--no-x`, or a `--disable-x` replaced by `--enable-x` (the other polarity)."""
    new = record.get("replacement")
    if not new or option.startswith("--no-") or option[2:].startswith("disable-") != new[2:].startswith("disable-"):
        return None
    given = _values_of(new, argv)
    if given is None:
        return None
    named = _named_value(new, record)
    named = [named] if named else None
    if (values and given != values) or (not values and named is not None and given != named):
        return None  # the command gives it another value: which one the docs meant is not known
    return " ".join([new, *given])


def _named_value(new: str, record: dict) -> str | None:
    """The value vLLM's deprecation text gives its replacement (`` `--mm-processor-cache-gb 0` ``,
    `--x=ray`), if any."""
    said = re.search(
        r"`" + re.escape(new) + r" ([^`\s]+)`|" + re.escape(new) + r"=([^\s`'\",;]+)", record.get("deprecation") or ""
    )
    return (said.group(1) or said.group(2)).rstrip(".") if said else None


def _values_of(option: str, argv: list[str]) -> list[str] | None:
    """The values the command gives `option` (`--x a`, `--x=a`); None when it does not give it."""
    for i, arg in enumerate(argv):
        if arg == option:
            return _values_after(option, argv[i:])
        if arg.startswith(option + "="):
            return [arg.split("=", 1)[1]]
    return None


def _values_after(option: str, rejected: list[str]) -> list[str]:
    i = rejected.index(option)
    values = []
    for token in rejected[i + 1 :]:
        if token.startswith("-"):
            break
        values.append(token)
    return values


def _json_edits(s: Snippet, j: Judgement) -> tuple[list[list[str]], list[str]]:
    if not j.failing:
        return [], []
    edits, why = [], []
    for lint in s.lints:
        if lint.code != "key-value-not-json":
            continue
        m = re.match(r"`(\S+) ([^`]+)`", lint.message)
        if not m:
            continue
        option, value = m.groups()
        as_json = json_form(value)
        if as_json is None:
            continue  # nested keys, lists, quotes, nan: no mechanical JSON form
        edits.append([value, f"'{as_json}'"])
        why.append(f"{option} takes JSON, not key=value")
    return edits, why


SPEC_METHOD = ("spec-method-unsupported", "spec-method-invalid")
"""Failure signatures (runner/data/signatures.yaml) of a speculative method this vLLM does not know."""


def _spec_method_edits(s: Snippet, j: Judgement) -> tuple[list[list[str]], list[str]]:
    """An unknown speculative `method` → no method: the release resolves one from the draft model
    (what it resolved is in the fix's engine config, shown with the verification)."""
    failing = [k for k in j.failing if k.outcome.evidence.signature and k.outcome.evidence.signature.id in SPEC_METHOD]
    spec = s.speculative_config or {}
    if not failing or "method" not in spec or "model" not in spec:
        return [], []
    raw = next((s.argv[i + 1] for i, a in enumerate(s.argv[:-1]) if a == "--speculative-config"), None)
    if raw is None or raw not in s.sources[0].text:
        return [], []
    without = {k: v for k, v in spec.items() if k != "method"}
    versions = " and ".join(dict.fromkeys(k.version for k in failing))
    return [[raw, json.dumps(without)]], [
        f"vLLM {versions} does not know the speculative method {spec['method']!r}; without `method` it "
        f"resolves one for the draft model {spec['model']} itself"
    ]


SIMPLE_KEY = re.compile(r"^[A-Za-z_]\w*$")
SIMPLE_VALUE = re.compile(r"^(-?\d+(\.\d+)?|[A-Za-z_][\w./-]*)$")
"""`key=value` parts that have one JSON reading: identifiers, plain numbers, words (no nan/inf)."""


def json_form(value: str) -> str | None:
    """`image=4,video=1` → `{"image": 4, "video": 1}`; None unless every part is `identifier=scalar`."""
    parts = [p.split("=", 1) for p in value.split(",")]
    if not all(
        len(p) == 2
        and SIMPLE_KEY.match(p[0])
        and SIMPLE_VALUE.match(p[1])
        and p[1].lower() not in ("nan", "inf", "infinity")
        for p in parts
    ):
        return None
    return json.dumps({k: _number(v) for k, v in parts})


def _number(text: str):
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d+", text):
        return float(text)
    return {"true": True, "false": False, "null": None, "none": None}.get(text.lower(), text)


@dataclass
class Candidates:
    fixes: list[Snippet]
    without: list[str]
    """`id: why no candidate` for each doc-drift command left with its warning."""


def candidates(results: Results, history: FlagHistory | None = None) -> Candidates:
    history = history or shipped()
    judge, out = Judge(results), Candidates([], [])
    for s in results.snippets:
        if s.fix or s.kind not in ("serve", "docker") or not s.sources:
            continue
        j = judge.of(s)
        fix = _candidate(s, j, history)
        if fix is not None:
            out.fixes.append(fix)
        elif j.kind == "doc-drift":
            out.without.append(f"{s.id}: no fix candidate (the cause is not one driftmatrix knows how to fix)")
    return out


def _candidate(s: Snippet, j: Judgement, history: FlagHistory | None) -> Snippet | None:
    # the place the shell reads otherwise, if any (a command shared by pages may be broken on one only)
    src = next(
        (x for x in s.sources if any(d.code == "backslash-not-continuation" for d in defects.of_source(s, x))),
        s.sources[0],
    )
    text = src.text
    lint_lines = {
        lint.line - src.line for lint in defects.of_source(s, src) if lint.code == "backslash-not-continuation"
    } or {
        lint.line - src.line
        for lint in s.lints
        if lint.code == "backslash-not-continuation" and lint.line is not None and lint.file is None
    }
    edits, why = fix_edits.backslash_edits(text, lint_lines)
    more = _json_edits(s, j)
    spec = _spec_method_edits(s, j)
    edits, why = edits + more[0] + spec[0], why + more[1] + spec[1]
    if j.kind == "doc-drift" and any(k.outcome.stage == "parse" for k in j.failing) and history and not more[0]:
        options = _option_edits(history, j, s)
        if options is None:
            return None
        edits, why = edits + options[0], why + options[1]
    if j.kind == "doc-drift" and history:
        values = _value_edits(history, j, s)
        if values is None:
            return None
        edits, why = edits + values[0], why + values[1]
    if not edits:
        return None
    fixed = fix_edits.apply(text.split("\n"), edits)
    again = from_shell_text("\n".join(fixed), Place(src.corpus, src.version, src.file, src.line)) if fixed else []
    if len(again) != 1:
        return None
    # run as deep as the original was asked to go (its tier), not only to where it stopped: a fix
    # that gets past the original's failure and then fails further on is not proposed
    tier = max((k.outcome.tier for k in must_run_on(j)), key=stage_rank, default=None) or "parse"
    # the command as extracted from the fixed text (argv, model, speculative config, lints), kept
    # under the documented command's id and places: its outcomes are that command's variant `fix`
    return replace(
        again[0],
        id=s.id,
        sources=s.sources,
        fix={"of": s.id, "edits": edits, "why": why, "tier": tier, "text": "\n".join(fixed)},
    )


@dataclass
class Verified:
    fix: Snippet
    checks: list[tuple[str, str, str]]
    """(build label, version, how deep the fix ran there, in words; a WARN says so) for every build
    it had to run on."""
    checked: str = ""
    """What was checked, in words true to the fix: against the original's failures, or (a `\\`
    repaired on a command that failed nowhere) that bash now runs the command that was checked."""


def verified(results: Results, judge: Judge, s: Snippet) -> Verified | None:
    """The command's fix, when the runner showed it running, at least as deep as the original got,
    wherever the original failed and on every build of the page's versions where it ran."""
    fix = results.fixes.get(s.id)
    if fix is None:
        return None
    dropped_method = "method" in (s.speculative_config or {}) and "method" not in (fix.speculative_config or {})
    checks = []
    for k in must_run_on(judge.of(s)):
        o = results.cell(s.id, k.column, FIX)
        if o is None or o.verdict not in GOOD or stage_rank(o.stage) < stage_rank(k.outcome.stage):
            return None
        resolved = (o.evidence.effective_config or {}).get("speculative_method") if dropped_method else None
        checks.append(
            (
                k.column.label,
                k.version,
                verdict_words.depth_text(o) + (f", speculative method resolved: {resolved}" if resolved else ""),
            )
        )
    return Verified(fix, checks, checked_text(s, judge.of(s), checks)) if checks else None


def checked_text(s: Snippet, j: Judgement, checks: list[tuple[str, str, str]]) -> str:
    """What the verification showed, in words true to the fix's kind: where the original failed
    (the fix was run through the same checks there, at least as deep); where bash ends the original
    (a `\\` that does not continue it: bash runs only the lines up to it, driftmatrix checked the
    command as meant, which the fix makes bash run whole); and the builds it ran on."""
    failed = [k for k in j.failing if k.outcome.verdict == "FAIL"]
    src = s.sources[0]  # the place the fix was made from: its lines, counted in the command
    ends = sorted(
        {
            lint.line - src.line + 1
            for lint in s.lints
            if lint.code == "backslash-not-continuation"
            and lint.line
            and lint.file in (None, src.file)
            and lint.version in (None, src.version)
        }
    )
    parts = []
    if failed:
        where = "; ".join(f"{k.column.label} at {k.outcome.stage}" for k in failed)
        parts.append(
            f"the original fails on {where}: the fix was run through the same checks there and gets at least as far"
        )
    if ends:
        total = src.text.count("\n") + 1
        parts.append(
            f"bash ends the original at its line {ends[0]} (of {total}: a `\\` that does not continue it), "
            "so whoever copies it runs only part of it"
            + (
                ""
                if failed
                else "; the original failed on no build because driftmatrix checks the "
                "command as its author meant it (the lines joined)"
            )
            + "; the fix makes bash run the whole command"
        )
    ran = "; ".join(f"{label}: {how}" for label, _version, how in checks)
    text = "; ".join(parts)
    return (text[:1].upper() + text[1:] + ". " if text else "") + f"The fixed command was checked on {ran}."


def must_run_on(j: Judgement) -> list:
    """Where a fix must run: the builds the original failed on, and every build of the page's
    versions where it ran (a fix must not break those)."""
    must = j.failing + [k for k in j.checks if k.scope == "in" and k.outcome.verdict in GOOD]
    if not must and j.defects:  # only the shell's reading is wrong, no build of the page's versions ran it:
        must = [k for k in j.checks if k.outcome.verdict in GOOD]  # the fix must run where the original did
    return must
