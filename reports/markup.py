"""HTML and Markdown primitives the report, the sweep page and the validation document are written
with: escaping, a :class:`reports.tables.Table` as HTML or Markdown, the one stylesheet and page shell
of every HTML page, the "how to read this" notes, and PNGs embedded as data URIs (an HTML page is
self-contained: nothing is fetched from the network).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path

from reports.tables import Cell, Table

__all__ = [
    "CSS",
    "PAGE_END",
    "data_uri",
    "escape",
    "how_box",
    "how_box_html",
    "html_table",
    "md_escape",
    "md_how",
    "md_lines",
    "md_table",
    "page_start",
]

CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px; background: #ffffff; color: #1a1a1a;
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 32px 0 8px; padding-bottom: 4px; border-bottom: 2px solid #d0d7de; }
h3 { font-size: 15px; margin: 20px 0 6px; }
.subtitle { color: #57606a; margin: 0 0 16px; }
.how { background: #f6f8fa; border-left: 4px solid #8c959f; padding: 8px 12px; margin: 8px 0 12px;
       color: #24292f; max-width: 1100px; }
.how strong { display: block; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: #57606a; }
.note { background: #fff8c5; border-left: 4px solid #d4a72c; padding: 8px 12px; margin: 8px 0; }
.footnote { font-size: 12px; color: #57606a; max-width: 1100px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 5px 8px; text-align: right; vertical-align: top; }
th { background: #eaeef2; color: #1a1a1a; font-weight: 600; }
td.name, th:first-child { text-align: left; font-weight: 600; }
td .sub { display: block; font-size: 11px; color: #57606a; font-weight: 400; white-space: nowrap; }
td.better { background: #dafbe1; }
td.worse { background: #ffebe9; }
table.text td, table.text th { text-align: left; }
table.kv td:first-child { color: #57606a; white-space: nowrap; }
figure { margin: 12px 0 24px; }
figure img { max-width: 100%; height: auto; border: 1px solid #d0d7de; }
figcaption { font-weight: 600; margin-bottom: 4px; }
pre { background: #f6f8fa; padding: 10px; overflow-x: auto; font-size: 12px; }
details summary { cursor: pointer; color: #0550ae; }
"""

#: The lines that close every HTML page (the last one makes the file end with a newline).
PAGE_END = ("</body></html>", "")


# HTML ---------------------------------------------------------------------------------------------------------


def escape(text: object) -> str:
    """``text`` (any object, as ``str``) safe inside HTML text and attribute values."""
    return html.escape(str(text), quote=True)


def page_start(title: str) -> list[str]:
    """The first lines of an HTML page: doctype, head with the stylesheet, and ``title`` as its heading."""
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
    ]


def html_table(table: Table, *, css: str = "") -> str:
    """``table`` as a horizontally scrolling HTML table; ``css`` adds classes to the ``<table>``."""
    head = "".join(f"<th>{escape(h)}</th>" for h in table.header)
    body = []
    for row in table.rows:
        cells = []
        for cell in row:
            cls = f' class="{escape(cell.css)}"' if cell.css else ""
            sub = "".join(f'<span class="sub">{escape(x)}</span>' for x in (cell.note, cell.sub) if x)
            cells.append(f"<td{cls}>{escape(cell.text)}{sub}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    classes = " ".join(c for c in (css, "" if table.numeric else "text") if c)
    cls = f' class="{classes}"' if classes else ""
    return (f'<div class="scroll"><table id="{escape(table.id)}"{cls}><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def how_box(text: str) -> str:
    """A "How to read this" box holding ``text``."""
    return how_box_html(escape(text))


def how_box_html(body: str) -> str:
    """A "How to read this" box holding ``body``, HTML already (escaped text, spans)."""
    return f'<div class="how"><strong>How to read this</strong>{body}</div>'


def data_uri(png: Path | bytes) -> str:
    """A PNG (its bytes, or the file at a path) as a ``data:`` URI, to embed in an ``<img>``."""
    data = png if isinstance(png, bytes) else png.read_bytes()
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


# Markdown -----------------------------------------------------------------------------------------------------


def md_escape(text: str) -> str:
    """``text`` safe inside a Markdown table cell: pipes escaped, newlines made spaces."""
    return text.replace("|", "\\|").replace("\n", " ")


def md_lines(header: Sequence[str], rows: Sequence[Sequence[str]], *, numeric: bool = False) -> list[str]:
    """A Markdown table of plain texts, one line per row (header and rule included); ``numeric``
    right-aligns every column but the first."""
    align = "---:" if numeric else "---"
    lines = ["| " + " | ".join(md_escape(h) for h in header) + " |",
             "|" + "|".join(["---"] + [align] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return lines


def _md_cell(cell: Cell) -> str:
    # No colours in Markdown: bold marks a coloured (better / worse) cell.
    text = f"**{cell.text}**" if cell.css in ("better", "worse") else cell.text
    if cell.note:
        text = f"{text} ({cell.note})"
    if cell.sub:
        text = f"{text} ({cell.sub})" if cell.css == "name" else f"{text} {cell.sub}"
    return text


def md_table(table: Table) -> str:
    """``table`` as a Markdown table: a cell's small lines follow its text on the same line."""
    return "\n".join(md_lines(table.header, [[_md_cell(c) for c in row] for row in table.rows],
                              numeric=table.numeric))


def md_how(text: str) -> str:
    """The Markdown form of a "How to read this" note."""
    return f"*How to read this:* {text}"
