"""``ctxbench calibrate`` (harness/cli/calibrate.py): recorded transcripts in, a complete profile TOML that loads
and runs and a calibration report out; a trace without usage, a truncated trace, an unknown preset, an --out in
a missing folder or an existing one without --force are one error line with exit 2 and nothing written. On the
real transcripts (when present), the fitted profile's mean latency is within 10% of the recorded mean."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest
import tomli_w

from harness.cli import main
from harness.sim.profiles import PROFILE_NAMES, Profile, load_profile
from tests.harness.cli.invoke import assert_usage_error

REPO = Path(__file__).resolve().parents[3]
SAMPLES = REPO / "tests" / "data" / "traces"
LITELLM = SAMPLES / "litellm-logs"
REAL = REPO / ".." / "shared" / "realtraces"
REAL_LITELLM = REAL / "openhands-sdk" / "original" / "tests" / "fixtures" / "llm_data"
REAL_SWE_AGENT = REAL / "swe-agent" / "original"


def _calibrate(args: list[str], capsys: pytest.CaptureFixture[str]) -> subprocess.CompletedProcess[str]:
    """``ctxbench calibrate ARGS`` in this process, as a completed process (for `assert_usage_error`)."""
    try:
        code = main(["calibrate", *args])
    except SystemExit as e:  # argparse's own errors exit through CommandParser.error
        code = int(e.code or 0)
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(["ctxbench", "calibrate", *args], code, captured.out, captured.err)


def _runs(profile_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 5-session run of the default scenarios under the written profile (as a config's [model] table)."""
    config = tmp_path / "with-profile.toml"
    config.write_text(tomli_w.dumps({"sessions": 5, "seed": 1, "executor": "serial",
                                     "strategies": [{"name": "unbounded"}, {"name": "sliding_window"}],
                                     "model": tomllib.loads(profile_path.read_text())}))
    code = main(["run", str(config), "--out", str(tmp_path / "run"), "--quiet", "--no-report"])
    capsys.readouterr()
    assert code == 0
    assert (tmp_path / "run" / "sessions.parquet").is_file()


def test_calibrate_writes_a_profile_that_loads_and_runs_and_a_report(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "profile.toml"
    result = _calibrate([str(LITELLM), "--out", str(out)], capsys)
    assert result.returncode == 0, result.stderr
    report = tmp_path / "profile-calibration"
    assert result.stdout.splitlines() == [str(out), str(report / "report.html"), str(report / "report.md")]
    assert "ctxbench: calibrate: latency check:" in result.stderr  # progress on stderr, not silenced
    loaded = load_profile(out)
    assert loaded.name == "profile"
    text = out.read_text()
    for name in Profile.model_fields:
        assert f"\n{name} = " in text or f"\n# {name} is unset" in text, name
    # The samples record latencies and output tokens of 5 calls: the base seconds, sigma and thought_tokens.
    assert "base_s = " in text and "# fitted: 95% [" in text.split("\nbase_s = ")[1].splitlines()[0]
    assert "# preset frontier:" in text.split("\np_max = ")[1].splitlines()[0]
    assert loaded.thought_tokens != 120
    markdown = (report / "report.md").read_text()
    for heading in ("## The profile, field by field", "## Latency: the fit's check",
                    "## Tool errors against context length", "## Token-count ratio per model"):
        assert heading in markdown
    assert "| 5 | 4.386 |" in markdown  # the recorded mean latency of the 5 sample calls
    assert (report / "plots" / "error_rate.png").is_file() and (report / "plots" / "latency.png").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left
    _runs(out, tmp_path, capsys)


def test_run_takes_the_written_profile_as_its_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "profile.toml"
    assert _calibrate([str(LITELLM), "--out", str(out), "--quiet"], capsys).returncode == 0
    code = main(["run", "--model", str(out), "--sessions", "5", "--out", str(tmp_path / "run"), "--quiet",
                 "--no-report"])
    capsys.readouterr()
    assert code == 0


def test_an_existing_out_is_refused_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "profile.toml"
    out.write_text("kept\n")
    result = _calibrate([str(LITELLM), "--out", str(out), "--quiet"], capsys)
    assert_usage_error(result, "--out", "exists", "--force")
    assert out.read_text() == "kept\n"
    assert not (tmp_path / "profile-calibration").exists()
    assert _calibrate([str(LITELLM), "--out", str(out), "--quiet", "--force"], capsys).returncode == 0
    assert load_profile(out).name == "profile"
    # Again with --force: the report folder calibrate wrote is replaced; one holding other files is not.
    assert _calibrate([str(LITELLM), "--out", str(out), "--quiet", "--force"], capsys).returncode == 0
    (tmp_path / "profile-calibration" / "mine.txt").write_text("x")
    assert_usage_error(_calibrate([str(LITELLM), "--out", str(out), "--quiet", "--force"], capsys),
                       "--report", "mine.txt")


def test_bad_flags_and_inputs_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "p.toml"
    assert_usage_error(_calibrate([str(LITELLM), "--out", str(tmp_path / "missing" / "p.toml")], capsys),
                       "--out", "does not exist")
    line = assert_usage_error(_calibrate([str(LITELLM), "--out", str(out), "--preset", "frontierr"], capsys),
                              "--preset", "frontierr")
    assert all(name in line for name in PROFILE_NAMES)
    assert_usage_error(_calibrate([str(LITELLM), "--out", str(out), "--format", "nope"], capsys), "--format", "nope")
    no_usage = SAMPLES / "openai-chat" / "incident_triage.json"
    assert_usage_error(_calibrate([str(no_usage), "--out", str(out), "--quiet"], capsys), "no recorded usage in",
                       "incident_triage.json")
    truncated = tmp_path / "cut.json"
    truncated.write_text((SAMPLES / "atif" / "incident_triage.json").read_text()[:300])
    assert_usage_error(_calibrate([str(truncated), "--out", str(out), "--quiet"], capsys), "cut.json")
    assert not out.exists()


def test_same_traces_same_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outputs = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        assert _calibrate([str(SAMPLES / "claude-code"), str(SAMPLES / "otel-genai"), "--out",
                           str(folder / "profile.toml"), "--quiet"], capsys).returncode == 0
        outputs.append([(folder / "profile.toml").read_bytes(), (folder / "profile-calibration" / "report.md")
                        .read_bytes()])
    assert outputs[0] == outputs[1]


@pytest.mark.skipif(not REAL_LITELLM.is_dir() or not REAL_SWE_AGENT.is_dir(), reason="real transcripts not present")
def test_real_transcripts_latency_within_ten_percent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.run.profile_fit import calibrate, latency_calls, latency_check, measure
    from harness.run.traces import load_traces

    logs = [REAL_LITELLM / "llm-logs", REAL_LITELLM / "nonfncall-llm-logs"]
    out = tmp_path / "openhands.toml"
    result = _calibrate([*map(str, logs), str(REAL_SWE_AGENT), "--out", str(out), "--quiet"], capsys)
    assert result.returncode == 0, result.stderr
    written = load_profile(out)
    # The check recomputed from the written file alone, on the OpenHands LiteLLM logs' calls.
    calls = latency_calls(measure(load_traces(logs)))
    assert len(calls) >= 9
    check = latency_check(calls, written)
    assert check is not None and abs(check.gap) <= 0.10, check
    assert abs(calibrate(measure(load_traces(logs))).check.gap) <= 0.10  # type: ignore[union-attr]
    _runs(out, tmp_path, capsys)
