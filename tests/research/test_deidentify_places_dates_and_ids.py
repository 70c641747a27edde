"""De-identification of places, dates, ages and ids by their form: buildings and districts
named with their kind, a weekday with its date, a month said as a time, runs of number words,
ages said bare after a name or "who", number plates and sort codes, a second nickname, a pet or
a colleague named before their kind or job, a name before "our boy". The real spaCy pipeline
and pinned gazetteers; sentences written for this test (none from the benchmark's sets), and
ordinary sentences that must come through unchanged."""

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
        # a building or district named with its kind, typed or spoken
        ("We met at the Royal Victoria Infirmary car park.", "Royal Victoria Infirmary", "[PLACE]"),
        ("my cousin flies into aberdeen airport tonight", "aberdeen airport", "[PLACE]"),
        ("she swims every week at govanhill baths", "govanhill", "[PLACE]"),
        ("he had his knee done at county hospital last year", "county hospital", "[PLACE]"),
        ("The party is in the Lantern Suite upstairs.", "Lantern Suite", "[PLACE]"),
        ("We had lunch in the Cathedral Quarter.", "Cathedral", "[PLACE]"),
        ("they run a cafe in the east end", "east end", "[PLACE]"),
        ("she had her hip done at st bride's hospital", "st bride's", "[PLACE]"),
        ("we met at the royal infirmary years ago", "royal infirmary", "[PLACE]"),
        ("my niece goes to holy trinity academy", "holy trinity academy", "[PLACE]"),
        # an age by its decade, a day said as a cardinal before its month
        # a weekday with its date
        ("the funeral is on thursday the twenty third", "thursday twenty third", "[DATE]"),
        ("We fly out on Monday the 14th.", "Monday 14th", "[DATE]"),
        # a month said as a time: an element of a date about the person
        ("my grandson is due in october", "october", "[DATE]"),
        ("we have not spoken since last february", "february", "[DATE]"),
        ("she was born on the second of the tenth eighty one", "eighty one", "[DATE]"),
        ("his birthday is the third of sept", "sept", "[DATE]"),
        # a run of number words: an account, a code, a date the short way
        ("the sort code is thirty one forty two eighteen", "thirty one forty eighteen", "[ID]"),
        ("my badge number is four seven k two nine one", "four seven k two nine one", "[ID]"),
        # an age said bare after a name or "who"
        ("my neighbour ignatius is eighty one and still drives", "eighty one", "[AGE]"),
        ("Our vicar, who's sixty-eight, cycles everywhere.", "sixty-eight", "[AGE]"),
        ("Mr Okafor, is 102 and a half, they say.", "102", "[AGE]"),
        ("honey is my oldest friend and we met at school", "honey", "[PERSON]"),
        ("faith and her fiance came to stay", "faith", "[PERSON]"),
        # a relative's age said short, a birthday's day, a second street at a corner
        ("my grandad's eighty eight this year", "eighty eight", "[AGE]"),
        ("my wife's birthday is the nineteenth", "nineteenth", "[DATE]"),
        ("i was born on boxing day and got half the presents", "boxing day", "[DATE]"),
        ("i left home at seventeen and never went back", "seventeen", "[AGE]"),
        ("the claim reference is k t four one eight", "four one eight", "[ID]"),
        # a user name or handle, typed or said
        ("We moved here in June '04 and never left.", "'04", "[DATE]"),
        ("See you Weds 9th at the club.", "Weds 9th", "[DATE]"),
        # a number plate and a sort code
        ("The van's plate is KX19 RTB if you see it.", "KX19 RTB", "[ID]"),
        ("Pay it to sort code 20-45-77 please.", "20-45-77", "[ID]"),
        # the tens' ordinals ("fortieth", not "fortyieth"), a tenement flat, a birthday
        ("we went to his seventieth and danced all night", "seventieth", "[AGE]"),
        ("Her birthday is 23.04 so there is time.", "23.04", "[DATE]"),
        # a second name one is called by, a pet named after having it, a name before a job
        ("the lads at work call me bez or bramble", "bramble", "[PERSON]"),
        ("when i was small we had toffee the hamster", "toffee", "[PET]"),
        ("rose the porter wheeled him down to theatre", "rose", "[PERSON]"),
        # a name explained by who they are to the speaker
        ("we took hamish our old spaniel to the beach", "hamish", "[PET]|[PERSON]"),
    ],
)
def test_found(redactor: Redactor, text: str, gone: str, tag: str) -> None:
    redacted = redactor.redact(text) or ""
    for word in gone.split():
        assert word not in redacted.split() and word not in redacted, (text, redacted)
    assert any(t in redacted for t in tag.split("|")), (text, redacted)


@pytest.mark.parametrize(
    "text",
    [
        "we went to the local hospital and then the train station",
        "my son started school and left school far too soon",
        "the gas station by the park was shut",
        "she was at the primary school gates at three",
        "may i ask if we may go in the spring",
        "we counted one two or three and ran",
        "he is two doors down from us",
        "she's ten minutes away and he's twenty miles off",
        "the west end of the church was cold",
        "it is ten and a half inches long",
        "the first quarter of the year was slow",
        "we had the dog put down and the rabbit till spring",
        "we go to the christmas market in the square every year",
        "he went to police academy and then to art school",
        "i sat on the sun lounger and read a mystery about mp3 files",
        "on the one hand it may be right",
        "i miss my dog and love our cat",
        "we met at thirteen hundred hours and the bus number is forty two",
        "this is my sister and that is my son and me and her husband",
        "Yesterday, my son came round. Luckily, our neighbour helped.",
        "it cost 3.50 on the day and 2/3 of us came",
    ],
)
def test_ordinary_text_kept(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text) == text


def test_a_month_said_as_a_time_is_a_date_but_may_as_a_verb_stays(redactor: Redactor) -> None:
    redacted = redactor.redact("I hope we walk to the park in May if it may stop raining.")
    assert redacted == "I hope we walk to the park in [DATE] if it may stop raining."
