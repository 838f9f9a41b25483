"""Stage 1 (docs/guide/extraction.md): docs trees, recipes and saved pages -> `snippets.json`.

Entry point: `driftmatrix.extractor.catalog.extract(paths) -> (Catalog, unusable)`; records in
`driftmatrix.extractor.snippet_record`; one reader module per source kind.
"""

from pathlib import Path

SAMPLE_DOCS = Path(__file__).resolve().parent / "data" / "sample-docs"
"""The embedded sample docs (`driftmatrix extract` with no SOURCE; the README's main job)."""
