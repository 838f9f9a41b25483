"""Stage 3 (docs/guide/reading-the-matrix.md): Outcomes -> site, matrix.json, doc warnings, PRs.

`driftmatrix.publisher.results` merges outcomes, `driftmatrix.publisher.site` writes and builds the mkdocs site,
`driftmatrix.publisher.matrix_json` the compat data, `driftmatrix.publisher.annotate` the doc warnings and
`driftmatrix.publisher.pull_request` the doc-fix PRs.
"""
