"""Redaction: tokens never reach logs, outcomes, pages or PR bodies."""

from __future__ import annotations

import os
import re

SECRET_NAME = re.compile(
    r"(^|_)(TOKENS?|KEYS?|APIKEY|SECRETS?|PASSWORD|PASSWD|PWD|CREDENTIALS?|COOKIES?|AUTH|PAT|PRIVATE|DSN)(_|$)"
    r"|TOKEN$|SECRET|PASSW|APIKEY|CREDENTIAL|(^|_)DATABASE_URL$|^SSH_AUTH_SOCK$",
    re.I,
)
"""Names that say secret: a whole word (HF_TOKEN, MY_API_KEY, MYSQL_PWD, NGC_APIKEY, MY_SECRETS) or glued
into a word (HFTOKEN, PGPASSWORD), database URLs (DATABASE_URL: credentials inside); not
TOKENIZERS_PARALLELISM nor VLLM_USE_FASTOKENS (a tokenizer, not a token). Never passed from the docs; never passed from the runner either (that is
an allow-list anyway); redaction (below) masks their values; runner/isolation/env_policy.py keeps them from every child."""
SECRET_SHAPES = re.compile(
    r"\b(hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{20,})\b"
)
MASK = "***"


def secrets_from_env(env: dict[str, str] | None = None) -> list[str]:
    env = os.environ if env is None else env
    # the same names that never reach a child process (runner/isolation/env_policy.py): one rule for both
    return sorted({v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= 6}, key=len, reverse=True)


class Redactor:
    def __init__(self, extra: list[str] | None = None, env: dict[str, str] | None = None):
        self.values = sorted(
            set(secrets_from_env(env)) | set(v for v in (extra or []) if len(v) >= 6), key=len, reverse=True
        )

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
