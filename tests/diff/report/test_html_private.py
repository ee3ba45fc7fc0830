"""The HTML diff report holds transcripts: it is written private (0600), like a cassette
and like ``cassette view``'s page."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.helpers.cli import cassette_cli

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "diff"


def test_html_report_is_private(tmp_path: Path) -> None:
    a, b = GOLDEN / "run_a.jsonl", GOLDEN / "run_b.jsonl"
    proc = cassette_cli("diff", str(a), str(b), "--html", "report.html", cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr  # 1: the runs differ
    page = tmp_path / "report.html"
    assert "<html" in page.read_text()
    assert stat.S_IMODE(page.stat().st_mode) == 0o600


def test_unwritable_page_is_one_line(tmp_path: Path) -> None:
    run = GOLDEN / "run_a.jsonl"
    proc = cassette_cli("view", str(run), "-o", "no/such/dir/page.html", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("error:") == 1
