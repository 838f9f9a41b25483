"""Stage 2 (see ../shared/DESIGN.md): Snippet x Target -> Outcome. Not built yet (issue 3)."""
