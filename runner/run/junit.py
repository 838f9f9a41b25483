"""JUnit XML for CI dashboards: one testsuite per target, one testcase per job."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

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
                classname=o.target.name,
                name=f"{o.snippet_id}{'/' + o.variant if o.variant else ''}",
                time=str(o.duration_s),
            )
            detail = o.reason or ""
            loc = o.evidence.exception and o.evidence.exception.location
            if loc:
                detail += f"\n  at {loc.file}:{loc.line}"
            if o.verdict == "FAIL":
                ET.SubElement(case, "failure", message=(o.reason or "")[:500], type=o.stage).text = detail
            elif o.verdict == "ERROR":
                ET.SubElement(case, "error", message=(o.reason or "")[:500]).text = detail
            elif o.verdict == "SKIP":
                ET.SubElement(case, "skipped", message=(o.reason or "")[:500])
            elif o.verdict == "WARN":
                ET.SubElement(case, "system-out").text = f"WARN: {o.reason}"
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
