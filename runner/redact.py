"""Redaction: tokens never reach logs, outcomes, pages or PR bodies."""

from __future__ import annotations

import os
import re

from runner.env_policy import SECRET_NAME

SECRET_SHAPES = re.compile(
    r"\b(hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{20,})\b")
MASK = "***"


def secrets_from_env(env: dict[str, str] | None = None) -> list[str]:
    env = os.environ if env is None else env
    # the same names that never reach a child process (runner/env_policy.py): one rule for both
    return sorted({v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= 6},
                  key=len, reverse=True)


class Redactor:
    def __init__(self, extra: list[str] | None = None, env: dict[str, str] | None = None):
        self.values = sorted(set(secrets_from_env(env)) | set(v for v in (extra or []) if len(v) >= 6),
                             key=len, reverse=True)

    def add(self, value: str | None) -> None:
        if value and len(value) >= 6 and value not in self.values:
            self.values.append(value)
            self.values.sort(key=len, reverse=True)

    def __call__(self, text):
        if isinstance(text, str):
            for value in self.values:
                text = text.replace(value, MASK)
            return SECRET_SHAPES.sub(MASK, text)
        if isinstance(text, list):
            return [self(t) for t in text]
        if isinstance(text, dict):
            return {k: self(v) for k, v in text.items()}
        return text
