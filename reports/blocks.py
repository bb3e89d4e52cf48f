"""The block model every report page is built from, and its two renderers.

A page (the run report, the accounting report, the sweep page, the workload-fit report) is a
:class:`Page` of blocks, built once from the data: :class:`Section` (a heading over blocks, nested for
subsections), :class:`Paragraph` (plain, or one of the boxes the pages use: a subtitle, a note, a
footnote, a "How to read this" note), :class:`TableBlock` (a :class:`reports.tables.Table`),
:class:`Figure` (a PNG, embedded in HTML and linked from Markdown), :class:`Bullets` and
:class:`Details`. :func:`render_html` and :func:`render_markdown` turn it into ``.html`` and ``.md``, with
the primitives of :mod:`reports.markup`, so both formats always show the same content in the same order.

A paragraph's text is :data:`Inline`: plain strings, :class:`Strong`, :class:`Code` and :class:`Link`
spans, or tuples of them. Where the two formats really differ (each links its own sibling page, the
Markdown version says it has no colours, HTML alone folds the resolved config away), :class:`PerFormat`
(within a text) and :class:`Only` (a whole block) say so in the page's one description instead of in
two renderings of it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

from harness.core.files import write_atomically
from reports.markup import (
    PAGE_END,
    data_uri,
    escape,
    how_box_html,
    html_table,
    md_how,
    md_table,
    page_start,
)
from reports.tables import Table

__all__ = [
    "HTML",
    "MARKDOWN",
    "Block",
    "Bullets",
    "Code",
    "Details",
    "Figure",
    "Format",
    "Inline",
    "Link",
    "Only",
    "Page",
    "Paragraph",
    "ParagraphKind",
    "PerFormat",
    "Section",
    "Strong",
    "TableBlock",
    "blocks_html",
    "blocks_markdown",
    "inline_text",
    "page_files",
    "render_html",
    "render_markdown",
    "sibling_page",
]

#: The two formats, named as :data:`reports.inputs.FORMATS` names them.
Format: TypeAlias = Literal["html", "md"]
HTML: Format = "html"
MARKDOWN: Format = "md"


# Texts ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Strong:
    """Text in bold: ``<strong>`` in HTML, ``**...**`` in Markdown."""

    text: Inline


@dataclass(frozen=True)
class Code:
    """A command or a name as code: ``<code>`` in HTML, backticks in Markdown."""

    text: str


@dataclass(frozen=True)
class Link:
    """A link: ``text`` pointing at ``href`` (a relative path, or an anchor)."""

    text: str
    href: str


@dataclass(frozen=True)
class PerFormat:
    """A span that reads differently in each format: ``html`` on the HTML page, ``markdown`` in the
    Markdown one (either may be "", the span then being absent from that format)."""

    html: Inline
    markdown: Inline

    def of(self, form: Format) -> Inline:
        """The span of ``form``."""
        return self.html if form == HTML else self.markdown


#: A paragraph's text: plain text, a span, or a sequence of them read one after another.
Inline: TypeAlias = str | Strong | Code | Link | PerFormat | tuple["Inline", ...]


def sibling_page(stem: str) -> PerFormat:
    """A link to the page ``stem`` of the same run directory in the format being read: ``sweep.html``
    from the HTML page, ``sweep.md`` from the Markdown one."""
    return PerFormat(Link(f"{stem}.html", f"{stem}.html"), Link(f"{stem}.md", f"{stem}.md"))


def _same(text: str) -> str:
    """``text`` unchanged: a span a format writes as its bare words."""
    return text


@dataclass(frozen=True)
class _Spans:
    """How one format writes the spans of an :data:`Inline`: plain words, a bold text (already written),
    code and a link; :meth:`write` walks the spans."""

    form: Format
    words: Callable[[str], str]
    strong: Callable[[str], str]
    code: Callable[[str], str]
    link: Callable[[Link], str]

    def write(self, text: Inline) -> str:
        """``text`` in this format."""
        if isinstance(text, str):
            return self.words(text)
        if isinstance(text, tuple):
            return "".join(self.write(part) for part in text)
        if isinstance(text, Strong):
            return self.strong(self.write(text.text))
        if isinstance(text, Code):
            return self.code(text.text)
        if isinstance(text, Link):
            return self.link(text)
        return self.write(text.of(self.form))


_HTML_SPANS = _Spans(HTML, words=escape, strong=lambda bold: f"<strong>{bold}</strong>",
                     code=lambda code: f"<code>{escape(code)}</code>",
                     link=lambda link: f'<a href="{escape(link.href)}">{escape(link.text)}</a>')
_MARKDOWN_SPANS = _Spans(MARKDOWN, words=_same, strong=lambda bold: f"**{bold}**", code=lambda code: f"`{code}`",
                         link=lambda link: f"[{link.text}]({link.href})")


def inline_text(text: Inline, form: Format = HTML) -> str:
    """The words of ``text`` as ``form`` shows them, without markup: for tests and plain-text uses."""
    return _Spans(form, words=_same, strong=_same, code=_same, link=lambda link: link.text).write(text)


def _one_line(text: str) -> str:
    """``text`` as one Markdown line: a line break (a strategy label may hold one) would end a list item
    or a quote early, or start a new block."""
    return " ".join(text.splitlines())


# Blocks -----------------------------------------------------------------------------------------------------

#: What a paragraph is, and so how it looks: ``plain``; ``subtitle`` (the line under a page's title);
#: ``note`` (a yellow box: something the reader must know before reading on); ``note-box`` (a note that
#: is a whole section's body, a ``<div>``); ``footnote`` (small print under a table); ``how`` (a "How to
#: read this" box); ``recommendation`` (the report's one deciding sentence). In Markdown, which has no
#: boxes, a ``how`` paragraph starts "*How to read this:*" and every other one is plain text (or a quote:
#: :attr:`Paragraph.quote`).
ParagraphKind: TypeAlias = Literal["plain", "subtitle", "note", "note-box", "footnote", "how", "recommendation"]


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of text, of one :data:`ParagraphKind`, with an optional HTML anchor."""

    text: Inline
    kind: ParagraphKind = "plain"
    id: str = ""
    #: In Markdown, a quote (``> ...``): how the report sets its notes apart there.
    quote: bool = False


@dataclass(frozen=True)
class TableBlock:
    """A table; ``css`` adds classes to the HTML ``<table>`` (``kv`` for a field/value table)."""

    table: Table
    css: str = ""


@dataclass(frozen=True)
class Figure:
    """A PNG: embedded in the HTML page as a data URI, linked from the Markdown one at ``path`` (relative
    to the page)."""

    png: bytes
    path: str
    #: The image's alternative text.
    alt: str
    #: The figure's caption (HTML ``<figcaption>``); "" for none.
    caption: str = ""
    #: How to read the figure: a "How to read this" box inside the HTML figure, a paragraph after the
    #: Markdown image.
    how: str = ""
    id: str = ""
    #: Markdown has no captions: True writes the caption as a ``###`` heading over the image (the report's
    #: plots, found by their titles), False leaves it to the alt text.
    markdown_heading: bool = False
    #: The alt text of the Markdown image when it is shorter than :attr:`alt` ("" for the same).
    markdown_alt: str = ""


@dataclass(frozen=True)
class Bullets:
    """A bulleted list, one item per text, with an optional HTML anchor."""

    items: Sequence[Inline]
    id: str = ""


@dataclass(frozen=True)
class Details:
    """Preformatted text folded under a summary line (HTML ``<details>``), such as a resolved config. HTML
    only: Markdown cannot fold text away, and a page that long would bury its tables."""

    summary: str
    text: str


@dataclass(frozen=True)
class Only:
    """Blocks that only one format shows (``form``): what the other format has no room or no use for."""

    form: Format
    blocks: Sequence[Block]


@dataclass(frozen=True)
class Section:
    """A heading over blocks (which may hold subsections: a level below).

    ``level`` 2 is a section of the page, 3 a subsection. ``id`` anchors it: a level-2 section becomes an
    HTML ``<section>`` with that id (without an id, just a heading and what follows), a subsection's
    heading carries it. ``how`` is the section's "How to read this" note, right under the heading."""

    heading: str
    blocks: Sequence[Block] = ()
    level: int = 2
    id: str = ""
    how: Inline = ""


#: Anything a page or a section holds.
Block: TypeAlias = Paragraph | TableBlock | Figure | Bullets | Details | Only | Section


@dataclass(frozen=True)
class Page:
    """A whole page: its title (the HTML ``<title>`` and the top heading), a subtitle (in Markdown a
    plain paragraph; "" for none) and its blocks, sections at the top level among them."""

    title: str
    subtitle: Inline = ""
    blocks: Sequence[Block] = field(default_factory=tuple)


# The walk --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Blocks:
    """How one format writes each kind of block, as lines; :meth:`lines` walks the blocks, the
    :class:`Only` blocks of the other format giving none."""

    form: Format
    section: Callable[[Section], list[str]]
    paragraph: Callable[[Paragraph], list[str]]
    table: Callable[[TableBlock], list[str]]
    figure: Callable[[Figure], list[str]]
    bullets: Callable[[Bullets], list[str]]
    details: Callable[[Details], list[str]]

    def block_lines(self, block: Block) -> list[str]:
        """``block`` in this format."""
        if isinstance(block, Section):
            return self.section(block)
        if isinstance(block, Paragraph):
            return self.paragraph(block)
        if isinstance(block, TableBlock):
            return self.table(block)
        if isinstance(block, Figure):
            return self.figure(block)
        if isinstance(block, Bullets):
            return self.bullets(block)
        if isinstance(block, Details):
            return self.details(block)
        return self.lines(block.blocks) if block.form == self.form else []

    def lines(self, blocks: Sequence[Block]) -> list[str]:
        """``blocks`` in this format, one after another."""
        return [line for block in blocks for line in self.block_lines(block)]


# HTML -------------------------------------------------------------------------------------------------------


def _attributes(css: str, anchor: str) -> str:
    classes = f' class="{escape(css)}"' if css else ""
    return classes + (f' id="{escape(anchor)}"' if anchor else "")


def _paragraph_html(p: Paragraph) -> list[str]:
    body = _HTML_SPANS.write(p.text)
    if not body:
        return []
    if p.kind == "how":
        return [how_box_html(body)]
    if p.kind == "note-box":
        return [f"<div{_attributes('note', p.id)}>{body}</div>"]
    return [f"<p{_attributes('' if p.kind == 'plain' else p.kind, p.id)}>{body}</p>"]


def _figure_html(f: Figure) -> list[str]:
    caption = f"<figcaption>{escape(f.caption)}</figcaption>" if f.caption else ""
    how = how_box_html(escape(f.how)) if f.how else ""
    return [f"<figure{_attributes('', f.id)}>{caption}<img alt=\"{escape(f.alt)}\" src=\"{data_uri(f.png)}\">"
            f"{how}</figure>"]


def _section_html(s: Section) -> list[str]:
    wrapped = s.level == 2 and bool(s.id)
    heading_id = "" if wrapped else s.id
    lines = [f'<section id="{escape(s.id)}">'] if wrapped else []
    lines.append(f"<h{s.level}{_attributes('', heading_id)}>{escape(s.heading)}</h{s.level}>")
    lines += _paragraph_html(Paragraph(s.how, kind="how"))
    lines += _HTML_BLOCKS.lines(s.blocks)
    if wrapped:
        lines.append("</section>")
    return lines


def _bullets_html(b: Bullets) -> list[str]:
    items = "".join(f"<li>{_HTML_SPANS.write(item)}</li>" for item in b.items)
    return [f"<ul{_attributes('', b.id)}>{items}</ul>"]


def _details_html(d: Details) -> list[str]:
    return [f"<details><summary>{escape(d.summary)}</summary><pre>{escape(d.text)}</pre></details>"]


_HTML_BLOCKS = _Blocks(HTML, section=_section_html, paragraph=_paragraph_html,
                       table=lambda t: [html_table(t.table, css=t.css)], figure=_figure_html, bullets=_bullets_html,
                       details=_details_html)


def blocks_html(blocks: Sequence[Block]) -> str:
    """``blocks`` as HTML, one element a line, outside any page."""
    return "\n".join(_HTML_BLOCKS.lines(blocks))


def render_html(page: Page) -> str:
    """``page`` as a self-contained HTML page: the stylesheet inline, every figure a data URI."""
    lines = [*page_start(page.title), *_paragraph_html(Paragraph(page.subtitle, kind="subtitle")),
             *_HTML_BLOCKS.lines(page.blocks), *PAGE_END]
    return "\n".join(lines)


# Markdown ---------------------------------------------------------------------------------------------------
# Every block is its lines and a blank line: the blank line is what separates Markdown blocks.


def _paragraph_markdown(p: Paragraph) -> list[str]:
    body = _one_line(_MARKDOWN_SPANS.write(p.text))
    if not body:
        return []
    if p.kind == "how":
        body = md_how(body)
    return [f"> {body}" if p.quote else body, ""]


def _figure_markdown(f: Figure) -> list[str]:
    heading = [f"### {f.caption}", ""] if f.markdown_heading and f.caption else []
    how = [f.how, ""] if f.how else []
    return [*heading, f"![{f.markdown_alt or f.alt}]({f.path})", "", *how]


def _section_markdown(s: Section) -> list[str]:
    return [f"{'#' * s.level} {s.heading}", "", *_paragraph_markdown(Paragraph(s.how, kind="how")),
            *_MARKDOWN_BLOCKS.lines(s.blocks)]


def _bullets_markdown(b: Bullets) -> list[str]:
    return [*(f"- {_one_line(_MARKDOWN_SPANS.write(item))}" for item in b.items), ""]


def _details_markdown(_: Details) -> list[str]:
    """Nothing: Markdown cannot fold text away (:class:`Details`)."""
    return []


_MARKDOWN_BLOCKS = _Blocks(MARKDOWN, section=_section_markdown, paragraph=_paragraph_markdown,
                           table=lambda t: [md_table(t.table), ""], figure=_figure_markdown,
                           bullets=_bullets_markdown, details=_details_markdown)


def blocks_markdown(blocks: Sequence[Block]) -> str:
    """``blocks`` as Markdown, outside any page (each block followed by a blank line)."""
    return "\n".join(_MARKDOWN_BLOCKS.lines(blocks))


def render_markdown(page: Page) -> str:
    """``page`` as Markdown: the title a ``#`` heading, sections ``##``, figures linked by path."""
    lines = [f"# {page.title}", "", *_paragraph_markdown(Paragraph(page.subtitle)),
             *_MARKDOWN_BLOCKS.lines(page.blocks)]
    return "\n".join(lines)


def page_files(page: Page, formats: Collection[str], html: Path, markdown: Path) -> dict[Path, bytes]:
    """``page`` rendered in the chosen ``formats``, not written: at ``html`` if they hold :data:`HTML`, then at
    ``markdown`` if they hold :data:`MARKDOWN`; each path -> its bytes."""
    files: dict[Path, bytes] = {}
    if HTML in formats:
        files[html] = render_html(page).encode()
    if MARKDOWN in formats:
        files[markdown] = render_markdown(page).encode()
    return files


def write_report_folder(out_dir: Path, page: Page, plots: Mapping[str, bytes]) -> list[Path]:
    """A report folder: ``report.html`` (self-contained, plots embedded), ``report.md`` (linking
    ``plots/*.png``) and the plots, into ``out_dir`` (created if missing), each file atomically; the paths
    written, the two pages first."""
    out_dir = Path(out_dir)
    (out_dir / "plots").mkdir(parents=True, exist_ok=True)
    written = [out_dir / "report.html", out_dir / "report.md"]
    write_atomically(written[0], render_html(page).encode("utf-8"))
    write_atomically(written[1], render_markdown(page).encode("utf-8"))
    for name, png in plots.items():
        path = out_dir / "plots" / f"{name}.png"
        write_atomically(path, png)
        written.append(path)
    return written
