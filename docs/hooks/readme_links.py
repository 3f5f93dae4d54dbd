"""MkDocs hook: a README's links into docs/ resolve on the site as they do on GitHub.

A package README links a design-notes page as `../../docs/notes/x.md` (right on GitHub, from
packages/<name>/); on the site the README is included at docs/packages/<name>/, where the same
page is `../../notes/x.md`.
"""

from __future__ import annotations

from typing import Any

PREFIX = "](../../docs/"


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Rewrite `../../docs/` links of the included package READMEs."""
    if page.file.src_uri.startswith("packages/"):
        return markdown.replace(PREFIX, "](../../")
    return markdown
