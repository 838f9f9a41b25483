"""A target that cannot be checked at all is one record in the outcomes file, not one ERROR per job
(`"record": "target-diagnostic"`; runner/outcomes/store.py keeps it apart from outcomes; the site says
it). Which targets those are is decided by runner/jobs/target_check.py."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

RECORD = "target-diagnostic"


@dataclass
class TargetDiagnostic:
    target: str
    """The targets file's name for it."""
    build: str
    """What it installs: the pip spec, the Python, or the image."""
    stage: str
    """`install` (the environment could not be made or vLLM not imported) or `helper` (vLLM's
    parser could not be built in it)."""
    message: str
    jobs_not_run: int = 0
    when: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    host: dict = field(default_factory=dict)
    """The machine it ran on (runner/jobs/job.py host_facts)."""

    def to_dict(self) -> dict:
        return {"schema": 1, "record": RECORD, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict) -> TargetDiagnostic:
        return cls(
            str(data["target"]),
            str(data.get("build") or ""),
            str(data.get("stage") or "install"),
            str(data.get("message") or ""),
            int(data.get("jobs_not_run") or 0),
            str(data.get("when") or ""),
            dict(data.get("host") or {}),
        )

    def line(self) -> str:
        what = "could not be installed" if self.stage == "install" else "its parse/config helper could not start"
        return f"target {self.target} ({self.build}): {what}; its {self.jobs_not_run} job(s) not run: {self.message}"
