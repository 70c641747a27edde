"""The review of a de-identified export, through the real CLI on homes filled by real sessions:
where it is written, what it lists, decisions applied on re-export, bad review files refused,
and the page as a researcher's browser draws it."""

from __future__ import annotations

import csv
import hashlib
import json
import random
from pathlib import Path

import pytest

from companion.research import review
from companion.research.export import read_manifest
from companion.research.gazetteer import load_gazetteer
from tests.helpers.run import one_error_line, run_cli
from tests.helpers.study import make_home, session_lines

REPLY = ("ask my wife Anna Brown, anna.brown@mail.com, 07700 900123, 12 Baker Street. "
         "I met Pennywhistle at Grantchester on Tuesday near Zorbleton, number 48213.")  # fmt: skip


def export(home: Path, out: Path, *extra: str):
    return run_cli("export", "--home", str(home), "--out", str(out), "--deidentify",
                   "--include-transcripts", *extra)  # fmt: skip


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def write_rows(path: Path, rows: list[dict[str, str]], columns: list[str] | None = None) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, columns or list(rows[0]), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def every_byte(folder: Path) -> str:
    return "\n".join(p.read_text() for p in folder.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    """A real session over a pipe whose first reply is full of details, exported once."""
    root = tmp_path_factory.mktemp("review")
    opened = make_home(root / "home", "P-RAW-7", "Quentin Leaky")
    script = "".join(f"{x}\n" for x in [REPLY, *session_lines(random.Random(8))])
    done = run_cli("session", "--text", input=script, home=opened.home.path)
    assert done.returncode == 0, done.stderr
    done = export(opened.home.path, root / "out")
    assert done.returncode == 0, done.stderr
    return opened.home.path, root


def test_review_is_written_beside_the_export_not_in_it(reviewed):
    home, root = reviewed
    out, folder = root / "out", root / "out.review"
    assert sorted(p.name for p in folder.iterdir()) == [review.CSV_NAME, review.HTML_NAME]
    assert (folder.stat().st_mode & 0o777) == 0o700
    shared = every_byte(out)
    for secret in ["Anna Brown", "900123", "Pennywhistle", "Quentin", "review.csv"]:
        assert secret not in shared, secret
    rows = read_rows(folder / review.CSV_NAME)
    assert list(rows[0]) == list(review.COLUMNS)
    redactions = [r for r in rows if r["kind"] == "redaction"]
    flags = [r for r in rows if r["kind"] == "flag"]
    by_original = {r["original"]: r for r in redactions}
    assert by_original["Anna Brown"]["replacement"] == "[PERSON]"
    assert by_original["07700 900123"]["entity"] == "PHONE"
    assert all(r["recognizers"] for r in redactions)  # every span names its rule
    risks = [int(r["risk"]) for r in flags]
    assert risks and risks == sorted(risks, reverse=True)
    assert {r["decision"] for r in rows} == {""}
    # the context around each item is the text it came from, the item in between
    turn = next(r for r in redactions if r["original"] == "Anna Brown" and r["table"] == "turns")
    assert turn["before"] == "ask my wife " and turn["after"].startswith(", [EMAIL], [PHONE]")
    assert "<title>Review of export out</title>" in (folder / review.HTML_NAME).read_text()
    manifest = read_manifest(out)
    assert manifest["review"] == {"redactions": len(redactions), "flags": len(flags)}
    book = json.loads((out / "codebook.json").read_text())
    assert book["review"]["redactions"] == len(redactions)
    assert "## Review of the redactions" in (out / "codebook.md").read_text()


def test_flags_and_their_risk():
    text = "We went to Zorbleton. Tuesday I rang 48213 and four seven two nine; grubbins said 7."
    found = {text[s:e]: risk for s, e, risk, _ in review.flags(text, [], lambda w: False)}
    assert found["Zorbleton"] == 5  # capitalised, no ordinary word
    assert found["48213"] == 6 and found["7"] == 1
    assert found["four"] == found["nine"] == 4  # a number said aloud
    assert found["grubbins"] == 2
    assert "Tuesday" not in found and "We" not in found and "I" not in found
    beside = review.flags("met Anna Zorbleton", [(4, 8)], lambda w: False)
    assert [risk for *_, risk, _ in beside] == [5 + 2]
    assert review.flags("4", [], lambda w: False) == []  # a scale answer
    assert review.flags("two, I'd say", [], lambda w: False) == []  # said as a word
    assert review.flags("about two or three times", [], lambda w: False) == []  # a count
    (weekday,) = review.flags("The nurse came on Thursday.", [], lambda w: False)
    assert weekday[2:] == (3, "DATE")


def test_apply_review_keeps_and_redacts_deterministically(reviewed, tmp_path):
    home, root = reviewed
    rows = read_rows(root / "out.review" / review.CSV_NAME)
    keep = next(r for r in rows if r["kind"] == "redaction" and r["original"] == "Anna Brown")
    flag = next(r for r in rows if r["kind"] == "flag" and r["table"] == "turns")
    keep["decision"], flag["decision"], flag["entity"] = "keep", "redact", "PLACE"
    decided = write_rows(tmp_path / "decided.csv", rows)
    kept = sum(r["decision"] == "keep" for r in rows)
    redacted = sum(r["decision"] == "redact" for r in rows)
    assert kept and redacted
    for name in ("a", "b"):
        done = export(home, tmp_path / name, "--apply-review", str(decided))
        assert done.returncode == 0, done.stderr
    manifest = read_manifest(tmp_path / "a")
    applied = manifest["review"]["applied"]
    assert applied == {"sha256": hashlib.sha256(decided.read_bytes()).hexdigest(),
                       "kept": kept, "redacted": redacted, "unchanged": 0, "unmatched": 0}
    assert manifest["recognizers"]["review"] == redacted
    texts = {r["id"]: r["text"] for r in read_rows(tmp_path / "a" / "turns.csv")}
    assert "ask my wife Anna Brown, [" in texts[keep["row"]]
    before = {r["id"]: r["text"] for r in read_rows(root / "out" / "turns.csv")}[flag["row"]]
    assert texts[flag["row"]].count("[PLACE]") == before.count("[PLACE]") + 1
    for table in ("turns.csv", "self_reports.csv", "events.csv"):
        assert (tmp_path / "a" / table).read_bytes() == (tmp_path / "b" / table).read_bytes()
    # the new review carries the decisions, so a second round starts where the first ended
    again = read_rows(tmp_path / "a.review" / review.CSV_NAME)
    assert {r["id"]: r["decision"] for r in again if r["decision"]} == {
        r["id"]: r["decision"] for r in rows if r["decision"]
    }


def bad_review(rows: list[dict[str, str]], case: str) -> tuple[list[dict[str, str]], list[str]]:
    rows = [dict(r) for r in rows]
    columns = list(rows[0])
    if case == "missing column":
        columns.remove("decision")
    elif case == "unknown word":
        rows[1]["decision"] = "delete"
    elif case == "unmatched id":
        rows[2]["id"] = "turns:999999:text:0-4:000000000000"
        rows[2]["decision"] = "keep"
    elif case == "bad entity":
        flag = next(r for r in rows if r["kind"] == "flag")
        flag["decision"], flag["entity"] = "redact", "NAME"
    return rows, columns


@pytest.mark.parametrize("case, needles", [
    ("missing column", ["no column 'decision'"]),
    ("unknown word", ["row 3: field decision is 'delete'", "keep, redact"]),
    ("unmatched id", ["row 4: field id 'turns:999999", "matches nothing", "clear"]),
    ("bad entity", ["field entity is 'NAME'", "PERSON"]),
])  # fmt: skip
def test_bad_review_files_are_refused_and_nothing_is_written(reviewed, tmp_path, case, needles):
    home, root = reviewed
    rows, columns = bad_review(read_rows(root / "out.review" / review.CSV_NAME), case)
    bad = write_rows(tmp_path / "bad.csv", rows, columns)
    before = sorted(p.name for p in tmp_path.iterdir())
    done = export(home, tmp_path / "new", "--apply-review", str(bad))
    assert done.returncode == 2
    one_error_line(done, str(bad), *needles)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no export, no review, no temp


def test_review_folder_inside_the_export_is_refused(reviewed, tmp_path):
    home, _ = reviewed
    out = tmp_path / "out"
    for inside in (out / "review", out):
        done = export(home, out, "--review", str(inside))
        assert done.returncode == 2
        one_error_line(done, "--review:", "inside the export folder", "out.review")
    done = export(home, tmp_path / "around" / "out", "--review", str(tmp_path / "around"))
    assert done.returncode == 2
    one_error_line(done, "--review:", "holds the export folder")
    done = run_cli("export", "--home", str(home), "--out", str(out), "--review", str(tmp_path))
    assert done.returncode == 2
    one_error_line(done, "--review: a review comes only with --deidentify")
    assert not out.exists()
    chosen = tmp_path / "elsewhere" / "mine"
    done = export(home, out, "--review", str(chosen))
    assert done.returncode == 0, done.stderr
    assert (chosen / review.HTML_NAME).is_file() and not (tmp_path / "out.review").exists()
    done = export(home, tmp_path / "second", "--review", str(chosen))
    assert done.returncode == 2
    one_error_line(done, "--review:", "not an empty folder")


def test_review_page_in_headless_chromium(reviewed, tmp_path):
    """The page drawn by a real browser: flags highest risk first, redactions marked with the
    recognizers that made them, and nothing fetched but the page itself."""
    from tests.helpers.browser import Browser

    _, root = reviewed
    page = (root / "out.review" / review.HTML_NAME).as_uri()
    rows = read_rows(root / "out.review" / review.CSV_NAME)
    browser = Browser()
    try:
        session = browser.open(page)
        shown = browser.send("Runtime.evaluate", session, returnByValue=True, expression="""({
            ready: document.body.dataset.ready,
            risks: [...document.querySelectorAll('#flags tbody tr')].map(r => +r.dataset.risk),
            flagged: [...document.querySelectorAll('#flags mark.flag')].map(m => m.textContent),
            marks: [...document.querySelectorAll('#redactions mark.redaction')].map(
                m => [m.textContent, m.dataset.recognizers, m.title]),
            count: document.getElementById('count').textContent})""")["result"]["value"]
        # a researcher picks `redact` for the first flag and saves the CSV the page makes
        saved = browser.send("Runtime.evaluate", session, returnByValue=True, expression="""(() => {
            const pick = document.querySelector('#flags tbody tr select');
            pick.value = 'redact';
            pick.dispatchEvent(new Event('change'));
            return [csvText(), document.getElementById('count').textContent]; })()""")
        text, count = saved["result"]["value"]
        requested = browser.requested()
    finally:
        browser.close()
    flags = [r for r in rows if r["kind"] == "flag"]
    assert shown["ready"] == "yes"
    assert shown["risks"] == sorted(shown["risks"], reverse=True) == [int(r["risk"]) for r in flags]
    assert shown["flagged"] == [r["original"] for r in flags]
    marks = {text: (rules, title) for text, rules, title in shown["marks"]}
    assert len(shown["marks"]) == len(rows) - len(flags)
    rules, title = marks["anna.brown@mail.com"]
    assert "email" in rules.split(", ") and title == f"redacted by {rules}"
    assert shown["count"].startswith(f"{len(flags)} flagged, {len(rows) - len(flags)} redactions")
    assert requested == [page]
    assert count.endswith(", 1 decided")
    (tmp_path / "saved.csv").write_text(text, newline="")
    decisions = review.read_decisions(tmp_path / "saved.csv")
    assert text.splitlines()[0] == ",".join(review.COLUMNS)
    assert len(decisions.by_id) == len(rows)
    assert {i for i, d in decisions.by_id.items() if d.word} == {flags[0]["id"]}
    assert decisions.by_id[flags[0]["id"]].word == "redact"
    saved_rows = read_rows(tmp_path / "saved.csv")
    assert [r["original"] for r in saved_rows] == [r["original"] for r in rows]


@pytest.mark.slow  # about 15 s: a month of sessions, each story a long planted paragraph
def test_a_month_reviews_in_one_page(tmp_path):
    """One participant's month, story turns made long as in bench_pii's `month()`: one page
    holds every row, draws it in a real browser, and the export stays within its time."""
    import time

    from tests.helpers.browser import Browser
    from tests.helpers.study import long_story_month

    opened, long_turns = long_story_month(tmp_path / "home", 30)
    t0 = time.perf_counter()
    done = export(opened.home.path, tmp_path / "out")
    elapsed = time.perf_counter() - t0
    assert done.returncode == 0, done.stderr
    assert elapsed < 60
    folder = tmp_path / "out.review"
    rows = read_rows(folder / review.CSV_NAME)
    manifest = read_manifest(tmp_path / "out")
    assert len(rows) == sum(manifest["review"].values()) > long_turns
    assert (folder / review.HTML_NAME).stat().st_size < 4 * 1024 * 1024
    browser = Browser()
    try:
        session = browser.open((folder / review.HTML_NAME).as_uri())
        drawn = browser.send("Runtime.evaluate", session, returnByValue=True,
                             expression="document.querySelectorAll('tbody tr').length")  # fmt: skip
    finally:
        browser.close()
    assert drawn["result"]["value"] == len(rows)


def test_an_ordinary_word_beside_a_persons_redaction_is_flagged_low():
    # "Fern" is an English word, so only its place beside the redacted surname flags it
    text = "then my aunt fern [PERSON] rang and i told her about it"
    person = (text.index("["), text.index("]") + 1)
    common = load_gazetteer().is_ordinary
    found = {text[s:e]: risk for s, e, risk, _ in review.flags(text, [person], common, [person])}
    assert found == {"fern": 2}  # lowest: a verb stands there as often ("told")
    assert review.flags("i told fern", [], common, []) == []  # only beside a person
    text = "and will [PERSON] came round"
    person = (text.index("["), text.index("]") + 1)
    assert [text[s:e] for s, e, *_ in review.flags(text, [person], common, [person])] == ["will"]
