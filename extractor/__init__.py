"""Stage 1 (see ../shared/DESIGN.md): docs trees, recipes and saved pages -> `snippets.json`.

Entry point: `extractor.catalog.extract(paths) -> (Catalog, unusable)`; records in
`extractor.records`; one reader module per source kind.
"""
