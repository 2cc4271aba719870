"""One helper per medium that makes outside strings (ncu's and the application's output, names from files) inert
where shown: `printable` (terminal), `console_text` (rich markup), `markdown_inline`, `html_text` (HTML, SVG),
`xml_text` and `xml_attribute` (JUnit), `csv_text`. YAML is written only through PyYAML's safe_dump."""

from __future__ import annotations

import csv
import html
import io
import re
from collections.abc import Iterable, Sequence

from rich.markup import escape as escape_markup

from ncucampaign.errors import printable

# Text Markdown shows as it is: no emphasis, link, image, HTML, table cell or autolink can start in it.
_PLAIN_MARKDOWN = re.compile(r"[\w .,:;%+=/'\"()?-]*")
_AUTOLINK = re.compile(r"(?i)(?:www\.|[a-z]+://|mailto:|xmpp:)")  # what GitHub links without brackets


def console_text(text: str) -> str:
    """For rich's print and table cells: printable, with what rich would read as markup escaped."""
    return escape_markup(printable(text))


def markdown_inline(text: str, cell: bool = True) -> str:
    """One line of GitHub Markdown showing `text` literally: plain words as they are, anything else (bracket,
    angle, backslash, URL scheme) in a code span fenced with more backticks than the text holds, where Markdown
    renders no HTML, link or image. In a table `cell` a `|` is escaped, also inside a code span (GitHub's tables)."""
    line = printable(text).replace("\n", " ")
    if _PLAIN_MARKDOWN.fullmatch(line) and not _AUTOLINK.search(line):
        return line
    longest = max((len(run) for run in re.findall(r"`+", line)), default=0)
    fence = "`" * (longest + 1)
    spanned = f"{fence} {line} {fence}"
    return spanned.replace("|", "\\|") if cell else spanned


def csv_text(rows: Iterable[Sequence[object]]) -> str:
    """CSV whose text cells are printable: a name's control characters are written as escapes, never
    sent to the terminal that shows the file."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerows([printable(cell) if isinstance(cell, str) else cell for cell in row] for row in rows)
    return out.getvalue()


def html_text(text: str) -> str:
    """For HTML and SVG text and attribute values: printable, with &, <, >, quotes as entities."""
    return html.escape(printable(text), quote=True)


def xml_text(text: str) -> str:
    """For XML character data: printable (XML 1.0 allows no control characters), &, <, > escaped."""
    from xml.sax.saxutils import escape  # here: it imports urllib.request, which start-up need not pay for

    return escape(printable(text))


def xml_attribute(text: str) -> str:
    """An XML attribute value with its quotes: printable, escaped."""
    from xml.sax.saxutils import quoteattr

    return quoteattr(printable(text))
