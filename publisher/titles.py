"""Page titles: what a command's page and a doc page are called (in `<title>`, the header, the
search index and the h1).

A title is plain text, never HTML or Markdown: each place that shows it escapes it once (the
`title:` front matter through `pages._front_matter`, the h1 through the `md` filter, tables
through jinja2's autoescape). The extractor records each place's page title and nearest heading
as plain text (`Source.title`, `Source.heading`); a snippets.json written before those fields
has neither, and then a command's page is called by its model, as before.
"""

from __future__ import annotations

from driftmatrix.common.inert import one_line  # a title on one line: a newline would end the table row or heading
from driftmatrix.extractor.snippet_record import Snippet, Source

SEPARATOR = " › "
"""Between a page's title and the heading a command sits under."""


def place_title(source: Source) -> str:
    """`Page title › Heading` of one place (the heading left out where it is the page's title
    itself, e.g. a command right under the page's `# ` heading); empty where neither is recorded."""
    title, heading = one_line(source.title or ""), one_line(source.heading or "")
    if heading and heading != title:
        return f"{title}{SEPARATOR}{heading}" if title else heading
    return title


def snippet_title(s: Snippet) -> str:
    """A command page's title: where its first place is (`Speculative Decoding › EAGLE Draft
    Models`); by its model (else its id) when the places' titles are not recorded (an older
    snippets.json) — the model is on the page below the title in any case."""
    for source in s.sources[:1]:
        title = place_title(source)
        if title:
            return title
    return one_line(s.model or "") or s.id


def page_title(source: Source) -> str:
    """A doc page's title (the generated page listing that page's commands): the page's own title,
    else its file (an older snippets.json)."""
    return one_line(source.title or "") or source.file
