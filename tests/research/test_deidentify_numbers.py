"""De-identification of numbers, typed or said: account, card, sort code, IBAN and IP numbers
read out in any grouping (digit words, "double", "oh", teens and tens, letters said as
letters, "dash", "dot", "point"), phone extensions, dates of birth said or typed as numbers,
references with letters, URLs and domains typed or spelled out, and a weekday that pins a
day. The real Redactor with the real spaCy pipeline; sentences written for this test (none
from the benchmark's sets), and ordinary numbers (money, times, counts) that must stay."""

from __future__ import annotations

import pytest

from companion.research.deidentify import Redactor, redactor_for
from companion.research.ner import load_pipeline


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return redactor_for(["Morwenna"], load_pipeline())


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ("my account is [six one double oh four two nine eight]", "[ID]"),
        # said in any grouping
        ("the sort code is [thirty nine twelve oh six]", "[ID]"),
        (
            "card [four four one seven two two oh nine one three one three eight eight oh five]",
            "[ID]",
        ),
        (
            "or [forty four seventeen twenty two ninety one thirty one thirty eight eighty]",
            "[ID]",
        ),
        (
            "my iban is i e [two nine a i b k nine three one one five] two one two three four five",
            "[ID]",
        ),
        ("the hub sits on [ten dot one dot one dot two fifty four]", "[ID]"),
        ("or [one seven two point sixteen point oh point nine]", "[ID]"),
        ("the file was [b r slash two oh one nine slash seven seven]", "[ID]"),
        ("the order number is [w x three three nine one oh]", "[ID]"),
        ("ring [oh one four one triple four oh nine one two]", "[PHONE]"),
        ("the ward is on [0113 496 0555 ext. 3310]", "[PHONE]"),
        # extensions
        ("ask the switchboard for [extension six oh two]", "[PHONE]"),
        ("my date of birth is [two nine oh five nineteen fifty one]", "[DATE]"),
        # dates of birth as numbers
        ("she put [eighteen ten forty four] on the form", "[DATE]"),
        ("I was born on [1951-05-29] at home.", "[DATE]"),
        ("The form says [29.5.51] in the box.", "[DATE]"),
        ("The transfer went to [ES91 2100 0418 4502 0005 1332] on Friday.", "[ID]"),
        # typed ids
        ("The router's address is [192.168.0.14] on the sticker.", "[ID]"),
        ("Quote [ORD-2025-40017] when you ring them.", "[ID]"),
        ("The policy number is [KL8832907] on the renewal.", "[ID]"),
        ("The timetable is on [https://www.ferrytimes.co.uk/north] today.", "[ADDRESS]"),
        # URLs and domains
        ("Their shop is [morrisquilts.com] and it ships abroad.", "[ADDRESS]"),
        ("she said go to [w w w dot tenby lifeboat dot org dot uk]", "[ADDRESS]"),
        ("it is h t t p s colon slash slash [bread club dot de slash rye]", "[ADDRESS]"),
        ("The boiler man came [last Wednesday] and left a mess.", "[DATE]"),
        # a weekday that pins a day
        ("we see the consultant [this thursday]", "[DATE]"),
    ],
)
def test_found(redactor: Redactor, text: str, tag: str) -> None:
    """The identifier (in brackets) is gone, and its tag is there."""
    gone = text[text.index("[") + 1 : text.index("]")]
    text = text.replace("[", "", 1).replace("]", "", 1)
    redacted = redactor.redact(text) or ""
    for word in gone.split():
        assert word not in redacted.split(), (text, redacted)
    assert tag in redacted, (text, redacted)


@pytest.mark.parametrize(
    "text",
    [
        "The coat was twenty nine pounds ninety nine in the sale.",
        "we waited forty five minutes and the bus was the number twelve",
        "i take two tablets at eight and one more at ten",
        "It cost £14.50 and took three weeks to come.",
        "the quiz had twenty questions and we got fourteen right",
        "Every Thursday we play cards in the chapel hall.",
        "I left at half past six and was back by nine.",
        "two hundred and forty people came to the show",
    ],
)
def test_ordinary_numbers_kept(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text) == text
