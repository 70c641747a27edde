"""De-identification of addresses and organisations: a street with its house number and its
flat, suite or unit on either side, streets named by a foreign kind before or inside the word,
the corner of two streets, the postcodes of many countries (bare digits only beside a city,
state or house number), and organisations by a company suffix, a cue ("worked for",
"employed by"), a shop's "X's", or their kind. The real spaCy pipeline and pinned
gazetteers, through the real Redactor; sentences written for this test (none from the
benchmark's sets), and ordinary sentences that must come through unchanged."""

from __future__ import annotations

import pytest

from companion.research.deidentify import Redactor, redactor_for
from companion.research.ner import load_pipeline


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return redactor_for(["Oonagh"], load_pipeline())


@pytest.mark.parametrize(
    ("text", "gone", "tag"),
    [
        # a street with its number and unit, typed or spoken
        ("They rented Flat 2, 19 Quarry Lane, for a year.", "Flat 2 19 Quarry Lane", "[ADDRESS]"),
        (
            "We were in Apt 7C, 310 East 82nd Street then.",
            "Apt 7C 310 East 82nd Street",
            "[ADDRESS]",
        ),
        ("Post it to Suite 45, 8 Harbour Road, thanks.", "Suite 45 8 Harbour Road", "[ADDRESS]"),
        ("The depot was Unit 12 Castleford Trading Estate.", "Unit 12 Castleford", "[ADDRESS]"),
        ("we lived at flat six forty one birch road", "six forty one birch", "[ADDRESS]"),
        ("They live at 515 Bank Street North now.", "515 Bank Street North", "[ADDRESS]"),
        # a postcode alone is an address, though its letters and digits read as a number too
        ("Our postcode is LS6 2QT since the move.", "LS6 2QT", "[ADDRESS]"),
        # foreign streets: the kind first, inside the word, or after
        ("Grandma lived at Kastanienallee 31 in Berlin.", "Kastanienallee 31", "[ADDRESS]"),
        ("Our hotel was on rue des Martyrs, near the bakery.", "Martyrs", "[ADDRESS]"),
        ("The flat was Calle Toledo 62, 2º derecha.", "Toledo 62 2º derecha", "[ADDRESS]"),
        ("He wrote from ul. Mickiewicza 8, 60-833 Poznań.", "Mickiewicza 8 60-833", "[ADDRESS]"),
        ("We stayed at Via Roma 4, 50123 Firenze.", "Roma 4 50123", "[ADDRESS]"),
        (
            "my sister lives on prinsengracht two hundred and six",
            "prinsengracht two hundred",
            "[ADDRESS]",
        ),
        ("the office was on the corner of Spadina and Queen", "Spadina", "[ADDRESS]"),
        # postcodes by country
        ("Her address ends Chicago, IL 60614-2210.", "60614-2210", "[ADDRESS]|[ID]"),
        ("The parcel came from 3011 BD Rotterdam.", "3011 BD", "[ADDRESS]"),
        ("His eircode is T23 R2K7, near the quay.", "T23 R2K7", "[ADDRESS]|[ID]"),
        ("They moved to Winnipeg, MB R3C 4T3 in May.", "R3C 4T3", "[ADDRESS]"),
        ("the eircode is k three six r two x nine", "k three six r two x nine", "[ADDRESS]|[ID]"),
    ],
)
def test_found(redactor: Redactor, text: str, gone: str, tag: str) -> None:
    redacted = redactor.redact(text) or ""
    for word in gone.split():
        assert word not in redacted.split(), (text, redacted)
    assert any(t in redacted for t in tag.split("|")), (text, redacted)


# Organisations: the ORG span itself is checked (the merged redaction's tag is the widest
# span's of things with parts, below).
@pytest.mark.parametrize(
    ("text", "name"),
    [
        (
            "I did twenty years at Whitcombe Engineering Ltd before it folded.",
            "Whitcombe",
        ),
        ("Dad kept the accounts for Okafor & Sons in Peckham.", "Okafor & Sons"),
        ("i worked for dunmore haulage for ten years", "dunmore haulage"),
        ("she was employed by the tamworth rope company until the war", "tamworth rope company"),
        ("he set up kershaw fabrications limited in a shed", "kershaw fabrications limited"),
        ("We had lunch at Moretti's Kitchen on the Sunday.", "Moretti's Kitchen"),
        ("She was treasurer of the Ilkley Ladies Bowls Club.", "Ilkley Ladies Bowls Club"),
        ("we saved with the skipton building society", "skipton building society"),
        ("his pay comes from harlow gate logistics l l c in ohio", "harlow gate logistics l l c"),
        ("the club is insured by fenwick mutual d a c this year", "fenwick mutual d a c"),
    ],
)
def test_organisation_found(redactor: Redactor, text: str, name: str) -> None:
    start = text.index(name)
    spans = redactor.spans_many([text])[0]
    orgs = [s for s in spans if s.label == "ORG"]
    assert any(s.start <= start and start + len(name) <= s.end for s in orgs), (text, orgs)


def test_a_company_named_after_a_person_is_tagged_as_the_company(redactor: Redactor) -> None:
    redacted = redactor.redact("She kept the books at Harland Logistics Ltd for years.") or ""
    assert redacted == "She kept the books at [ORG] for years.", redacted


@pytest.mark.parametrize(
    "text",
    [
        "I went to the bank and then along the high street.",
        "the offer was only on for a limited time",
        "the school run takes twenty minutes each way",
        "We went via the ring road and still got lost.",
        "There were 25000 people at the match.",
        "the tyre went flat on the way home",
        "he worked for a big company making boxes",
        "i worked at the bank for two winters and hated it",
        "My mother's house was always full of people.",
        "The club meets in the church hall.",
    ],
)
def test_ordinary_text_kept(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text) == text


def test_a_street_is_one_address_with_its_number_and_flat(redactor: Redactor) -> None:
    redacted = redactor.redact("Send it to Flat 3, 44 Orchard Way, please.")
    assert redacted == "Send it to [ADDRESS], please."


def test_a_street_said_takes_the_town_after_it_and_only_a_town(redactor: Redactor) -> None:
    # a postcode read out between them, or none; a word the gazetteer knows as no town stays
    text = "send it to twelve mill lane one zero one one five hamburg and ring me"
    assert redactor.redact(text) == "send it to [ADDRESS] and ring me"
    said = redactor.redact("mail it to twelve mill lane boston thanks")
    assert said == "mail it to [ADDRESS] thanks"
    kept = redactor.redact("we lived at twelve mill lane and then moved away")
    assert kept == "we lived at [ADDRESS] and then moved away"


def test_a_house_name_before_a_street_takes_no_verb_or_preposition(redactor: Redactor) -> None:
    typed = redactor.redact("We moved to Alder Lodge, 6 Pike Lane, in May.")
    assert typed.startswith("We moved to [ADDRESS]"), typed
    said = redactor.redact("they lived at larch cottage nine pike lane for a year")
    assert said == "they lived at [ADDRESS] for a year"
