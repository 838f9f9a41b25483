"""Whether the docs' code ran in a sandbox, as the site says it (runner/sandbox: `host.sandbox`,
`host.contained`): on each command page's run line, and counted per build on the overview."""

from __future__ import annotations

from driftmatrix.publisher.snippet_page import contained, ran
from driftmatrix.runner.outcomes.outcome_record import Outcome, TargetRef


def outcome(host: dict) -> Outcome:
    return Outcome(
        snippet_id="s-1",
        target=TargetRef("nightly", "0.32.0"),
        tier="start",
        stage="start",
        verdict="PASS",
        started="2026-12-04T10:00:00+00:00",
        host=host,
    )


def test_the_run_line_says_whether_it_was_contained():
    inside = outcome({"cpus": 2, "sandbox": "bubblewrap 0.8.0: …", "contained": True})
    plain = outcome(
        {"cpus": 2, "sandbox": "none: bubblewrap (bwrap) is not installed (plain processes)", "contained": False}
    )
    asked = outcome({"sandbox": "none: --unsandboxed (plain processes, by request)", "contained": False})
    assert contained(inside) == "in a sandbox" and ran(inside).endswith("· in a sandbox")
    assert contained(plain) == "NOT in a sandbox (plain processes)"
    assert contained(asked) == "NOT in a sandbox (plain processes, by request)"
    assert contained(outcome({})) == "" and not ran(outcome({})).endswith("· ")  # an outcome that does not say
    assert contained(outcome({"sandbox": "bubblewrap: no network but loopback"})) == "in a sandbox"  # older records
