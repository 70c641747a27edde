"""The HTML report: every participant, valid PNGs, nothing fetched over the network."""

from __future__ import annotations

import re
import struct
import zlib

import pytest

from companion.research.merge import merge_exports
from companion.research.report import ReportError, load, mean_ci, write_report
from tests.conftest import run_cli
from tests.study_data import build_study


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    homes, exports = build_study(root, homes=3, days=5)
    study = root / "study.db"
    merge_exports(study, exports)
    return homes, study


def png_ok(data: bytes) -> tuple[int, int]:
    """Decode the PNG's chunks (CRC checked) and return its size."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, size, idat = 8, (0, 0), 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) == crc
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        idat += len(body) if kind == b"IDAT" else 0
        pos += 12 + length
    assert idat > 0
    return size


def test_report_on_merged_study(merged, tmp_path):
    homes, study = merged
    out = tmp_path / "rep"
    done = run_cli("report", "--db", str(study), "--out", str(out))
    assert done.returncode == 0, done.stderr
    page = (out / "report.html").read_text()
    data = load(study)
    assert len(data.participants) == 3
    for pid in data.participants:
        assert pid in page
    for name in ("adherence", "mood", "empathy", "condition", "durations", "understood"):
        width, height = png_ok((out / f"{name}.png").read_bytes())
        assert width > 200 and height > 100
    # self-contained: no external references of any kind
    outside_images = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page)
    assert not re.search(r"(?:https?:)?//[a-z0-9]|url\(", outside_images, re.IGNORECASE)
    for ref in re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', page):
        assert ref.startswith("data:image/png;base64,")
    assert "<script" not in page.lower() and "@import" not in page
    assert page.count("data:image/png;base64,") == 6
    assert re.search(r"matched: mean \d\.\d\d \(95 % CI", page)


def test_report_for_one_home_counts_days(merged, tmp_path):
    homes, _ = merged
    page = write_report(homes[0].home.db_path, tmp_path / "one").read_text()
    (row,) = re.findall(r"<tr><td>P001</td>(.*?)</tr>", page)
    cells = re.findall(r"<td>([^<]*)</td>", row)
    days, held, interrupted, missed = map(int, cells[:4])
    assert days == held + interrupted + missed == 5
    completed = (
        homes[0]
        .db.execute("SELECT COUNT(DISTINCT local_date) FROM sessions WHERE status = 'completed'")
        .fetchone()[0]
    )
    assert held == completed


def test_mean_ci_known_values():
    ci = mean_ci([1.0, 2.0, 3.0])
    assert ci is not None and ci.n == 3 and ci.mean == 2.0
    assert ci.high - ci.mean == pytest.approx(4.303 / 3**0.5, abs=1e-3)
    assert mean_ci([]) is None
    big = mean_ci([float(i % 5) for i in range(200)])
    assert big is not None and big.mean == pytest.approx(2.0)
    assert big.high - big.mean == pytest.approx(1.972 * (2.0 / 199 * 200) ** 0.5 / 200**0.5, 1e-2)


def test_report_refuses_empty_database(tmp_path):
    from tests.study_data import make_home

    opened = make_home(tmp_path / "h", "P1", "Ada")
    with pytest.raises(ReportError, match="no sessions yet"):
        write_report(opened.home.db_path, tmp_path / "out")
