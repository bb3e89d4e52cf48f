"""reports.blocks: one page of blocks, rendered to HTML and to Markdown with the same content in the same
order; what differs between the formats is said in the page (PerFormat, Only), not in two renderings."""

from __future__ import annotations

from reports.blocks import (
    HTML,
    MARKDOWN,
    Bullets,
    Code,
    Details,
    Figure,
    Link,
    Only,
    Page,
    Paragraph,
    PerFormat,
    Section,
    Strong,
    TableBlock,
    blocks_html,
    blocks_markdown,
    inline_text,
    render_html,
    render_markdown,
    sibling_page,
)
from reports.markup import PAGE_END, html_table, md_table
from reports.tables import Cell, Table

TABLE = Table("t", ["name", "value"], [[Cell("a", css="name"), Cell("1")]])


def test_a_page_has_its_title_subtitle_and_sections_in_both_formats() -> None:
    page = Page("T & co", "sub", [Section("One", [TableBlock(TABLE)], id="one", how="read it")])
    html = render_html(page)
    assert "<title>T &amp; co</title>" in html and "<h1>T &amp; co</h1>" in html
    assert '<p class="subtitle">sub</p>\n<section id="one">\n<h2>One</h2>\n<div class="how">' in html
    assert html.endswith(f"{html_table(TABLE)}\n</section>\n" + "\n".join(PAGE_END))
    assert render_markdown(page) == (f"# T & co\n\nsub\n\n## One\n\n*How to read this:* read it\n\n"
                                     f"{md_table(TABLE)}\n")


def test_a_section_without_an_id_is_a_heading_and_a_subsection_carries_its_id() -> None:
    html = blocks_html([Section("Plain", [Paragraph("x")]), Section("Sub", level=3, id="s-1")])
    assert html == '<h2>Plain</h2>\n<p>x</p>\n<h3 id="s-1">Sub</h3>'
    assert blocks_markdown([Section("Sub", level=3, id="s-1")]) == "### Sub\n"


def test_paragraph_kinds_and_quotes() -> None:
    note = Paragraph("careful", kind="note", id="n", quote=True)
    assert blocks_html([note]) == '<p class="note" id="n">careful</p>'
    assert blocks_markdown([note]) == "> careful\n"
    assert blocks_html([Paragraph("whole", kind="note-box")]) == '<div class="note">whole</div>'
    assert blocks_markdown([Paragraph("small", kind="footnote")]) == "small\n"


def test_spans_render_in_each_format() -> None:
    text = ("run ", Code("ctxbench x"), " then ", Strong("<b>"), " see ", Link("doc", "d.md#a"))
    assert blocks_html([Paragraph(text)]) == (
        '<p>run <code>ctxbench x</code> then <strong>&lt;b&gt;</strong> see <a href="d.md#a">doc</a></p>')
    assert blocks_markdown([Paragraph(text)]) == "run `ctxbench x` then **<b>** see [doc](d.md#a)\n"
    assert inline_text(text) == "run ctxbench x then <b> see doc"


def test_what_differs_between_the_formats_is_said_once() -> None:
    blocks = [Paragraph(("see ", sibling_page("sweep"), PerFormat("", " (no colours)"))),
              Only(HTML, [Paragraph("html only")]), Only(MARKDOWN, [Paragraph("md only")])]
    assert blocks_html(blocks) == '<p>see <a href="sweep.html">sweep.html</a></p>\n<p>html only</p>'
    assert blocks_markdown(blocks) == "see [sweep.md](sweep.md) (no colours)\n\nmd only\n"
    # A paragraph empty in a format is absent from it.
    assert blocks_markdown([Paragraph(PerFormat("html", ""))]) == ""


def test_markdown_keeps_a_paragraph_and_an_item_on_one_line() -> None:
    assert blocks_markdown([Paragraph("a\nb"), Bullets(["c\nd"])]) == "a b\n\n- c d\n"
    assert blocks_html([Bullets(["c"], id="l")]) == '<ul id="l"><li>c</li></ul>'


def test_figures_and_details() -> None:
    figure = Figure(b"png", "plots/p.png", alt="P", caption="P", how="read", id="plot-p", markdown_heading=True)
    html = blocks_html([figure])
    assert html.startswith('<figure id="plot-p"><figcaption>P</figcaption><img alt="P" src="data:image/png;base64,')
    assert html.endswith('<div class="how"><strong>How to read this</strong>read</div></figure>')
    assert blocks_markdown([figure]) == "### P\n\n![P](plots/p.png)\n\nread\n"
    short = Figure(b"png", "p.png", alt="p against everything", markdown_alt="p")
    assert blocks_markdown([short]) == "![p](p.png)\n"
    details = Details("config", "a = <1>")
    assert blocks_html([details]) == "<details><summary>config</summary><pre>a = &lt;1&gt;</pre></details>"
    assert blocks_markdown([details]) == ""
