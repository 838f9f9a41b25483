"""Who the tests' throwaway git repositories commit as (no global git config is assumed)."""

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}
GIT_ENV = {**GIT_IDENTITY, "PATH": "/usr/bin:/bin"}
"""The whole environment of a git command run for a test: the identity and the system's programs."""
