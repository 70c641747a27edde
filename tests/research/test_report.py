"""The HTML report: every participant, valid PNGs, nothing fetched over the network, plots
from the instruments of the protocol actually recorded, private files."""

from __future__ import annotations

import os
import re
import stat
import struct
import zlib
from datetime import date
from pathlib import Path

import pytest

from companion.research.merge import merge_exports
from companion.research.report import ReportError, load, mean_ci, write_report
from tests.helpers.run import run_cli
from tests.helpers.study import build_study, custom_protocol_text

PLOTS = ("adherence", "mood", "empathy", "condition", "durations", "understood")


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


@pytest.mark.slow  # a merged three-home study
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
    for name in PLOTS:
        width, height = png_ok((out / f"{name}.png").read_bytes())
        assert width > 200 and height > 100
        assert drawn_lines(out / f"{name}.png") > 0, name
    assert_private(out)
    assert "the protocols recorded in the data: empathic-stories-daily v1" in page
    for key in ("mood.valence", "mood.arousal", "story_empathy.felt_emotions",
                "felt_understood.felt_understood"):  # fmt: skip
        assert f"<code>{key}</code>" in page
    # self-contained: no external references of any kind
    outside_images = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page)
    assert not re.search(r"(?:https?:)?//[a-z0-9]|url\(", outside_images, re.IGNORECASE)
    for ref in re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', page):
        assert ref.startswith("data:image/png;base64,")
    assert "<script" not in page.lower() and "@import" not in page
    assert page.count("data:image/png;base64,") == 6
    assert re.search(r"matched: mean \d\.\d\d \(95 % CI", page)


def drawn_lines(path: Path) -> int:
    """Pixels of matplotlib's default line colours (participants' lines, bars, boxes):
    zero for an axes with no data, which draws only black text and frames."""
    from matplotlib.image import imread

    rgb = imread(path)[..., :3]
    red, green, blue = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    spread = rgb.max(axis=-1) - rgb.min(axis=-1)
    return int(((spread > 0.12) & ~((red > 0.9) & (green > 0.9) & (blue > 0.9))).sum())


def assert_private(folder: Path) -> None:
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    files = list(folder.rglob("*"))
    assert files
    for path in files:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), path


@pytest.fixture(scope="module")
def custom(tmp_path_factory):
    """Two devices that ran a custom protocol (every instrument id different, a 1-7 item)."""
    root = tmp_path_factory.mktemp("custom")
    homes, exports = build_study(root, homes=2, days=6, protocol_text=custom_protocol_text())
    study = root / "study.db"
    merge_exports(study, exports)
    return homes, study


@pytest.mark.parametrize(
    "where",
    ["home", pytest.param("merged", marks=pytest.mark.slow)],  # slow: a second report
)
def test_report_plots_a_custom_protocol(custom, tmp_path, where):
    homes, study = custom
    db = study if where == "merged" else homes[0].home.db_path
    out = tmp_path / "rep"
    args = ["--db", str(db)] if where == "merged" else ["--home", str(homes[0].home.path)]
    done = run_cli("report", *args, "--out", str(out))
    assert done.returncode == 0, done.stderr
    page = (out / "report.html").read_text()
    assert "the protocols recorded in the data: custom-study v1" in page
    for key in ("affect.pleasantness", "affect.energy", "resonance.shared_feelings",
                "rapport.understood_me"):  # fmt: skip
        assert f"<code>{key}</code>" in page, key
    assert "rapport.understood_me</code> (1–7)" in page
    for default_id in ("mood.", "story_empathy", "felt_understood"):
        assert default_id not in page
    for name in PLOTS:
        png_ok((out / f"{name}.png").read_bytes())
        assert drawn_lines(out / f"{name}.png") > 50, name
    assert re.search(r"(matched|random): mean \d\.\d\d \(95 % CI", page)
    roles = load(db).roles()
    data = load(db)
    for panels in (roles.mood, roles.empathy, roles.understood):
        assert panels and all(p.values(data.answers) for p in panels)
    assert [p.label for p in roles.mood] == ["affect.pleasantness", "affect.energy"]
    assert roles.understood[0].scale == (1, 7)
    assert_private(out)


def test_empty_axes_have_no_drawn_lines(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.6))
    ax.set(xlabel="study day", title="nothing")
    fig.savefig(tmp_path / "empty.png", dpi=96)
    plt.close(fig)
    assert drawn_lines(tmp_path / "empty.png") == 0


@pytest.mark.slow  # builds and plots a study
def test_report_without_recorded_protocol_uses_default_roles(tmp_path):
    homes, _ = build_study(tmp_path, homes=1, days=3, record=False)
    out = tmp_path / "rep"
    page = write_report(homes[0].home.db_path, out).read_text()
    assert "no protocol is recorded in this database" in page
    for key in ("mood.valence", "story_empathy.felt_emotions", "felt_understood.felt_understood"):
        assert f"<code>{key}</code>" in page
    for name in ("mood", "empathy", "understood"):
        assert drawn_lines(out / f"{name}.png") > 50, name


def test_report_for_one_home_counts_days(merged, tmp_path):
    homes, _ = merged
    page = write_report(homes[0].home.db_path, tmp_path / "one").read_text()
    (row,) = re.findall(r"<tr><td>P001</td>(.*?)</tr>", page)
    cells = re.findall(r"<td>([^<]*)</td>", row)
    table = dict(zip(re.findall(r"<th>([^<]*)</th>", page)[1:], cells, strict=True))
    days, held, interrupted, missed, none = (
        int(table[f"days {n}"]) for n in ("observed", "held", "interrupted", "missed", "no record")
    )
    sessions = homes[0].db.execute("SELECT COUNT(*) FROM sessions WHERE status = 'completed'")
    assert int(table["sessions completed"]) == sessions.fetchone()[0]
    dates = homes[0].db.execute("SELECT MIN(local_date), MAX(local_date) FROM sessions")
    first, last = map(date.fromisoformat, dates.fetchone())
    assert days == held + interrupted + missed + none == (last - first).days + 1
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
    from tests.helpers.study import make_home

    opened = make_home(tmp_path / "h", "P1", "Ada")
    with pytest.raises(ReportError, match="no sessions yet"):
        write_report(opened.home.db_path, tmp_path / "out")


# Makes `import matplotlib` fail as in a base install without the research extra.
NO_MATPLOTLIB = """
import sys


class _NoMatplotlib:
    def find_spec(self, name, path=None, target=None):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoMatplotlib())
"""


def test_report_without_matplotlib_says_which_extra(tmp_path):
    import subprocess
    import sys

    from tests.helpers.run import REPO, one_error_line
    from tests.helpers.study import fill_study, make_home

    opened = make_home(tmp_path / "h", "P1", "Ada")
    fill_study(opened, 1, seed=1)
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(NO_MATPLOTLIB)
    env = {k: v for k, v in os.environ.items() if k != "COMPANION_HOME"}
    env["PYTHONPATH"] = str(shim)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                              cwd=REPO, timeout=120)  # fmt: skip

    probe = run("-c", "import matplotlib")
    assert probe.returncode == 1 and "No module named 'matplotlib'" in probe.stderr
    out = tmp_path / "rep"
    done = run("-m", "companion", "report", "--home", str(opened.home.path), "--out", str(out))
    assert done.returncode == 2 and done.stdout == ""
    one_error_line(done, "companion: error: the report needs matplotlib",
                   ".venv/bin/python -m pip install -e '.[research]'")  # fmt: skip
    assert not out.exists()


def test_report_in_headless_chromium(custom, tmp_path):
    """Opened in a real browser (Debian's chromium, headless): every plot decodes and is
    drawn, and the page fetches nothing but itself (its images are inline)."""
    from tests.helpers.browser import Browser

    homes, _ = custom
    out = tmp_path / "rep"
    done = run_cli("report", "--home", str(homes[0].home.path), "--out", str(out))
    assert done.returncode == 0, done.stderr
    page = (out / "report.html").as_uri()
    browser = Browser()
    try:
        session = browser.open(page)
        shown = browser.send(
            "Runtime.evaluate", session, returnByValue=True,
            expression="Array.from(document.images).map(i => "
                       "[i.alt, i.complete, i.naturalWidth, i.naturalHeight, i.width])",
        )["result"]["value"]  # fmt: skip
        requested = browser.requested()
    finally:
        browser.close()
    assert len(shown) == len(PLOTS)
    for alt, complete, width, height, drawn in shown:
        assert complete and width > 200 and height > 100 and drawn > 0, alt
    assert requested and requested[0] == page
    assert all(url == page or url.startswith("data:image/png;base64,") for url in requested)
