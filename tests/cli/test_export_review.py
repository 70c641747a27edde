"""`companion export`'s review options from the command line: documented in --help, and a
review file that cannot be read refused in one line before anything is written."""

from __future__ import annotations

import pytest

from tests.helpers.run import one_error_line, run_cli
from tests.helpers.study import make_home


def test_help_names_the_review_options():
    done = run_cli("export", "--help")
    assert done.returncode == 0, done.stderr
    for option in ("--review DIRECTORY", "--apply-review FILE", "OUT.review"):
        assert option in done.stdout, option


@pytest.mark.parametrize("given, needles", [
    ("missing.csv", ["missing.csv: cannot read review file", "check the path"]),
    ("folder", ["--apply-review", "is a directory"]),
    ("empty.csv", ["empty.csv: review file has no column 'id'"]),
])  # fmt: skip
def test_unreadable_review_file_is_one_line(tmp_path, given, needles):
    opened = make_home(tmp_path / "home", "P300", "Cora")
    (tmp_path / "folder").mkdir()
    (tmp_path / "empty.csv").write_text("")
    done = run_cli("export", "--home", str(opened.home.path), "--out", str(tmp_path / "out"),
                   "--deidentify", "--include-transcripts", "--apply-review",
                   str(tmp_path / given))  # fmt: skip
    assert done.returncode == 2
    one_error_line(done, *needles)
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.review").exists()
    assert not list(tmp_path.glob(".*partial"))
