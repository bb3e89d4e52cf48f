"""The validation status of a run: for its scenario families and model profile, which published effects
the simulator reproduces and which it does not, as one short paragraph every report carries.

The verdicts come from the Summary table of ``docs/validation.md`` (written by ``ctxbench validation``).
A report cannot rerun the checks, and an installed wheel has no ``docs/`` folder, so the table's rows
ship inside the package as ``reports/validation/verdicts.json``, each with the setting it was measured
in (families and profile) resolved once, when the record is written: :func:`refresh_verdicts` rewrites
the record whenever the checkout's own document is rewritten.

Which checks concern a run (:func:`applies`):

- the general checks, ids M1-M3 and P6-P10 (the mechanisms, the probe calibration, the retry and stuck
  rules, the contracts), concern every run, whatever its setup column says;
- every other check concerns a run only when both the run's profile name equals the check's and the
  run's set of scenario families equals the check's, ``mix`` standing for its five default families.
  A mix of the same families with other weights counts as the same set; caching, strategies, session
  counts and family params are not compared. A check whose setting could not be resolved concerns no run.

Verdicts pass, agree and "direction agrees" count as reproduced; FAIL, disagree, "direction differs" and
"not modelled" as not reproduced; "-" (measured with no published target in that setup) as neither.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from harness.core.files import write_atomically
from harness.core.rundir import ACCOUNTING_MODE, Manifest
from reports.blocks import Code, Inline, Link, Paragraph, PerFormat

__all__ = [
    "DOC_LABEL",
    "DOC_LINK",
    "MIX_FAMILIES",
    "VERDICTS_FILE",
    "ValidationStatus",
    "Verdict",
    "applies",
    "load_verdicts",
    "parse_summary",
    "refresh_verdicts",
    "resolve_settings",
    "setting_of_config",
    "status_for_manifest",
    "validation_status",
    "validation_status_paragraph",
    "verdict_record",
]

#: The packaged record's file name, inside the ``reports.validation`` package.
VERDICTS_FILE = "verdicts.json"
#: Where the document lives in the ctxbench source, with the anchor of its Summary section.
DOC_LINK = "docs/validation.md#summary"
#: How the paragraph names the document: a report may be read far from any checkout.
DOC_LABEL = "docs/validation.md, section Summary, in the ctxbench source"
#: The command that regenerates the document.
COMMAND = "ctxbench validation"

# The vocabulary the setup column is read with. `reports` may not import `scenarios` or `harness.sim`
# (the import contract), so the names are repeated here; the tests hold them equal to the registries.
#: The families of the default ``mix``.
MIX_FAMILIES = ("alert_chain", "db_slow_query", "deploy_regression", "k8s_crashloop", "log_triage")
#: Every built-in scenario name (``mix`` included).
FAMILY_NAMES = (*MIX_FAMILIES, "code_repair", "mix")
#: Every built-in model profile name.
PROFILE_NAMES = ("frontier", "mid", "small", "stress-2023", "oracle")

#: Verdicts that count as reproducing the published effect, and as not reproducing it.
REPRODUCED = frozenset({"pass", "agree", "direction agrees"})
NOT_REPRODUCED = frozenset({"FAIL", "disagree", "direction differs", "not modelled"})

#: The Summary table's columns, as the document heads them, and the record's field for each.
_COLUMNS = {"id": "id", "check": "check", "kind": "kind", "setup": "setup", "published": "published",
            "ctxbench (95% CI)": "measured", "verdict": "verdict"}
#: How the paragraph names the general checks.
GENERAL_CHECKS = "M1-M3, P6-P10"
#: The general checks by id, M1-M3 and P6-P10, a letter suffix (M1a, M1b) belonging to its number.
_GENERAL_ID = re.compile(r"M[1-3][a-z]?|P(?:[6-9]|10)[a-z]?")
_EXAMPLE = re.compile(r"examples/[\w.-]+\.toml")
#: A few titles too long for a one-paragraph summary; any other title is shortened by rule (_label).
_SHORT_TITLES = {"drop-everything strategy gives about 0% success": "drop-everything success",
                 "the summary's extra tokens are small": "summary's extra tokens"}


@dataclass(frozen=True)
class Verdict:
    """One row of the document's Summary table, with the setting it was measured in."""

    id: str
    check: str
    #: hard | soft | direction | claim | none
    kind: str
    setup: str
    published: str
    #: Our figure with its 95% interval, as the document prints it.
    measured: str
    #: As the document prints it, without the bold of a disagreement.
    verdict: str
    #: A general check (M1-M3, P6-P10): it concerns every run.
    general: bool = False
    #: The scenario families it was measured on (``mix`` expanded), sorted; None when general or unresolved.
    families: tuple[str, ...] | None = None
    #: The model profile it was measured under; None when general or unresolved.
    profile: str | None = None

    @property
    def reproduced(self) -> bool:
        """The simulator reproduces the published effect."""
        return self.verdict in REPRODUCED

    @property
    def not_reproduced(self) -> bool:
        """The simulator does not reproduce (or does not model) the published effect."""
        return self.verdict in NOT_REPRODUCED


@dataclass(frozen=True)
class ValidationStatus:
    """What the validation says about one run's setting, and the paragraph that says it."""

    profile: str
    #: The run's families, ``mix`` expanded, sorted.
    families: tuple[str, ...]
    #: Some check with a target was measured in exactly this setting (beyond the general checks).
    matched: bool
    reproduced: tuple[Verdict, ...]
    not_reproduced: tuple[Verdict, ...]
    #: The paragraph, plain text.
    text: str
    link: str = DOC_LINK
    link_label: str = DOC_LABEL
    #: The record held no verdict at all (a package built without it).
    empty: bool = False


# Reading the document --------------------------------------------------------------------------------------


def _cells(line: str) -> list[str]:
    """The cells of one Markdown table line; ``\\|`` is a pipe inside a cell (reports.markup.md_escape)."""
    inner = line.strip().removeprefix("|").removesuffix("|")
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def parse_summary(text: str) -> list[Verdict]:
    """The rows of the Summary table of a validation document's ``text``, in order, their setting not yet
    resolved (see :func:`resolve_settings`). ValueError when the section or its table is missing or its
    columns are not the expected ones."""
    lines = text.splitlines()
    try:
        start = lines.index("## Summary")
    except ValueError:
        raise ValueError("no '## Summary' section") from None
    table = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if line.startswith("|"):
            table.append(line)
        elif table:
            break
    if len(table) < 2:
        raise ValueError("the Summary section has no table")
    header = _cells(table[0])
    if sorted(header) != sorted(_COLUMNS):
        raise ValueError(f"unexpected Summary columns: {header}")
    rows = []
    for line in table[2:]:  # after the header and its rule
        cells = dict(zip((_COLUMNS[h] for h in header), _cells(line), strict=True))
        verdict = cells["verdict"]
        if verdict.startswith("**") and verdict.endswith("**"):
            verdict = verdict[2:-2]
        rows.append(Verdict(cells["id"], cells["check"], cells["kind"], cells["setup"], cells["published"],
                            cells["measured"], verdict, general=_GENERAL_ID.fullmatch(cells["id"]) is not None))
    return rows


def _expand(families: Iterable[str]) -> tuple[str, ...]:
    """``families`` as a sorted set, ``mix`` replaced by its default families."""
    out: set[str] = set()
    for name in families:
        out.update(MIX_FAMILIES if name == "mix" else (name,))
    return tuple(sorted(out))


def _scenario_families(entries: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The families a run's scenario entries (a config's ``[[scenarios]]`` or a manifest's) draw from: a mix
    stands for the families it gives a weight above 0, by default its five; an entry of weight 0 for none."""
    names: list[str] = []
    for entry in entries:
        if float(entry.get("weight", 1.0)) <= 0:
            continue
        name = str(entry.get("name"))
        weights = entry.get("weights")
        if name == "mix" and isinstance(weights, Mapping):
            names += [str(k) for k, w in weights.items() if float(w) > 0]
        else:
            names.append(name)
    return _expand(names)


def setting_of_config(config: Mapping[str, Any]) -> tuple[tuple[str, ...] | None, str | None]:
    """(families, profile) of a run config's parsed TOML: the profile is ``model``, or the ``base`` of a
    ``[model]`` table; a config without scenarios runs the mix. None where the config leaves it unsaid."""
    model = config.get("model")
    profile = model.get("base", model.get("name")) if isinstance(model, Mapping) else model
    families = _scenario_families(config.get("scenarios", [{"name": "mix"}]))
    return families or None, None if profile is None else str(profile)


def resolve_settings(rows: Iterable[Verdict], examples: Path | None) -> list[Verdict]:
    """``rows`` with the setting of each check that is not general: the families and profile its setup
    names (``mix`` for "default mix", "frontier mix" and the like), and what it leaves unsaid from the
    example config it names, read from ``examples`` (the directory that holds the example configs)."""
    out = []
    for row in rows:
        if row.general:
            out.append(row)
            continue
        tokens = re.split(r"[\s,;:()]+", row.setup)
        families = _expand(t for t in tokens if t in FAMILY_NAMES) or None
        profiles = list(dict.fromkeys(t for t in tokens if t in PROFILE_NAMES))
        # Two profiles in one setup would be a comparison across profiles: no single setting to match.
        profile = profiles[0] if len(profiles) == 1 else None
        example = _EXAMPLE.search(row.setup)
        if example and examples is not None and (families is None or not profiles):
            path = examples / Path(example.group()).name
            if path.is_file():
                config_families, config_profile = setting_of_config(tomllib.loads(path.read_text(encoding="utf-8")))
                families = families or config_families
                profile = profile if profiles else config_profile
        out.append(replace(row, families=families, profile=profile))
    return out


def verdict_record(doc: str | Path, examples: Path | None = None) -> dict[str, Any]:
    """The record :data:`VERDICTS_FILE` holds for the validation document at ``doc``: its Summary rows with
    their settings, resolved against ``examples`` (default: the ``examples`` folder beside the document's
    folder, as in the ctxbench source)."""
    doc_path = Path(doc)
    if examples is None:
        examples = doc_path.resolve().parent.parent / "examples"
    rows = resolve_settings(parse_summary(doc_path.read_text(encoding="utf-8")), examples)
    checks = []
    for row in rows:
        data = asdict(row)
        data["families"] = None if row.families is None else list(row.families)
        checks.append(data)
    return {"document": "docs/validation.md", "checks": checks}


def _packaged() -> Path:
    return Path(__file__).resolve().with_name(VERDICTS_FILE)


def _checkout_document() -> Path:
    """Where the document sits when this package is imported from the ctxbench source."""
    return Path(__file__).resolve().parents[2] / "docs" / "validation.md"


def refresh_verdicts(doc: str | Path, examples: Path | None = None) -> Path | None:
    """Rewrite the packaged record from ``doc`` when ``doc`` is the checkout's own ``docs/validation.md``
    (settings resolved as :func:`verdict_record` does); returns the record's path, or None (and writes
    nothing) for any other document, so that a test's or a quick run's document never replaces the
    verdicts the package ships."""
    if Path(doc).resolve() != _checkout_document():
        return None
    record = verdict_record(doc, examples)
    target = _packaged()
    write_atomically(target, (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode())
    load_verdicts.cache_clear()
    return target


@cache
def load_verdicts() -> tuple[Verdict, ...]:
    """The packaged record's rows; none when the package was built without it."""
    try:
        text = resources.files("reports.validation").joinpath(VERDICTS_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return ()
    rows = []
    for data in json.loads(text)["checks"]:
        families = data.pop("families")
        rows.append(Verdict(**data, families=None if families is None else tuple(families)))
    return tuple(rows)


# Choosing and wording -------------------------------------------------------------------------------------


def applies(row: Verdict, families: tuple[str, ...], profile: str) -> bool:
    """``row`` concerns a run of ``families`` (expanded, sorted) under ``profile`` (the rule in the module
    docstring)."""
    if row.general:
        return True
    return row.families is not None and row.families == families and row.profile == profile


def _label(title: str) -> str:
    """A few words for a check's title: what is measured, without what it is measured against."""
    if title in _SHORT_TITLES:
        return _SHORT_TITLES[title]
    text = re.sub(r"\s*\([^)]*\)", "", title).split(" against ")[0]
    head, sep, tail = text.partition(": ")
    # "seed article: loop rate" is named by its tail; "elongation: summary runs more turns ..." by its head.
    return (tail if len(tail.split()) <= 3 else head) if sep else text


def _figure(measured: str) -> str:
    """Our point estimate, without its interval."""
    return re.sub(r"\s*\[[^\]]*\]", "", measured).strip()


def _target(published: str) -> str:
    """The published figure alone: no citation, no gloss, no band, no direction word."""
    text = re.sub(r"\s*\[[^\]]*\]", "", published)
    text = re.split(r" \(|; |, within ", text)[0].strip()
    return re.sub(r"^(up|down): ", "", text)


def _failure(row: Verdict) -> str:
    if row.verdict == "not modelled":
        return f"{row.id} {_label(row.check)} not modelled"
    return f"{row.id} {_label(row.check)} {_figure(row.measured)} vs {_target(row.published)}"


def _ids(rows: Sequence[Verdict]) -> str:
    """Check ids in first-seen order, a repeated id once with its count."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.id] = counts.get(row.id, 0) + 1
    return ", ".join(k if n == 1 else f"{k} ×{n}" for k, n in counts.items())


def _setting_text(families: tuple[str, ...], profile: str) -> str:
    """``profile`` on ``families``, as the paragraph names the run's setting."""
    if families == MIX_FAMILIES:
        return f"{profile}, five-family mix"
    return f"{profile}, {', '.join(families) or 'no scenario family'}"


def validation_status(families: Sequence[str], profile: str | None,
                      verdicts: Sequence[Verdict] | None = None) -> ValidationStatus:
    """The status of a run of ``families`` (``mix`` stands for its five) under ``profile`` (a profile
    name; None when unknown), from ``verdicts`` (default: the packaged record)."""
    rows = load_verdicts() if verdicts is None else tuple(verdicts)
    fams = _expand(families)
    prof = profile or "unknown profile"
    chosen = [r for r in rows if applies(r, fams, prof)]
    good = tuple(r for r in chosen if r.reproduced)
    bad = tuple(r for r in chosen if r.not_reproduced)
    matched = any(not r.general and (r.reproduced or r.not_reproduced) for r in chosen)
    setting = _setting_text(fams, prof)
    where = f"See {DOC_LABEL} (rerun: `{COMMAND}`)."
    if not rows:
        text = (f"This ctxbench carries no validation record, so this run's setting ({setting}) is unvalidated: read "
                f"success rates as strategy comparisons, not as absolute predictions. {where}")
        return ValidationStatus(prof, fams, False, (), (), text, empty=True)
    failures = (f"does not reproduce {len(bad)}, ours vs published: " + "; ".join(_failure(r) for r in bad)
                if bad else "fails none")
    checked = f"{len(good)} of {len(good) + len(bad)} published effects checked"
    specific = [r for r in good if not r.general]
    general = f"{len(good) - len(specific)} general checks of {GENERAL_CHECKS}"
    if matched:
        listed = f"{_ids(specific)} and {general}" if specific else general
        lead = f"Validation ({setting}): the simulator reproduces {checked} ({listed}) and {failures}."
        trust = "Trust success rates as strategy comparisons in validated directions, not as absolute predictions."
    else:
        lead = (f"Validation ({setting}): no published effect was checked in this setting; of the general checks "
                f"({GENERAL_CHECKS}), the simulator reproduces {len(good)} ({_ids(good)}) and {failures}.")
        trust = ("Read success rates as strategy comparisons, not as absolute predictions; here even the "
                 "comparisons are unchecked.")
    return ValidationStatus(prof, fams, matched, good, bad, f"{lead} {trust} {where}")


def status_for_manifest(manifest: Manifest, verdicts: Sequence[Verdict] | None = None) -> ValidationStatus | None:
    """The status of the run ``manifest`` describes; None for replayed recordings (``mode`` accounting),
    which the simulator did not produce."""
    if manifest.mode == ACCOUNTING_MODE:
        return None
    return validation_status(_scenario_families(manifest.scenarios), manifest.model_name, verdicts)


# Markup ---------------------------------------------------------------------------------------------------


def _href(report_dir: Path | None) -> str | None:
    """A relative link from ``report_dir`` to the document, where one makes sense: the report lies inside
    the ctxbench source that holds the document. Elsewhere (an installed wheel, a run outside the source)
    the paragraph names the document instead."""
    if report_dir is None:
        return None
    doc = _checkout_document()
    here = Path(report_dir).resolve()
    if not doc.is_file() or not here.is_relative_to(doc.parent.parent):
        return None
    return Path(os.path.relpath(doc, here)).as_posix() + "#summary"


def _status_text(text: str, href: str | None) -> Inline:
    """``text`` with the command as code and, when ``href`` is given, the document's name a link to it."""
    def coded(part: str) -> tuple[Inline, ...]:
        pieces = part.split(f"`{COMMAND}`")
        spans: list[Inline] = [pieces[0]]
        for piece in pieces[1:]:
            spans += [Code(COMMAND), piece]
        return tuple(spans)

    if href is None or DOC_LABEL not in text:
        return coded(text)
    before, _, after = text.partition(DOC_LABEL)
    return (*coded(before), Link(DOC_LABEL, href), *coded(after))


def validation_status_paragraph(status: ValidationStatus | None, html_dir: Path | None = None,
                                markdown_dir: Path | None = None) -> Paragraph | None:
    """The paragraph as a block (None for no status). The document's name is a link where the page of
    that format is written to a folder (``html_dir``, ``markdown_dir``) inside the ctxbench source, and
    plain text elsewhere or where no folder is given."""
    if status is None:
        return None
    html, markdown = _status_text(status.text, _href(html_dir)), _status_text(status.text, _href(markdown_dir))
    return Paragraph(html if html == markdown else PerFormat(html, markdown), id="validation-status")
