"""Stage 3 (docs/guide/reading-the-matrix.md): Outcomes -> site, matrix.json, doc warnings, PRs.

`publisher.results` merges outcomes, `publisher.site` writes and builds the mkdocs site,
`publisher.matrix_json` the compat data, `publisher.annotate` the doc warnings and
`publisher.pull_request` the doc-fix PRs.
"""
