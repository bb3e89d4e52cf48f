"""The validation status every report carries: the packaged verdicts are the Summary table of
docs/validation.md, a run is told the checks of its own setting (families and profile) beside the general
ones, each check it fails is named with our figure and the published one, and the paragraph stays short."""

from __future__ import annotations

import json
import re
import tomllib
from importlib import resources
from pathlib import Path

import pytest

import scenarios
from harness.core.rundir import ACCOUNTING_MODE, Manifest
from harness.run.config import DEFAULT_CONFIG
from harness.sim.profiles import PROFILE_NAMES
from reports.blocks import Paragraph, blocks_html, blocks_markdown
from reports.markup import md_lines
from reports.validation import status as vs
from scenarios.mix import DEFAULT_FAMILIES

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "validation.md"
needs_doc = pytest.mark.skipif(not DOC.is_file(), reason="docs/validation.md is not in this tree")

#: A document cut down to a few rows of each kind of setup, with a pipe inside a cell and bold verdicts.
SMALL_ROWS = [
    ["M1a", "oracle profile solves everything", "hard", "controls: frontier mix, oracle profile", "100%",
     "100.0% [100.0%, 100.0%]", "pass"],
    ["M1b", "drop-everything strategy gives about 0% success", "hard", "controls: frontier mix", "about 0%",
     "8.9% [7.8%, 10.2%]", "**FAIL**"],
    ["P2", "solve rate of masking-M10 against raw", "soft",
     "paper's setting (examples/trap.toml): code_repair, mid, caching off",
     "+1.4 pp (54.8% vs 53.4%), within ±5 pp [Trap]", "-7.7 pp [-10.6 pp, -4.4 pp]", "**disagree**"],
    ["P1", "cost a | b", "none", "ops mix, no target: frontier, default mix, caching off",
     "-52.7% [Trap]; no target in this setup", "-51.1% [-52.2%, -49.9%]", "-"],
    ["LC3", "tokens of last-5 pairs + summary against last-5 pairs", "direction", "examples/anchor.toml: 500 sessions",
     "up: +3.4% [Anchor]", "20.3% [17.2%, 23.6%]", "direction agrees"],
    ["P6", "context rot: mid recall at 32K over 4K", "hard", "probes", "0.73", "0.719 [0.700, 0.740]", "pass"],
]
SMALL_DOC = "\n".join([
    "# Validation", "", "## Summary", "",
    *md_lines(["id", "check", "kind", "setup", "published", "ctxbench (95% CI)", "verdict"], SMALL_ROWS),
    "", "Totals: pass 2.", "", "## Where we disagree, and why", "",
])


@pytest.fixture
def small(tmp_path: Path) -> list[vs.Verdict]:
    examples = tmp_path / "examples"
    examples.mkdir()
    (examples / "trap.toml").write_text('[model]\nbase = "mid"\n\n[[scenarios]]\nname = "code_repair"\n')
    (examples / "anchor.toml").write_text('model = "frontier"\n\n[[scenarios]]\nname = "mix"\n')
    return vs.resolve_settings(vs.parse_summary(SMALL_DOC), examples)


def _figure(row: vs.Verdict) -> str:
    return row.measured.split(" [")[0]


# The packaged record -------------------------------------------------------------------------------------


@needs_doc
def test_the_packaged_record_is_the_documents_summary() -> None:
    packaged = json.loads(resources.files("reports.validation").joinpath(vs.VERDICTS_FILE).read_text(encoding="utf-8"))
    assert packaged == vs.verdict_record(DOC)


def test_every_check_that_is_not_general_has_one_setting() -> None:
    rows = vs.load_verdicts()
    assert rows
    for row in rows:
        assert row.general or (row.families and row.profile in PROFILE_NAMES), row


def test_the_vocabulary_is_the_registries() -> None:
    assert set(vs.FAMILY_NAMES) == set(scenarios.names())
    assert set(vs.MIX_FAMILIES) == set(DEFAULT_FAMILIES)
    assert set(vs.PROFILE_NAMES) == set(PROFILE_NAMES)


def test_a_frontier_mix_run_is_told_what_is_reproduced_and_what_not_with_figures() -> None:
    status = vs.validation_status(["mix"], "frontier")
    m1b = next(r for r in vs.load_verdicts() if r.id == "M1b")
    assert m1b.verdict == "pass" and m1b in status.reproduced  # a general check, counted for every setting
    lc3 = next(r for r in vs.load_verdicts() if r.id == "LC3")
    assert lc3.verdict == "direction differs" and lc3 in status.not_reproduced
    assert _figure(lc3) in status.text
    assert status.matched
    # The setting's own checks (Less Context's anchor) are there beside the general ones.
    assert any(r.id.startswith("LC") for r in status.reproduced + status.not_reproduced)


def test_a_code_repair_frontier_run_is_told_the_complexity_traps_disagreement() -> None:
    status = vs.validation_status(["code_repair"], "frontier")
    p3 = [r for r in vs.load_verdicts() if r.id == "P3" and r.profile == "frontier" and r.verdict == "disagree"]
    assert p3
    for row in p3:
        assert row in status.not_reproduced
        assert _figure(row) in status.text
    assert "complexity-trap" in p3[0].setup
    # The mid rows of the same paper are another setting; mid's P2 agree there.
    assert all(r.general or r.profile == "frontier" for r in status.reproduced + status.not_reproduced)
    mid = vs.validation_status(["code_repair"], "mid")
    assert {r.verdict for r in mid.reproduced + mid.not_reproduced if r.id == "P2"} == {"agree"}


@pytest.mark.parametrize(("families", "profile"), [(["k8s_crashloop"], "frontier"), (["mix"], "custom"),
                                                   (["mix", "code_repair"], "frontier"), (["mix"], None)])
def test_an_unchecked_setting_is_told_so_and_still_gets_the_general_checks(families: list[str],
                                                                          profile: str | None) -> None:
    status = vs.validation_status(families, profile)
    assert not status.matched
    assert "no published effect was checked in this setting" in status.text
    assert vs.GENERAL_CHECKS in status.text
    general = [r for r in vs.load_verdicts() if r.general]
    assert status.reproduced == tuple(r for r in general if r.reproduced)
    assert status.not_reproduced == tuple(r for r in general if r.not_reproduced)
    assert all(r.id in status.text for r in status.reproduced + status.not_reproduced)


def test_the_default_runs_paragraph_is_short() -> None:
    families, profile = vs.setting_of_config(tomllib.loads(DEFAULT_CONFIG.read_text()))
    assert families is not None
    status = vs.validation_status(families, profile)
    assert status.matched
    assert len(status.text) <= 600, status.text
    assert len(re.findall(r"[.!?](?: |$)", status.text)) <= 4
    assert "ctxbench validation" in status.text and vs.DOC_LABEL in status.text


def test_refreshing_from_another_document_leaves_the_record_alone(tmp_path: Path) -> None:
    other = tmp_path / "docs" / "validation.md"
    other.parent.mkdir()
    other.write_text(SMALL_DOC)
    packaged = resources.files("reports.validation").joinpath(vs.VERDICTS_FILE).read_bytes()
    assert vs.refresh_verdicts(other) is None
    assert resources.files("reports.validation").joinpath(vs.VERDICTS_FILE).read_bytes() == packaged


# Reading and matching ------------------------------------------------------------------------------------


def test_the_summary_table_is_read_cell_by_cell(small: list[vs.Verdict]) -> None:
    assert [r.id for r in small] == ["M1a", "M1b", "P2", "P1", "LC3", "P6"]
    assert small[1].verdict == "FAIL" and small[2].verdict == "disagree"
    assert small[3].check == "cost a | b"
    assert small[1].measured == "8.9% [7.8%, 10.2%]"
    assert [r.general for r in small] == [True, True, False, False, False, True]


def test_settings_come_from_the_setup_and_else_from_its_example_config(small: list[vs.Verdict]) -> None:
    by_id = {r.id: r for r in small}
    assert (by_id["P2"].families, by_id["P2"].profile) == (("code_repair",), "mid")
    assert (by_id["P1"].families, by_id["P1"].profile) == (vs.MIX_FAMILIES, "frontier")
    assert (by_id["LC3"].families, by_id["LC3"].profile) == (vs.MIX_FAMILIES, "frontier")
    assert (by_id["M1a"].families, by_id["M1a"].profile) == (None, None)


def test_a_setup_naming_two_profiles_matches_no_run() -> None:
    doc = SMALL_DOC.replace("code_repair, mid, caching off", "code_repair, mid and small")
    row = next(r for r in vs.resolve_settings(vs.parse_summary(doc), None) if r.id == "P2")
    assert row.profile is None
    assert not vs.applies(row, ("code_repair",), "mid")


def test_a_document_without_a_summary_table_is_refused() -> None:
    with pytest.raises(ValueError, match="Summary"):
        vs.parse_summary("# Validation\n\nNothing here.\n")
    with pytest.raises(ValueError, match="columns"):
        vs.parse_summary("## Summary\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")


def test_the_setting_is_matched_exactly(small: list[vs.Verdict]) -> None:
    p2 = next(r for r in small if r.id == "P2")
    assert vs.applies(p2, ("code_repair",), "mid")
    assert not vs.applies(p2, ("code_repair",), "frontier")
    assert not vs.applies(p2, ("code_repair", "log_triage"), "mid")
    status = vs.validation_status(["code_repair"], "mid", small)
    assert status.not_reproduced == (small[1], p2)
    assert status.reproduced == (small[0], small[5])
    # "-" is measured without a target: neither reproduced nor not.
    mix = vs.validation_status(list(DEFAULT_FAMILIES), "frontier", small)
    assert small[3] not in mix.reproduced + mix.not_reproduced
    assert small[4] in mix.reproduced


def test_failures_are_worded_with_our_figure_and_the_published_one(small: list[vs.Verdict]) -> None:
    text = vs.validation_status(["code_repair"], "mid", small).text
    assert "does not reproduce 2, ours vs published: M1b drop-everything success 8.9% vs about 0%; " \
           "P2 solve rate of masking-M10 -7.7 pp vs +1.4 pp." in text
    assert "reproduces 2 of 4 published effects checked" in text


def test_an_empty_record_says_so() -> None:
    status = vs.validation_status(["mix"], "frontier", [])
    assert status.empty and "no validation record" in status.text


# From a manifest, and as markup --------------------------------------------------------------------------


def _manifest(**kwargs: object) -> Manifest:
    return Manifest.model_validate({"run_id": "r", "model": {"name": "frontier"}, **kwargs})


def test_a_manifests_setting_is_its_families_with_weight_and_its_profile() -> None:
    weights = dict.fromkeys(DEFAULT_FAMILIES, 1.0)
    mix = _manifest(scenarios=[{"name": "mix", "weight": 1.0, "weights": weights}])
    assert vs.status_for_manifest(mix) == vs.validation_status(["mix"], "frontier")
    fewer = _manifest(scenarios=[{"name": "mix", "weight": 1.0, "weights": {**weights, "log_triage": 0.0}}])
    status = vs.status_for_manifest(fewer)
    assert status is not None and not status.matched and "log_triage" not in status.families
    assert vs.status_for_manifest(_manifest(mode=ACCOUNTING_MODE, scenarios=[{"name": "trace"}])) is None


def _html(paragraph: Paragraph | None) -> str:
    assert paragraph is not None
    return blocks_html([paragraph])


def _markdown(paragraph: Paragraph | None) -> str:
    assert paragraph is not None
    return blocks_markdown([paragraph]).rstrip("\n")


def test_the_html_is_escaped_and_links_only_inside_the_source(tmp_path: Path) -> None:
    status = vs.validation_status(["mix"], "frontier")
    outside = _html(vs.validation_status_paragraph(status, html_dir=tmp_path))
    assert outside.startswith('<p id="validation-status">') and outside.endswith("</p>")
    assert "<code>ctxbench validation</code>" in outside and "<a " not in outside
    assert "'" not in outside and "`" not in outside
    assert vs.validation_status_paragraph(None) is None


@needs_doc
def test_a_report_in_the_source_links_to_the_document() -> None:
    status = vs.validation_status(["mix"], "frontier")
    run_dir = ROOT / "runs" / "some-run"
    html = _html(vs.validation_status_paragraph(status, html_dir=run_dir))
    assert f'<a href="../../docs/validation.md#summary">{vs.DOC_LABEL}</a>' in html
    assert "<a " not in _markdown(vs.validation_status_paragraph(status, html_dir=run_dir))
    md = _markdown(vs.validation_status_paragraph(status, markdown_dir=run_dir))
    assert f"[{vs.DOC_LABEL}](../../docs/validation.md#summary)" in md
    assert "\n" not in md and "`ctxbench validation`" in md
