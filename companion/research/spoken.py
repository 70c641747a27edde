"""Personal details as a recogniser writes them: digits read out, spoken e-mail
addresses, spelled-out dates and ages. Each pattern finds spans in the original
text; `deidentify` merges them with the written-form patterns and the NER spans.
"""

from __future__ import annotations

import re

from companion.research.words import alternation

_DIGIT = f"(?:{alternation('said_digits')})"
_TEEN = r"(?:ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen)"
_TENS = r"(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)"
_UNIT = r"(?:one|two|three|four|five|six|seven|eight|nine)"
_UNIT_2 = r"(?:two|three|four|five|six|seven|eight|nine)"  # "I'm one" is rarely an age
_NUMBER = rf"(?:{_TENS}(?:[\s-]{_UNIT})?|{_TEEN}|{_UNIT}|hundred)"
_ORDINAL = (
    r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
    r"thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|"
    r"thirtieth|(?:twenty|thirty)[\s-](?:first|second|third|fourth|fifth|sixth|seventh|"
    r"eighth|ninth))"
)
# "fortieth", "ninetieth": the tens' ordinals are not the tens with "ieth" ("fortyieth").
_TENTHS = r"(?:twentieth|thirtieth|fortieth|fiftieth|sixtieth|seventieth|eightieth|ninetieth)"
_ORD_DIGITS = r"(?:\d{1,2}(?:st|nd|rd|th))"
_MONTH = f"(?:{alternation('months', 'month_abbreviations_said')})"  # "the ninth of feb"
# "nineteen eighty two", "two thousand and five", "twenty twenty three"
_YEAR = (
    rf"(?:(?:nineteen|twenty)[\s-](?:{_TENS}(?:[\s-]{_UNIT})?|{_TEEN}|hundred|oh[\s-]{_UNIT})"
    rf"|two thousand(?:\s+and)?(?:\s+{_NUMBER})?)"
)

_WORD = r"[a-z0-9][a-z0-9_-]*"
# A local part said as several words ("z pennick forty at ..."): up to four words back
# from "at", not the words that introduce it ("my email is", "it's").
_INTRO = f"(?:{alternation('email_intro')})"
_LOCAL = rf"(?!{_INTRO}\b){_WORD}"
_JOIN = r"(?:dot|underscore|dash|hyphen|plus)"
_PROVIDERS = alternation("email_providers")
SPOKEN_EMAIL = re.compile(
    rf"(?<![\w']){_LOCAL}(?:\s+{_JOIN}\s+{_WORD}|\s+{_LOCAL}){{0,4}}\s+(?:at|@)\s+"
    rf"(?:{_WORD}(?:\s+(?:(?:dash|hyphen)\s+)?{_WORD}){{0,4}}"
    rf"(?:\s+dot\s+(?!dot\b)(?:[a-z](?:\s+[a-z]){{1,3}}\b|{_WORD}))+"
    rf"|(?:{_PROVIDERS})\b(?:\s+(?:com|co uk|net|org)\b)?)",
    re.IGNORECASE,
)
_TWO_DIGITS = rf"(?:{_TENS}[\s-]{_UNIT}|oh[\s-]{_UNIT})(?!\s+(?:people|of|years|pounds|quid)\b)"
SPOKEN_DATES = [
    re.compile(
        rf"\b(?:the\s+)?{_ORDINAL}\s+(?:of\s+)?{_MONTH}(?:,?\s+(?:{_YEAR}|{_TWO_DIGITS}))?\b",
        re.IGNORECASE,
    ),  # "the second of june sixty four"
    re.compile(rf"\b{_MONTH}\s+(?:the\s+)?{_ORDINAL}(?:,?\s+{_YEAR})?\b", re.IGNORECASE),
    re.compile(rf"\b(?:(?:in|of|since)\s+)?{_MONTH}\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(
        rf"\b(?:in|since|born|from|until|till|to|by|around|about|before|after|during|of)\s+"
        rf"{_YEAR}\b",
        re.IGNORECASE,
    ),
]
# What a number counts when it is no age: "turned three pages", "ten minutes late".
_COUNTED = (
    r"minutes?|hours?|days?|weeks?|months?|years?|times?|pounds?|quid|miles?|pence|percent|"
    r"degrees|pages?|o'clock|am|pm|p|people|of|or|more|less"
)
_MEASURES = rf"(?:{_COUNTED}|corners?)"  # after "turned", "makes me", "would have been"
_UNITS = (  # after "I was", "is": also what a time, place or size follows
    rf"{_COUNTED}|to|feet|metres?|kilos?|stone|points?|in the|at|on|out of|thirty|fifteen|"
    r"forty five|grand|doors?|streets?|houses?|stops?|floors?|steps?|blocks?|sizes?"
)
AGE = re.compile(
    rf"\b(?:(?:\d{{1,3}}|{_NUMBER})(?:[\s-]+(?:years?|yrs?)[\s-]+(?:old|young|of age)"
    r"|[\s-]+(?:days?|weeks?|months?)[\s-]+old|[\s-](?:year|month|week)[\s-]old)"
    rf"|(?:aged|age|at the age of)\s+(?:\d{{1,3}}|{_NUMBER}(?:[\s-]{_UNIT})?)"
    rf"|(?:turned|turns|turning|makes me)\s+(?:\d{{1,3}}|{_NUMBER})(?!\s+(?:{_MEASURES})\b)"
    rf"|(?:\d{{1,3}}(?:st|nd|rd|th)|{_ORDINAL}|{_TENTHS})\s+birthday)\b",
    re.IGNORECASE,
)
AGE_NUMBER = (
    r"(?:(?:nearly|almost|only|just|barely|about|over|coming up to|going on|getting on for|"
    r"pushing|well over|rising)\s+)?"
    rf"(?:{_TENS}(?:[\s-]{_UNIT})?|{_TEEN}|{_UNIT_2}|[1-9]\d?|a hundred(?:\s+and\s+{_UNIT})?)"
)
NOT_AN_AGE = rf"(?!\s+(?:{_UNITS})\b)"  # "I was ten minutes late"
# "I was sixty three when...", "I'll be eighty next spring": an age said without "years old";
# not before a unit ("I was ten minutes late").
SAID_AGE = re.compile(
    rf"\b(?:(?:i|he|she|they|we|you)\s*(?:was|am|'m|is|'s|'ll be|will be|turned|turn|turning|"
    rf"were|are|'re)|im|ill be|hes|shes|hell be|shell be)\s+({AGE_NUMBER})\b"
    rf"(?!\s+(?:{_UNITS})\b)",
    re.IGNORECASE,
)

# "Cliff Dunmore, seventy-four, who referees": an age set off by commas after a name.
APPOSED_AGE = re.compile(
    rf"\b[A-Z][\w'-]+\s*(?:,|\s[—–-])\s+((?i:{AGE_NUMBER})|1[01]\d),(?=\s)"
)  # "Mabel — eighty-one, a widow"

# "forty one rowan close", "on chestnut avenue": a street said, with or without its
# number; the words between are not function words ("five miles up the hill" stays).
_STREET = f"(?:{alternation('street_kinds', 'street_kinds_said_only')})"
_FUNCTION = (
    r"(?:the|a|an|my|our|his|her|their|your|this|that|of|and|or|to|in|on|at|up|down|by|for|"
    r"with|from|into|all|some|more|i|we|you|he|she|they|it|was|is|were|are|minutes?|miles?|"
    r"hours?|days?|weeks?|years?|times?|steps?|doors?|houses?|blocks?)"
)
_NAME_WORD = rf"(?!{_FUNCTION}\b)[a-z][\w'-]*"
SPOKEN_ADDRESS = re.compile(
    rf"\b(?:(?:flat|apartment)\s+(?:{_NUMBER}|\d{{1,3}}|[a-z]),?\s+)?(?:number\s+)?"
    rf"(?:{_NUMBER}(?:[\s-]{_UNIT})?|\d{{1,4}})(?:\s+[a-h](?=\s))?\s+"
    rf"(?:{_NAME_WORD}\s+|the\s+){{1,3}}{_STREET}\b",
    re.IGNORECASE,
)
_LIVED_ON = re.compile(
    rf"\b(?:lived|live|lives|living|moved|grew up|stays|stayed)\s+(?:on|in|at|off|to)\s+"
    rf"((?:{_NAME_WORD}\s+){{1,3}}{_STREET})\b",
    re.IGNORECASE,
)
# "the house on marigold lane": a named street after a preposition (not "down the lane", and
# not the words that are more often no street: "way", "place", "hill", "view").
_ON_STREET = re.compile(
    rf"\b(?:on|in|at|off|along|down|up|near|from|round|to|of|called)\s+"
    rf"((?:{_NAME_WORD}\s+){{1,2}}(?:street|road|avenue|lane|drive|close|crescent|grove|"
    r"terrace|gardens|mews|parade|cottage|farm|lodge|manor|grange))\b",
    re.IGNORECASE,
)
# A postcode read out: "m fourteen two a b", "l s six two q t".
SPOKEN_POSTCODE = re.compile(
    rf"\b(?:[a-z]\s+)?[a-z]{{1,2}}\s+(?:{_NUMBER}|{_DIGIT}(?:\s+{_DIGIT})?)\s+(?:[a-z]\s+)?"
    rf"{_DIGIT}\s+[a-z]\s+[a-z]\b",
    re.IGNORECASE,
)

# "is ninety one now", "would have been eighty one", "lived to 101", "for my 80th": ages
# said with what marks them as ages rather than counts.
_AGE_OR_DIGITS = rf"(?:{AGE_NUMBER}|1[01]\d)"
AGE_MARKED = re.compile(
    rf"\b(?i:(?:is|was|'s|will be|'ll be|turns|turning)\s+({AGE_NUMBER})\s+(?:now|this year|"
    r"next year|this month|next month|next week|today|tomorrow|on (?:\w+day|the \w+)|in \w+"
    rf"|on {_MONTH}|on (?:new year'?s|christmas|boxing|valentine'?s|easter|saint|st\.?) ?\w*"
    rf"|come {_MONTH}|on \d+)\b"
    rf"|would have been\s+({AGE_NUMBER})\b(?!\s+(?:{_MEASURES})\b)"
    rf"|(?:lived|live|living|made it|make it)\s+to\s+(?:be\s+|the\s+(?:grand\s+)?(?:old\s+)?"
    rf"age\s+of\s+)?({_AGE_OR_DIGITS})\b{NOT_AN_AGE}"
    rf"|(?:my|his|her|their|your|our|[a-z]+'s)\s+(\d{{2,3}}(?:st|nd|rd|th)|{_TENTHS}|hundredth|"
    rf"{_TENS}[\s-](?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)|{_TEEN}th)"
    rf"|\bat\s+({_TENS}(?:[\s-]{_UNIT})?|(?:thir|four|fif|six|seven|eigh|nine)teen)"
    rf"(?!\s+(?:past|to|minutes|hundred|{_UNITS})\b)"
    rf"|(?:girl|boy|lad|lass|child|kid|man|woman|youngster|baby) of\s+({AGE_NUMBER}))\b"
)
# "the winter of sixty three", "christmas day nineteen ninety", "the third of the fifth",
# "on 17.05": dates said in ways the patterns above miss.
_SHORT = rf"(?:'?\d{{2}}|\d{{4}}|{_YEAR}|{_TENS}(?:[\s-]{_UNIT})?)"
MORE_DATES = re.compile(
    rf"\b(?i:the\s+(?:spring|summer|autumn|fall|winter)\s+of\s+{_SHORT}"
    rf"|(?:christmas|boxing|new year'?s|valentine'?s|easter|bonfire|midsummer)"
    rf"(?:\s+(?:day|eve|night))?\s+{_YEAR}"
    rf"|(?:spring|summer|autumn|winter)\s+(?:of\s+)?(?:{_YEAR}|\d{{4}})"
    rf"|the\s+(?:{_ORDINAL}|{_ORD_DIGITS})\s+of\s+the\s+(?:{_ORDINAL}|{_ORD_DIGITS})"
    rf"(?:\s+{_SHORT}(?![\w-]))?"
    # "gave her the twenty sixth off": a day of the month past the twentieth, said alone
    r"|the\s+(?:twentieth|thirtieth|(?:twenty|thirty)[\s-](?:first|second|third|fourth|fifth|"
    r"sixth|seventh|eighth|ninth))(?!\s+(?:century|centuries|hour|lap|round|anniversary|"
    r"birthday|year|week|minute|place|time|floor|row|house|door|of)\b)"
    rf"|(?<=on\s)the\s+(?:{_ORDINAL}|{_ORD_DIGITS})(?=\s+(?:at|and|i|we|he|she|they|for|so|"
    r"when|but|this|next|last|in|is|was|which)\b|\s*$))\b"
    rf"(?!\s+(?i:floor|time|row|house|door))"
)
# "on boxing day", "Easter Monday", "st patrick's day": a day named by its feast pins a date
# ("at christmas" alone does not).
NAMED_DAY = re.compile(
    r"\b(?:(?:christmas|boxing|new\s+year'?s|valentine'?s|st\.?\s+\w+'?s|saint\s+\w+'?s|"
    r"mother'?s|father'?s|armistice|remembrance|pancake|shrove)\s+day|christmas\s+eve|"
    r"new\s+year'?s\s+eve|easter\s+(?:saturday|sunday|monday)|good\s+friday|bonfire\s+night|"
    r"burns\s+night|hogmanay)\b",
    re.IGNORECASE,
)
ON_DAY = re.compile(
    r"\b(?i:on|every|since|until|till|by|from|before|after|birthday(?:'s|\s+is|\s+was)|born|due)\s+"
    r"((?:0?[1-9]|[12]\d|3[01])[./](?:0?[1-9]|1[0-2])|(?:0?[1-9]|1[0-2])[./](?:[12]\d|3[01]))"
    r"\b(?![./,]\d)"
)

# "saturday the fifth", "on Friday the 11th": a weekday with its date pins a day.
_WEEKDAY = rf"(?:{alternation('weekdays', 'weekday_abbreviations')})\.?"  # "Tues 4th"
WEEKDAY_DATE = re.compile(
    rf"\b{_WEEKDAY},?\s+(?:the\s+)?(?:{_ORDINAL}|{_ORD_DIGITS}|(?:[12]\d|3[01]|0?[1-9])(?=\s+{_MONTH}))"
    r"\b(?!\s+(?:time|floor|row)\b)"
    rf"|\b{_MONTH}\.?\s+['’]\d\d\b",  # "March '98"
    re.IGNORECASE,
)
# "due in april", "since last august", "the wedding in may": a month said alone after a word
# that makes it a time (not "may i", "march on"); a month narrows a birth or an event.
MONTH_ALONE = re.compile(
    r"\b(?:in|since|until|till|by|last|next|this|come|for|early|late|mid|end of|beginning of|"
    rf"start of|middle of|during|before|after)\s+(?:(?:early|late|mid)[\s-]+)?({_MONTH})\b(?!')"
    r"(?!(?<=may)\s+(?:i|we|you|he|she|they|it|be|have|not)\b)",  # "may i", not "in march we"
    re.IGNORECASE,
)
# "her birthday is the twenty second", "born on christmas eve": a birthday's day.
_FEAST = r"(?:christmas|boxing|new year'?s|valentine'?s|easter|hallowe'?en|st patrick'?s)"
BIRTHDAY = re.compile(
    rf"\b(?:(?:birthday|anniversary|due date)(?:'s|\s+is|\s+was)|born\s+on)\s+"
    rf"(the\s+(?:{_ORDINAL}|{_ORD_DIGITS})|{_FEAST}(?:\s+(?:day|eve))?)\b",
    re.IGNORECASE,
)
# "the booking reference is x q seven nine two": what follows a reference's name, letters
# and numbers read out (three or more, one a number at least).
_CODE_TOKEN = rf"(?:[a-z]|[a-z]*\d[a-z\d]*|{_DIGIT}|{_TEEN}|{_TENS}|dash|slash)"
CODE = re.compile(  # or one token of letters and digits ("NLF7Q2KX")
    rf"\b(?:{alternation('code_cues')})(?:\s+(?:number|no|code|mark))?(?:\s+(?:is|was|'s)|,)\s+"
    rf"((?=(?:{_CODE_TOKEN}\s+){{0,4}}(?:[a-z]*\d[a-z\d]*|{_DIGIT}|{_TEEN}|{_TENS})\b)"
    rf"{_CODE_TOKEN}(?:\s+{_CODE_TOKEN}){{2,}}(?:\s+[a-d](?=\s*(?:[,.;!?]|$)))?"
    r"|(?=[a-z\d]*\d)(?=[a-z\d]*[a-z])[a-z\d]{5,})\b",
    re.IGNORECASE,
)
# "who's eighty-one and keeps bees", "mabel is seventy one and still swims": a person
# (named, or "who") is a bare number and then goes on with the sentence.
_AGE_END = (
    r"(?=\s*(?:[,.;:!?]|$)|\s+(?:and|now|but|so|already|still|next|this|today|yet|going|"
    r"with|in|on)\b)"
)
# "Ieva is nine and wants to be a vet", "mrs mair next door is eighty seven and she was up a
# ladder": a number someone is, and then what they do (never "it is nine and we were late").
AGE_AND = re.compile(
    r"\b(?<!\bit )(?<!\bthat )(?<!\bthis )(?<!\bthere )(?<!\bwhich )(?<!\btime )(?<!\bscore )"
    rf"(?:is|was|'s)\s+"
    rf"((?i:{AGE_NUMBER}))\s+and\s+(?:he|she|they|his|her|still|wants|loves|likes|has|had|is|was|"
    r"goes|plays|already|thinks|can|cannot|can't|does|never|always)\b",
    re.IGNORECASE,
)
WHO_AGE = re.compile(
    rf"\b(?i:who(?:'s|\s+is|\s+was|'ll\s+be|\s+will\s+be|\s+turned|\s+turns))\s+"
    rf"((?i:{AGE_NUMBER}|1[01]\d))\b{NOT_AN_AGE}{_AGE_END}"
)
NAME_IS_AGE = re.compile(
    rf"\b([a-z][\w'-]+),?\s+(?:is|was|are|turns|turned|'s)\s+((?i:{AGE_NUMBER}|1[01]\d))\b"
    rf"{NOT_AN_AGE}{_AGE_END}",
    re.IGNORECASE,
)

PATTERNS: list[tuple[str, str, re.Pattern[str]]] = [
    ("spoken_address", "ADDRESS", SPOKEN_ADDRESS),
    ("spoken_postcode", "ADDRESS", SPOKEN_POSTCODE),
    *((f"spoken_date_{i}", "DATE", p) for i, p in enumerate(SPOKEN_DATES)),
    ("spoken_age", "AGE", AGE),
    ("more_dates", "DATE", MORE_DATES),
    ("weekday_date", "DATE", WEEKDAY_DATE),
    ("named_day", "DATE", NAMED_DAY),
]
GROUPED: list[tuple[str, str, re.Pattern[str]]] = [
    # every start tried (a lookahead): "reach k at k dot lee at gmail dot com" has two
    ("spoken_email", "EMAIL", re.compile(rf"(?=({SPOKEN_EMAIL.pattern}))", re.IGNORECASE)),
    ("said_age", "AGE", SAID_AGE),
    ("lived_on", "ADDRESS", _LIVED_ON),
    ("on_street", "ADDRESS", _ON_STREET),
    ("on_day", "DATE", ON_DAY),
    ("month_alone", "DATE", MONTH_ALONE),
    ("birthday_date", "DATE", BIRTHDAY),
    ("spoken_code", "ID", CODE),
    ("who_age", "AGE", WHO_AGE),
    ("apposed_age", "AGE", APPOSED_AGE),
    ("age_and", "AGE", AGE_AND),
]  # the group is the span
