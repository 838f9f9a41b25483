"""Stage 3 (see ../shared/DESIGN.md): Outcomes -> site, matrix.json, doc warnings, PRs. Not built yet (issue 6)."""
