"""How a placeholder is written, in any script: the one spelling the shell lexer (extractor/shell_lexer.py:
`<…>` is one word, never a redirection) and the argument reader (extractor/serve_args.py: the word is the
reader's to fill in) share.

`<MODEL>` and `<你的模型路径>` alike open with a letter of any script; CJK texts also bracket a placeholder
with `〈…〉`, `「…」` or the full-width `＜…＞` (none of them a shell operator: the lexer keeps them in a word).
"""

from __future__ import annotations

LETTER = r"[^\W\d_]"
"""A letter of any script (`re`'s `\\w` is Unicode): what follows `<` in `<MODEL>`, `<你的模型路径>`."""
CJK_BRACKETED = r"〈[^〈〉\n]{1,80}〉|「[^「」\n]{1,80}」|＜[^＜＞\n]{1,80}＞"
"""`〈模型〉`, `「モデル」`, `＜模型路径＞`: placeholders in CJK brackets."""
