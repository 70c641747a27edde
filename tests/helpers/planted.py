"""Planted personal details in story sentences we wrote ourselves, for the PII benchmark
(tests/bench/bench_pii.py) and the recall test. Every planted item's character span is
known, so recall is measured exactly: an item counts as caught only when every letter and
digit of it lies inside a redacted span."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

FIRST = ["Zelda", "Oluwaseun", "Priya", "Siobhan", "Tomasz", "Mei", "Rhiannon", "Kwame",
         "Harriet", "Declan", "Ingrid", "Rafael", "Agnieszka", "Leonard", "Yusuf", "Maeve",
         "Bartholomew", "Imogen", "Desmond", "Lucinda"]  # fmt: skip
SURNAME = ["Quixote", "Oyelaran", "Kowalczyk", "Brennan", "Achebe", "Fairweather", "Nakamura",
           "Pemberton", "Okonkwo", "Lindqvist", "Castellano", "Higginbottom", "Mbeki",
           "Thistlewood", "Ferreira", "Gallagher"]  # fmt: skip
PETS = ["Biscuit", "Pepper", "Bramble", "Nala", "Rufus", "Marmalade", "Pickles", "Hector"]
CITIES = ["London", "Manchester", "Leeds", "Bristol", "Cardiff", "Glasgow", "Aberdeen",
          "Swansea", "Norwich", "Dundee", "Lagos", "Krakow", "Mumbai", "Toronto", "Liverpool",
          "Birmingham", "Edinburgh", "Belfast"]  # fmt: skip
STREETS = ["Baker Street", "Wellington Road", "Acacia Avenue", "Mill Lane", "Church Close",
           "Rosemary Gardens", "Station Road", "Kingfisher Way"]  # fmt: skip
POSTCODES = ["SW1A 1AA", "M14 6HR", "LS6 2QT", "BS8 4JJ", "CF10 3AT", "G12 8QQ", "EH9 1PR"]
RELATIVES = ["wife", "husband", "daughter", "son", "sister", "brother", "grandson", "niece",
             "neighbour", "cousin"]  # fmt: skip
DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]  # fmt: skip
ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
            "ninth", "tenth", "eleventh", "twelfth", "fourteenth", "twentieth", "twenty-first",
            "thirtieth"]  # fmt: skip
TENS = ["sixty", "seventy", "eighty"]
YEARS = ["nineteen eighty two", "nineteen fifty", "two thousand and five", "nineteen sixty one"]


def _phone(rng: random.Random) -> str:
    return rng.choice(["07700 900", "+44 7700 900", "(0161) 496 0", "0113 496 0"]) + "".join(
        rng.choice("0123456789") for _ in range(3)
    )


def _spoken_digits(rng: random.Random) -> str:
    return " ".join(rng.choice(DIGITS) for _ in range(rng.randint(7, 11)))


def _date(rng: random.Random) -> str:
    d, m, y = rng.randint(1, 28), rng.randrange(12), rng.randint(1940, 2025)
    forms = [f"{d}/{m + 1}/{y}", f"{y}-{m + 1:02d}-{d:02d}", f"{MONTHS[m]} {d}, {y}",
             f"the {d}th of {MONTHS[m]}", f"{d} {MONTHS[m]} {y}", f"{MONTHS[m]} {y}"]  # fmt: skip
    return rng.choice(forms)


def _spoken_date(rng: random.Random) -> str:
    o, m = rng.choice(ORDINALS), rng.choice(MONTHS)
    forms = [f"the {o} of {m}", f"{m} the {o}", f"the {o} of {m} {rng.choice(YEARS)}"]
    return rng.choice(forms)


def _age(rng: random.Random) -> str:
    n = rng.randint(55, 94)
    spoken = f"{rng.choice(TENS)} {rng.choice(DIGITS[1:])}"
    return rng.choice([f"{n} years old", f"{spoken} years old", f"aged {n}", f"{n}th birthday"])


def _id(rng: random.Random) -> str:
    letters = "ABCEGHJKLMNPRSTWXYZ"
    return rng.choice(
        [
            f"{rng.choice(letters)}{rng.choice(letters)}{rng.randint(100000, 999999)}"
            f"{rng.choice('ABCD')}",
            f"{rng.randint(100, 999)} {rng.randint(100, 999)} {rng.randint(1000, 9999)}",
        ]
    )


def _email(rng: random.Random, first: str, last: str) -> str:
    host = rng.choice(["gmail.com", "mail.co.uk", "example.org", "outlook.com"])
    return f"{first.lower()}.{last.lower()}{rng.randint(1, 99)}@{host}"


def _spoken_email(rng: random.Random, first: str, last: str) -> str:
    host = rng.choice(["gmail dot com", "hotmail dot co dot uk", "yahoo dot com"])
    return f"{first.lower()} dot {last.lower()} at {host}"


# Each template: a story sentence with {type} slots. Types: own_name (the participant names
# themself, full name or surname alone), family, friend, pet, city, street, postcode, phone,
# phone_spoken, email, email_spoken, date, date_spoken, age, id.
TEMPLATES = [
    "My name is {own_name} and I have lived here most of my life.",
    "People at the surgery still call me Mrs {own_surname}, which makes me smile.",
    "My {rel} {family} rang this morning and we talked for an hour about nothing at all.",
    "I went round to see my friend {friend} and she made us a pot of tea.",
    "Our dog {pet} ran off across the field and I had to chase him in my slippers.",
    "When we lived in {city} the winters felt much longer than they do now.",
    "We moved to {street} when the children were small and I loved the garden there.",
    "The old house was at postcode {postcode}, right by the bus stop.",
    "My {rel} left her number, {phone}, in case I needed anything.",
    "I wrote down the number he read out, it was {phone_spoken}, and I kept it by the phone.",
    "You can write to me at {email} if the letter gets lost.",
    "The nurse said her address was {email_spoken} and I wrote it on my hand.",
    "We got married on {date} and it rained all day, but nobody minded.",
    "My grandson was born on {date_spoken} and I cried when I held him.",
    "I am {age} and I still walk to the shops every morning.",
    "The form asked for my number, {id}, and I had to find the letter.",
    "{friend} and I took the train from {city} to see the sea last summer.",
    "My {rel} {family} is coming for {pet}'s birthday on {date}.",
    "Last week my friend {friend} phoned from {city} to say hello.",
    "I told the lady at the bank my name was {own_name} and she looked it up.",
]


@dataclass(frozen=True)
class Planted:
    text: str
    items: list[tuple[str, int, int]]  # (type, start, end)


def planted_sentences(n: int, seed: int = 14) -> list[Planted]:
    """`n` sentences with their planted items; names unseen by the redactor except the
    participant's first name (as config.toml knows it): see `own_first`."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        template = TEMPLATES[i % len(TEMPLATES)]
        first, last = rng.choice(FIRST), rng.choice(SURNAME)
        values = {
            "own_name": ("own_name", f"{OWN_FIRST} {rng.choice(SURNAME)}"),
            "own_surname": ("own_name", rng.choice(SURNAME)),
            "rel": (None, rng.choice(RELATIVES)),
            "family": ("family", rng.choice([first, f"{first} {last}"])),
            "friend": ("friend", f"{rng.choice(FIRST)} {rng.choice(SURNAME)}"),
            "pet": ("pet", rng.choice(PETS)),
            "city": ("city", rng.choice(CITIES)),
            "street": ("street", f"{rng.randint(2, 240)} {rng.choice(STREETS)}"),
            "postcode": ("postcode", rng.choice(POSTCODES)),
            "phone": ("phone", _phone(rng)),
            "phone_spoken": ("phone_spoken", _spoken_digits(rng)),
            "email": ("email", _email(rng, first, last)),
            "email_spoken": ("email_spoken", _spoken_email(rng, first, last)),
            "date": ("date", _date(rng)),
            "date_spoken": ("date_spoken", _spoken_date(rng)),
            "age": ("age", _age(rng)),
            "id": ("id", _id(rng)),
        }
        text, items, pos = "", [], 0
        for m in re.finditer(r"\{(\w+)\}", template):
            text += template[pos : m.start()]
            kind, value = values[m.group(1)]
            if kind:
                items.append((kind, len(text), len(text) + len(value)))
            text += value
            pos = m.end()
        text += template[pos:]
        out.append(Planted(text, items))
    return out


OWN_FIRST = "Zelda"  # the participant's first name, as config.toml holds it


def caught(text: str, start: int, end: int, covered: list[tuple[int, int]]) -> bool:
    """Every letter and digit of text[start:end] lies in a redacted span."""
    return all(any(a <= i < b for a, b in covered) for i in range(start, end) if text[i].isalnum())
