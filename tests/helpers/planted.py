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


# Held out: sentences written after the rules, in other shapes than the templates above, each
# planted item marked <type|text>. The benchmark reports them apart (no rule was tuned on them).
HELD_OUT = """\
Honestly I never thought <friend|Olwen Baptiste> would remember my birthday, but she did.
We drove up to <city|Harrogate> for the weekend and the hotel lost our booking.
<family|Cormac> phoned from <city|Dublin> at six in the morning, forgetting the time difference.
Me and <friend|Tariq Hussain> used to fish off the pier every Sunday.
The vet said <pet|Mister Pickwick> was too fat, which I could have told him for free.
I gave the council my number, <phone|01632 960 983>, three times and nobody called back.
If you need me, it's <email|g.whitlock@btinternet.com> but I hardly look at it.
It was <date|Boxing Day 1987> when the pipes burst and flooded the kitchen.
My late husband <family|Aurelio> would have loved this weather.
<friend|Beatrix Okafor> from the choir brought round a lasagne when I was poorly.
The letter went to <street|17 Foxglove Crescent> instead of our house, again.
Our postcode is <postcode|NE6 5XJ> so the taxi always goes to the wrong street.
I was <age|sixty three> when I finally learned to swim.
The hospital number on my wristband was <id|RX4471920> and they still called me the wrong name.
Her number was <phone_spoken|oh one six three two nine six oh one two three> and I wrote it.
The man on the phone spelled it out, <email_spoken|p dot hartley at outlook dot com>, twice.
We met on <date_spoken|the twelfth of august> at a dance in the church hall.
My daughter <family|Saoirse> has just moved to <city|Vancouver> with the grandchildren.
I still write to <friend|Piotr Zielinski>, who I met in the army.
Everyone at the club calls me <own_name|Zelda Marchbanks>, even the new ones.
<family|Grandad Eustace> taught me to play cribbage when I was small.
When we lived on <street|4 Quarry Row> the trains shook the windows all night.
My sister <family|Philippa> and I went to <city|Lisbon> and ate far too many custard tarts.
I rang <friend|Delphine> to tell her about the storm and we laughed for ages.
The cat, <pet|Smudge>, sleeps on my feet and I don't have the heart to move her.
Last year on <date|3 June> the whole street had a party for the jubilee.
My grandson <family|Ezekiel Bramwell> is starting university in <city|Sheffield>.
Her new mobile is <phone|07700 900 461> if you want to send her a card.
My pension reference is <id|PN 88213 774> and I can never remember it.
I am <own_name|Zelda>, by the way, and I've lived here forty years.
<friend|Augustin Mbatha> helped me carry the wardrobe up the stairs.
We buried <pet|Barnaby> under the apple tree in the back garden.
The doctor, <friend|Dr Siddiqui>, said my blood pressure is better than hers.
I'll be <age|eighty> next spring and I want a party with a band.
The parcel was addressed to <street|221 Linden Avenue> but it came here.
My brother <family|Fergus> still lives in <city|Inverness> and never visits.
We were married on <date_spoken|the twenty-first of may nineteen sixty nine> in the rain.
You can email the group at <email|bookclub.kirkby@gmail.com> if you want to join.
His number, <phone_spoken|seven seven double oh nine oh oh four one two>, is on the fridge.
My niece <family|Ottilie> sent me photos from <city|Nairobi> and the sunsets were beautiful.
"""

# A second set, written after the rules were last changed and never used to change them.
FRESH = """\
On Saturday <friend|Marguerite Oduya> and I walked the dogs along the canal in <city|Bath>.
My son-in-law <family|Rashid> fixed the boiler, bless him.
I phoned the surgery on <phone|0118 496 0734> and waited forty minutes on hold.
<family|Auntie Gwendolyn> left me her piano when she passed.
We honeymooned in <city|Blackpool> in <date|September 1971> and it never stopped raining.
The nurse wrote her email down for me, <email|k.ashworth@nhs.net>, in big letters.
I told the lady my name was <own_name|Zelda Fotheringay> and she found my file.
Our tortoise <pet|Methuselah> is older than my grandchildren.
My friend <friend|Ignatius> says he will come for tea on <date_spoken|the second of november>.
I am <age|seventy nine> and I have never once been on an aeroplane.
The old shop was at <street|58 Tanner Street> before they knocked it down.
My godson <family|Kit Abernathy> is getting married in <city|Cork>.
She read it out as <phone_spoken|oh seven seven zero zero nine double oh five two>.
His address is <email_spoken|tom underscore rigby at gmail dot com> if you want it.
Our first flat was in <postcode|LS7 3HB>, up three flights of stairs.
My membership number is <id|KX-204-7781> and I keep it in my purse.
<friend|Florentyna> from next door brought me daffodils from her garden.
We lost <pet|Juniper> last winter and the house has been too quiet since.
I visited <friend|Wendell Osei> in hospital and he was in good spirits.
My grandmother was born in <city|Cracow> on <date|4 July 1921>.
"""


def held_out(text: str = HELD_OUT) -> list[Planted]:
    out = []
    for line in text.splitlines():
        text, items, pos = "", [], 0
        for m in re.finditer(r"<(\w+)\|([^>]+)>", line):
            text += line[pos : m.start()]
            items.append((m.group(1), len(text), len(text) + len(m.group(2))))
            text += m.group(2)
            pos = m.end()
        out.append(Planted(text + line[pos:], items))
    return out
