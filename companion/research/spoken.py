"""Personal details as a recogniser writes them: spoken e-mail addresses and streets, dates
and ages said in words (numbers read out are in `numbers`)."""

from __future__ import annotations

import re

from companion.research.numbers import DIGIT, TEEN, TENS, UNIT, alt

_NUMBER = rf"(?:{TENS}(?:[\s-]{UNIT})?|{TEEN}|{UNIT}|hundred)"
_ORDINAL = rf"(?:{alt('ordinals')}|(?:twenty|thirty)[\s-]{alt('ordinal_units')})"
_TENTHS = alt("tens_ordinals")  # "fortieth": not the tens with "ieth"
_NTH = rf"(?:{_ORDINAL}|\d{{1,2}}(?:st|nd|rd|th))"
_MONTH = alt("months", "month_abbreviations_said")  # "the ninth of feb"
# "nineteen eighty two", "two thousand and five", "twenty twenty three"
_YEAR = (rf"(?:(?:nineteen|twenty)[\s-](?:{TENS}(?:[\s-]{UNIT})?|{TEEN}|hundred|oh[\s-]{UNIT})"
         rf"|two thousand(?:\s+and)?(?:\s+{_NUMBER})?)")  # fmt: skip

_WORD = r"[a-z0-9][a-z0-9_-]*"
# A local part said as up to five words before "at", not those that introduce it ("it's").
_LOCAL = rf"(?!{alt('email_intro')}\b){_WORD}"
SPOKEN_EMAIL = re.compile(
    rf"(?<![\w']){_LOCAL}(?:\s+(?:dot|underscore|dash|hyphen|plus)\s+{_WORD}|\s+{_LOCAL}){{0,4}}"
    rf"\s+(?:at|@)\s+(?:{_WORD}(?:\s+(?:(?:dash|hyphen)\s+)?{_WORD}){{0,4}}"
    rf"(?:\s+dot\s+(?!dot\b)(?:[a-z](?:\s+[a-z]){{1,3}}\b|{_WORD}))+"
    rf"|{alt('email_providers')}\b(?:\s+(?:com|co uk|net|org)\b)?)", re.I)
_TWO_DIGITS = rf"(?:{TENS}[\s-]{UNIT}|oh[\s-]{UNIT})(?!\s+(?:people|of|years|pounds|quid)\b)"
SPOKEN_DATES = [re.compile(p, re.IGNORECASE) for p in (
    rf"\b(?:the\s+)?{_ORDINAL}\s+(?:of\s+)?{_MONTH}(?:,?\s+(?:{_YEAR}|{_TWO_DIGITS}))?\b",
    rf"\b{_MONTH}\s+(?:the\s+)?{_ORDINAL}(?:,?\s+{_YEAR})?\b",  # "june the second"
    rf"\b(?:(?:in|of|since)\s+)?{_MONTH}\s+{_YEAR}\b",
    rf"\b{alt('year_cues')}\s+{_YEAR}\b",
)]  # fmt: skip
# What a number counts when no age ("turned three pages"); after "I was" a time or size too.
_MEASURES = rf"(?:{alt('age_counted')}|corners?)"
NOT_AN_AGE = rf"(?!\s+{alt('age_counted', 'age_units')}\b)"
AGE = re.compile(
    rf"\b(?:(?:\d{{1,3}}|{_NUMBER})(?:[\s-]+(?:years?|yrs?)[\s-]+(?:old|young|of age)"
    r"|[\s-]+(?:days?|weeks?|months?)[\s-]+old|[\s-](?:year|month|week)[\s-]old)"
    rf"|(?:aged|age|at the age of)\s+(?:\d{{1,3}}|{_NUMBER}(?:[\s-]{UNIT})?)"
    rf"|(?:turned|turns|turning|makes me)\s+(?:\d{{1,3}}|{_NUMBER})(?!\s+{_MEASURES}\b)"
    rf"|(?:\d{{1,3}}(?:st|nd|rd|th)|{_ORDINAL}|{_TENTHS})\s+birthday)\b", re.I)
AGE_NUMBER = (rf"(?:{alt('age_hedges')}\s+)?(?:{TENS}(?:[\s-]{UNIT})?|{TEEN}|(?!one){UNIT}|[1-9]\d?"
              rf"|a hundred(?:\s+and\s+{UNIT})?)")  # fmt: skip ("I'm one" is rarely an age)
# "I was sixty three when...", "I'll be eighty next spring": an age said without "years old".
SAID_AGE = re.compile(
    rf"\b(?:(?:i|he|she|they|we|you)\s*{alt('age_verbs')}|{alt('age_said_subjects')})\s+"
    rf"({AGE_NUMBER})\b{NOT_AN_AGE}", re.I)
# "Cliff Dunmore, seventy-four, who referees": an age set off by commas after a name.
APPOSED_AGE = re.compile(
    rf"\b[A-Z][\w'-]+\s*(?:,|\s[—–-])\s+((?i:{AGE_NUMBER})|1[01]\d),(?=\s)"
)  # "Mabel — eighty-one, a widow"

# "forty one rowan close": a street said, its words no function words ("five miles up").
_STREET = alt("street_kinds", "street_kinds_said_only")
_NAME_WORD = rf"(?!{alt('street_function_words')}\b)[a-z][\w'-]*"
SPOKEN_ADDRESS = re.compile(
    rf"\b(?:(?:flat|apartment)\s+(?:{_NUMBER}|\d{{1,3}}|[a-z]),?\s+)?(?:number\s+)?"
    rf"(?:{_NUMBER}(?:[\s-]{UNIT})?|\d{{1,4}})(?:\s+[a-h](?=\s))?\s+"
    rf"(?:{_NAME_WORD}\s+|the\s+){{1,3}}{_STREET}\b", re.I)
_LIVED_ON = re.compile(rf"\b{alt('lived_verbs')}\s+(?:on|in|at|off|to)\s+"
                       rf"((?:{_NAME_WORD}\s+){{1,3}}{_STREET})\b", re.IGNORECASE)  # fmt: skip
# "the house on marigold lane": a named street after a preposition (not "down the lane").
_ON_STREET = re.compile(rf"\b{alt('street_cues')}\s+((?:{_NAME_WORD}\s+){{1,2}}"
                        rf"{alt('streets_named')})\b", re.IGNORECASE)  # fmt: skip
# "is ninety one now", "lived to 101", "for my 80th": ages marked as ages, not counts.
AGE_MARKED = re.compile(
    rf"\b(?i:(?:is|was|'s|will be|'ll be|turns|turning)\s+({AGE_NUMBER})\s+(?:"
    rf"{alt('age_marked_when')}|on (?:\w+day|the \w+)|in \w+|on {_MONTH}"
    rf"|on (?:new year'?s|christmas|boxing|valentine'?s|easter|saint|st\.?) ?\w*"
    rf"|come {_MONTH}|on \d+)\b"
    rf"|would have been\s+({AGE_NUMBER})\b(?!\s+{_MEASURES}\b)"
    rf"|(?:lived|live|living|made it|make it)\s+to\s+(?:be\s+|the\s+(?:grand\s+)?(?:old\s+)?"
    rf"age\s+of\s+)?((?:{AGE_NUMBER}|1[01]\d))\b{NOT_AN_AGE}"
    rf"|(?:my|his|her|their|your|our|[a-z]+'s)\s+(\d{{2,3}}(?:st|nd|rd|th)|{_TENTHS}|hundredth|"
    rf"{TENS}[\s-]{alt('ordinal_units')}|{TEEN}th)"
    rf"|\bat\s+({TENS}(?:[\s-]{UNIT})?|(?:thir|four|fif|six|seven|eigh|nine)teen)"
    rf"(?!\s+(?:past|to|minutes|hundred|{alt('age_counted', 'age_units')})\b)"
    rf"|{alt('age_people')} of\s+({AGE_NUMBER}))\b"
)
# "the winter of sixty three", "christmas day nineteen ninety", "the third of the fifth".
_SHORT = rf"(?:'?\d{{2}}|\d{{4}}|{_YEAR}|{TENS}(?:[\s-]{UNIT})?)"
MORE_DATES = re.compile(
    rf"\b(?i:the\s+{alt('seasons')}\s+of\s+{_SHORT}"
    rf"|{alt('feasts_dated')}(?:\s+(?:day|eve|night))?\s+{_YEAR}"
    rf"|(?:spring|summer|autumn|winter)\s+(?:of\s+)?(?:{_YEAR}|\d{{4}})"
    rf"|the\s+{_NTH}\s+of\s+the\s+{_NTH}(?:\s+{_SHORT}(?![\w-]))?"
    # "gave her the twenty sixth off": a day of the month past the twentieth, said alone
    rf"|the\s+(?:twentieth|thirtieth|(?:twenty|thirty)[\s-]{alt('ordinal_units')})"
    rf"(?!\s+{alt('not_after_day')}\b)"
    rf"|(?<=on\s)the\s+{_NTH}(?=\s+{alt('after_day')}\b|\s*$))\b"
    rf"(?!\s+(?i:floor|time|row|house|door))"
)
# "Easter Monday", "st patrick's day": a day named by its feast ("at christmas" alone is not).
NAMED_DAY = re.compile(rf"\b(?:{alt('named_days')}|(?:st\.?|saint)\s+\w+'?s\s+day)\b", re.I)
ON_DAY = re.compile(  # "on 17.05"
    rf"\b(?i:{alt('day_cues')}|birthday(?:'s|\s+is|\s+was))\s+"
    r"((?:0?[1-9]|[12]\d|3[01])[./](?:0?[1-9]|1[0-2])|(?:0?[1-9]|1[0-2])[./](?:[12]\d|3[01]))"
    r"\b(?![./,]\d)"
)
# "saturday the fifth", "on Friday the 11th": a weekday with its date pins a day.
_WEEKDAY = rf"{alt('weekdays', 'weekday_abbreviations')}\.?"  # "Tues 4th"
WEEKDAY_DATE = re.compile(
    rf"\b{_WEEKDAY},?\s+(?:the\s+)?(?:{_NTH}|(?:[12]\d|3[01]|0?[1-9])(?=\s+{_MONTH}))"
    r"\b(?!\s+(?:time|floor|row)\b)"
    rf"|\b{_MONTH}\.?\s+['’]\d\d\b", re.I)  # "March '98"
# "her birthday is the twenty second", "born on christmas eve": a birthday's day.
BIRTHDAY = re.compile(rf"\b(?:(?:birthday|anniversary|due date)(?:'s|\s+is|\s+was)|born\s+on)\s+"
                      rf"(the\s+{_NTH}|{alt('birthday_feasts')}(?:\s+(?:day|eve))?)\b", re.I)
# "due in april", "since last august": a month after a word that makes it a time ("may i").
MONTH_ALONE = re.compile(
    rf"\b{alt('month_cues')}\s+(?:(?:early|late|mid)[\s-]+)?({_MONTH})\b(?!')"
    r"(?!(?<=may)\s+(?:i|we|you|he|she|they|it|be|have|not)\b)", re.I)  # "may i", not "in march we"
# "the reference is x q seven nine two": three or more letters and numbers, or one token of both.
_CODE_TOKEN = rf"(?:[a-z]|[a-z]*\d[a-z\d]*|{DIGIT}|{TEEN}|{TENS}|dash|slash)"
CODE = re.compile(
    rf"\b{alt('code_cues')}(?:\s+(?:number|no|code|mark))?(?:\s+(?:is|was|'s)|,)\s+"
    rf"((?=(?:{_CODE_TOKEN}\s+){{0,4}}(?:[a-z]*\d[a-z\d]*|{DIGIT}|{TEEN}|{TENS})\b)"
    rf"{_CODE_TOKEN}(?:\s+{_CODE_TOKEN}){{2,}}(?:\s+[a-d](?=\s*(?:[,.;!?]|$)))?"
    r"|(?=[a-z\d]*\d)(?=[a-z\d]*[a-z])[a-z\d]{5,})\b", re.I)
# "who's eighty-one and keeps bees": someone is a bare number and the sentence goes on.
_AGE_END = rf"(?=\s*(?:[,.;:!?]|$)|\s+{alt('age_end')}\b)"
# "she is nine and wants to be a vet" (never "it is nine and we were late").
AGE_AND = re.compile(
    r"\b(?<!\bit )(?<!\bthat )(?<!\bthis )(?<!\bthere )(?<!\bwhich )(?<!\btime )(?<!\bscore )"
    rf"(?:is|was|'s)\s+((?i:{AGE_NUMBER}))\s+and\s+{alt('age_and_next')}\b", re.I)
WHO_AGE = re.compile(
    rf"\b(?i:who(?:'s|\s+is|\s+was|'ll\s+be|\s+will\s+be|\s+turned|\s+turns))\s+"
    rf"((?i:{AGE_NUMBER}|1[01]\d))\b{NOT_AN_AGE}{_AGE_END}"
)
NAME_IS_AGE = re.compile(
    rf"\b([a-z][\w'-]+),?\s+(?:is|was|are|turns|turned|'s)\s+((?i:{AGE_NUMBER}|1[01]\d))\b"
    rf"{NOT_AN_AGE}{_AGE_END}", re.I)

PATTERNS: list[tuple[str, str, re.Pattern[str]]] = [
    ("spoken_address", "ADDRESS", SPOKEN_ADDRESS),
    *((f"spoken_date_{i}", "DATE", p) for i, p in enumerate(SPOKEN_DATES)),
    ("spoken_age", "AGE", AGE), ("more_dates", "DATE", MORE_DATES),
    ("weekday_date", "DATE", WEEKDAY_DATE), ("named_day", "DATE", NAMED_DAY),
]  # fmt: skip
GROUPED: list[tuple[str, str, re.Pattern[str]]] = [  # the group is the span
    # every start tried (a lookahead): "reach k at k dot lee at gmail dot com" has two
    ("spoken_email", "EMAIL", re.compile(rf"(?=({SPOKEN_EMAIL.pattern}))", re.IGNORECASE)),
    ("said_age", "AGE", SAID_AGE), ("lived_on", "ADDRESS", _LIVED_ON),
    ("on_street", "ADDRESS", _ON_STREET), ("on_day", "DATE", ON_DAY),
    ("month_alone", "DATE", MONTH_ALONE), ("birthday_date", "DATE", BIRTHDAY),
    ("spoken_code", "ID", CODE), ("who_age", "AGE", WHO_AGE),
    ("apposed_age", "AGE", APPOSED_AGE), ("age_and", "AGE", AGE_AND),
]  # fmt: skip
