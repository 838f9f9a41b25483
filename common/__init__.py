"""What several packages share and none owns: inert.py, the rules that make docs and vLLM text
inert in the Markdown that people read (PR bodies, step summaries, the docs gate's summary)."""
