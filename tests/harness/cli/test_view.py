"""``ctxbench view`` (harness/cli/view.py) run as a real process: it writes the explorer page and prints its
path; a directory that is not a finished run, a damaged event log or a bad or busy port is one error line
with exit 2 that writes nothing; ``--serve`` serves the page on localhost until Ctrl-C."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from harness.core.rundir import EVENTS_TABLE
from tests.harness.cli.invoke import TINY, assert_usage_error, command, ctxbench, write_config


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("view")
    write_config(base, TINY)
    done = ctxbench("run", "tiny.toml", "--out", "run", "--quiet", "--no-report", cwd=base)
    assert done.returncode == 0, done.stderr
    return base / "run"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_view_writes_the_page_into_the_run_directory_and_prints_its_path(run_dir: Path) -> None:
    result = ctxbench("view", run_dir, cwd=run_dir.parent)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(run_dir / "explorer.html")
    assert (run_dir / "explorer.html").read_text().startswith("<!DOCTYPE html>")


def test_view_out_writes_the_page_elsewhere(run_dir: Path, tmp_path: Path) -> None:
    result = ctxbench("view", run_dir, "--out", tmp_path / "page.html", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "page.html").is_file()
    assert_usage_error(ctxbench("view", run_dir, "--out", tmp_path / "nowhere" / "page.html", cwd=tmp_path),
                       "nowhere")


def test_view_of_a_missing_directory_or_a_damaged_event_log_exits_2_and_writes_nothing(run_dir: Path,
                                                                                      tmp_path: Path) -> None:
    assert_usage_error(ctxbench("view", "nowhere", cwd=tmp_path), "nowhere", "no such directory")
    damaged = tmp_path / "damaged"
    subprocess.run(["cp", "-r", str(run_dir), str(damaged)], check=True)
    (damaged / "explorer.html").unlink(missing_ok=True)
    (damaged / EVENTS_TABLE).write_bytes(b"garbage")
    assert_usage_error(ctxbench("view", damaged, cwd=tmp_path), f"{damaged / EVENTS_TABLE}", "changed after the run")
    (damaged / EVENTS_TABLE).unlink()
    assert_usage_error(ctxbench("view", damaged, cwd=tmp_path), EVENTS_TABLE, "missing")
    assert not (damaged / "explorer.html").exists()


@pytest.mark.parametrize("port", ["0", "65536", "http", "-1"])
def test_view_refuses_a_port_that_is_not_one(run_dir: Path, tmp_path: Path, port: str) -> None:
    assert_usage_error(ctxbench("view", run_dir, "--serve", f"--port={port}", "--out", tmp_path / "p.html",
                                cwd=tmp_path), "--port", "1 to 65535")
    assert not (tmp_path / "p.html").exists()


def test_view_refuses_a_busy_port_before_it_writes_anything(run_dir: Path, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = ctxbench("view", run_dir, "--serve", "--port", str(port), "--out", tmp_path / "p.html", cwd=tmp_path)
    assert_usage_error(result, f"--port {port}", "busy")
    assert not (tmp_path / "p.html").exists()


def test_view_serve_serves_the_page_until_ctrl_c(run_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    page = tmp_path / "served.html"
    # Started with SIGINT ignored, as a background job of a non-interactive shell starts it: the server must
    # still stop on Ctrl-C (it did not, and hung in serve_forever, when the suite itself ran in the background).
    # faulthandler on: if the server does not stop, SIGABRT makes it print every thread's stack.
    process = subprocess.Popen([*command(), "view", str(run_dir), "--out", str(page), "--serve", "--port", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=os.environ | {"PYTHONFAULTHANDLER": "1"},
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == str(page)
        assert process.stdout.readline().strip() == f"serving the explorer at http://127.0.0.1:{port}/ (Ctrl-C stops)"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
            assert response.status == 200
            assert response.headers["Content-Type"] == "text/html; charset=utf-8"
            assert response.read() == page.read_bytes()
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/config.toml", timeout=10)
        assert info.value.code == 404  # the page only: nothing else of the run directory is served
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)
            _out, stacks = process.communicate(timeout=20)
            pytest.fail(f"view --serve did not stop 20 s after Ctrl-C; its threads:\n{stacks}")
        assert code == 0
        assert "Traceback" not in (process.stderr.read() if process.stderr else "")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("name", ["sessions.parquet", "manifest.json", "calls.parquet", "config.toml"])
def test_view_never_writes_over_a_run_directorys_own_files(run_dir: Path, tmp_path: Path, name: str) -> None:
    import shutil

    other = tmp_path / "other"
    shutil.copytree(run_dir, other)
    for target in (run_dir / name, other / name):
        before = {p.name: p.read_bytes() for p in [*run_dir.iterdir(), *other.iterdir()] if p.is_file()}
        result = ctxbench("view", run_dir, "--out", target, cwd=tmp_path)
        assert_usage_error(result, "--out", str(target), "run directory")
        assert {p.name: p.read_bytes() for p in [*run_dir.iterdir(), *other.iterdir()] if p.is_file()} == before


@pytest.mark.parametrize("kind", ["under a file", "300-character name", "dangling link", "in /proc"])
def test_view_refuses_an_out_it_cannot_write_before_building_the_page(run_dir: Path, tmp_path: Path,
                                                                      kind: str) -> None:
    (tmp_path / "afile").write_text("keep me\n")
    (tmp_path / "dangling.html").symlink_to(tmp_path / "nowhere" / "page.html")
    out = {"under a file": tmp_path / "afile" / "page.html", "300-character name": tmp_path / ("p" * 300),
           "dangling link": tmp_path / "dangling.html", "in /proc": Path("/proc/ctxbench-page.html")}[kind]
    result = ctxbench("view", run_dir, "--out", out, cwd=tmp_path)
    assert_usage_error(result, "--out")
    assert (tmp_path / "afile").read_text() == "keep me\n" and not (tmp_path / "nowhere").exists()
