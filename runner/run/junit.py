"""JUnit XML for CI dashboards: one testsuite per target, one testcase per job.

A dashboard or a test reporter may print these names and messages into a CI log, and XML 1.0 has no
place for most control characters: every text from the docs or from vLLM (the command's id and
variant, the reason, a traceback's file) is `inert.terminal`'s, as on stdout — no control character,
a format character (bidi, zero-width) shown escaped, no line that starts with `::` or holds `##[`."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from driftmatrix.common.inert import terminal
from driftmatrix.runner.outcomes.outcome_record import Outcome


def write(outcomes: list[Outcome], path: Path) -> None:
    suites = defaultdict(list)
    for o in outcomes:
        suites[f"{o.target.name} (vLLM {o.target.version})"].append(o)
    root = ET.Element("testsuites", name="driftmatrix")
    for name, items in suites.items():
        suite = ET.SubElement(
            root,
            "testsuite",
            name=name,
            tests=str(len(items)),
            failures=str(sum(o.verdict == "FAIL" for o in items)),
            errors=str(sum(o.verdict == "ERROR" for o in items)),
            skipped=str(sum(o.verdict == "SKIP" for o in items)),
        )
        for o in items:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=terminal(o.target.name),
                name=terminal(f"{o.snippet_id}{'/' + o.variant if o.variant else ''}"),
                time=str(o.duration_s),
            )
            reason = terminal(o.reason or "")
            detail = reason
            loc = o.evidence.exception and o.evidence.exception.location
            if loc:
                detail += terminal(f"\n  at {loc.file}:{loc.line}")
            message = reason[:500]  # a joiner goes before the `[` or `:` it defuses: any cut stays defused
            if o.verdict == "FAIL":
                ET.SubElement(case, "failure", message=message, type=o.stage).text = detail
            elif o.verdict == "ERROR":
                ET.SubElement(case, "error", message=message).text = detail
            elif o.verdict == "SKIP":
                ET.SubElement(case, "skipped", message=message)
            elif o.verdict == "WARN":
                ET.SubElement(case, "system-out").text = f"WARN: {reason}"
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
