"""An MDX page (Docusaurus: a `.mdx` page, and any page of a Docusaurus site, which Docusaurus reads as
MDX) as the Markdown it renders: what is MDX and not Markdown is blanked before the page is parsed —
`import …` / `export …` blocks, lines that are only JSX tags (`<Tabs>`, `<TabItem value="pip">`,
`</TabItem>`, a self-closing `<Admonition type="tip" />`, a tag spread over several lines), `{/* … */}`
comments and the `:::note` / `:::tip Title` / `:::` admonition markers. Blanked, never deleted: every
line keeps its number, so a command's line is its real line in the file. Code blocks are never touched
(`import vllm` in a Python block is code); a fence inside `<TabItem>` is found as any other.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")
_ESM = re.compile(r"^(?:import|export)[ \t{*]")
_ADMONITION = re.compile(r"^[ \t]*:{3,}(?:[A-Za-z][\w-]*)?(?:[ \t\[{].*)?$")
_TAG = r"</?[A-Z][\w.]*(?:\s+[^<>]*?)?/?>"
_TAGS_ONLY = re.compile(rf"^[ \t]*(?:{_TAG}[ \t]*)+$")
_TAG_OPENS = re.compile(r"^[ \t]*<[A-Z][\w.]*(?:\s[^<>]*)?$")  # `<TabItem` whose `>` is on a later line
_COMMENT_OPENS = re.compile(r"^[ \t]*\{/\*")


def as_markdown(text: str) -> str:
    """The page with its MDX-only lines blank (same number of lines, the rest as written)."""
    lines = text.split("\n")
    fence: str | None = None
    until: str | None = None  # what ends the MDX construct being blanked: "blank", ">" or "*/}"
    for n, line in enumerate(lines):
        if fence is not None:  # inside a code block: code, never MDX
            m = _FENCE.match(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2).strip():
                fence = None
            continue
        if until is not None:
            if until == "blank" and not line.strip():
                until = None
                continue
            lines[n] = ""
            if until != "blank" and until in line:
                until = None
            continue
        m = _FENCE.match(line)
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = m.group(1)
        elif _ESM.match(line):  # an ESM block: to the next blank line, as MDX reads it
            lines[n] = ""
            until = "blank"
        elif _ADMONITION.match(line) or _TAGS_ONLY.match(line):
            lines[n] = ""
        elif _TAG_OPENS.match(line):
            lines[n] = ""
            until = ">"
        elif _COMMENT_OPENS.match(line):
            until = None if "*/}" in line else "*/}"
            lines[n] = ""
    return "\n".join(lines)


_DOCUSAURUS_PAGES = re.compile(
    r"(?:^|/)(?:docs|versioned_docs/version-[^/]+|i18n/[^/]+/docusaurus-plugin-content-docs)/"
)


def is_mdx(rel: str, docusaurus: bool) -> bool:
    """Whether a page is read as MDX: a `.mdx` page anywhere; in a Docusaurus site also the `.md` pages
    of its docs (`docs/`, `versioned_docs/version-X/`, `i18n/<lang>/docusaurus-plugin-content-docs/…`),
    which Docusaurus compiles as MDX."""
    lower = rel.lower()
    return lower.endswith(".mdx") or (
        docusaurus and lower.endswith(".md") and _DOCUSAURUS_PAGES.search(rel) is not None
    )
