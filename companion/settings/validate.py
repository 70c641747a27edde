"""One validator for every settings file: config.toml, the protocol and its [schedule].

`Table` is a typed view of one TOML table. Every problem is a `ConfigError` of one line,
"<file>: <table.>key: <problem and what to do>", which the CLI prints as is (exit 2).
Defaults are not known here: they live once, in the settings dataclasses; a parser reads
only the keys that are present and lets the dataclass fill in the rest.
"""

from __future__ import annotations

import json
import string
import tomllib
from collections.abc import Callable, Collection, Iterable, Mapping
from datetime import date, datetime, time
from pathlib import Path
from typing import Any, TypeVar

from companion.errors import ConfigError, printable
from companion.files import read_input

T = TypeVar("T")
_REQUIRED: Any = object()
# SQLite stores INTEGER as a signed 64-bit number.
SQLITE_INT_MAX = 2**63 - 1
# A config or protocol file is a few KB; anything near this is not one.
MAX_TOML_BYTES = 1024 * 1024
# A JSON record's arrays and objects nest at most this deep (a story line nests 2).
MAX_JSON_DEPTH = 32


def read_toml(path: Path, what: str = "file") -> dict[str, Any]:
    """Parse a TOML file, read through `files.read_input` (a regular file of at most
    MAX_TOML_BYTES); unreadable or malformed files are one-line ConfigErrors."""
    return parse_toml(read_input(path, what, MAX_TOML_BYTES), str(path))


def parse_toml(text: str, source: str) -> dict[str, Any]:
    source = printable(source)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{source}: not valid TOML ({one_line(str(exc))}); fix the syntax"
        ) from exc
    except RecursionError:
        raise ConfigError(f"{source}: nested too deeply to read; simplify the file") from None


def parse_json(text: str, where: str, error: type[Exception] = ConfigError) -> Any:
    """One JSON value, refused in one line (an `error` naming `where`) when it is not valid
    JSON, nests deeper than MAX_JSON_DEPTH or holds a lone surrogate escape ("\\ud800"),
    which no UTF-8 file or database can store."""
    deep = error(f"{where}: JSON nested more than {MAX_JSON_DEPTH} levels deep; write flat records")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); fix it"
                    ) from None  # fmt: skip
    except RecursionError:
        raise deep from None
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list) and depth > MAX_JSON_DEPTH:
            raise deep
        if isinstance(item, dict):
            pending += [(v, depth + 1) for pair in item.items() for v in pair]
        elif isinstance(item, list):
            pending += [(v, depth + 1) for v in item]
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                bad = ascii(item[exc.start])[1:-1]
                raise error(f"{where}: {bad} is half of a UTF-16 pair (a lone surrogate), not "
                            "a character; remove it or write the whole character") from None
    return value


def one_line(text: str) -> str:
    return " ".join(text.split())


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "string", int: "whole number", float: "number", bool: "true or false",
             dict: "table", list: "list", date: "date"}  # fmt: skip
    return " or ".join(names.get(k, k.__name__) for k in kinds)


class Table:
    """Typed access to one TOML table, with errors that name the file and the key."""

    def __init__(self, table: Mapping[str, Any], source: str, where: str = "") -> None:
        self.table, self.source, self.where = table, source, where

    def __contains__(self, key: str) -> bool:
        return key in self.table

    def fail(self, key: str, problem: str) -> ConfigError:
        # The source is a path: escaped, not folded, so the line names the real file.
        return ConfigError(printable(self.source) + one_line(f": {self.where}{key}: {problem}"))

    # -- plain values ---------------------------------------------------------------------
    def get(self, key: str, kind: type | tuple[type, ...], default: Any = _REQUIRED) -> Any:
        """The value of `key` if it has type `kind` (a float key takes an int too)."""
        if key not in self.table:
            if default is _REQUIRED:
                raise self.fail(key, "missing; add it")
            return default
        value = self.table[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        wrong = isinstance(value, bool) and bool not in kinds
        if wrong or not isinstance(value, kinds) or isinstance(value, datetime) and date in kinds:
            raise self.fail(key, f"must be a {_kind_name(kind)}, got {value!r}")
        if isinstance(value, str) and not value.strip():
            raise self.fail(key, "must not be empty")
        return value

    def text(self, key: str, default: Any = _REQUIRED) -> str:
        value: str = self.get(key, str, default)
        return value

    def flag(self, key: str, default: Any = _REQUIRED) -> bool:
        value: bool = self.get(key, bool, default)
        return value

    def integer(self, key: str, low: int, high: int, default: Any = _REQUIRED) -> int:
        value: int = self.get(key, int, default)
        if not low <= value <= high:
            raise self.fail(key, f"must be a whole number from {low} to {high}, got {value!r}")
        return value

    def number(self, key: str, low: float, high: float, default: Any = _REQUIRED) -> float:
        value: float = self.get(key, float, default)
        if not low <= value <= high:
            raise self.fail(key, f"must be a number from {low:g} to {high:g}, got {value!r}")
        return value

    def choice(self, key: str, allowed: Collection[T], default: Any = _REQUIRED) -> T:
        """One of `allowed` (strings or ints)."""
        kinds = tuple({type(a) for a in allowed})
        value = self.get(key, kinds, default)
        if value not in allowed:
            shown = ", ".join(repr(a) if isinstance(a, str) else str(a) for a in allowed)
            raise self.fail(key, f"must be one of {shown}, got {value!r}")
        result: T = value
        return result

    def day(self, key: str, low: date, high: date, default: Any = _REQUIRED) -> date:
        """A TOML date (2027-03-01, unquoted) between `low` and `high`."""
        if key in self.table and not isinstance(self.table[key], date):
            raise self.fail(
                key, f"must be a date like 2027-03-01 (no quotes), got {self.table[key]!r}"
            )
        value: date = self.get(key, date, default)
        if not low <= value <= high:
            raise self.fail(key, f"{value} is outside {low.year}-{high.year}; check the year")
        return value

    def clock_time(self, key: str, default: Any = _REQUIRED) -> time:
        """A wall-clock time: "03:30" or an unquoted TOML time 03:30:00."""
        value = self.get(key, (str, time), default)
        return value if isinstance(value, time) else parse_clock(value, self, key)

    # -- lists and tables -----------------------------------------------------------------
    def strings(self, key: str, default: Any = _REQUIRED, *, allow_empty: bool = False,
                allowed: Collection[str] | None = None) -> tuple[str, ...]:  # fmt: skip
        values = self.get(key, list, default)
        if not values and not allow_empty:
            raise self.fail(key, "needs at least one entry")
        for value in values:
            if not isinstance(value, str) or not value.strip():
                raise self.fail(key, f"every entry must be a non-empty string, got {value!r}")
            if allowed is not None and value not in allowed:
                raise self.fail(key, f"{value!r} is not one of {', '.join(allowed)}")
        return tuple(values)

    def unique(self, key: str, values: tuple[str, ...]) -> tuple[str, ...]:
        """`values`, refused if one is listed twice (case and spacing ignored, as when the
        companion avoids repeating a wording)."""
        seen: set[str] = set()
        for value in values:
            norm = one_line(value).lower()
            if norm in seen:
                raise self.fail(key, f"{value!r} is listed twice; remove one")
            seen.add(norm)
        return values

    def sub(self, key: str, where: str | None = None) -> Table:
        """The sub-table `key` ([key]); missing means empty."""
        value = self.table.get(key, {})
        if not isinstance(value, Mapping):
            raise self.fail(key, f"must be a table ([{self.where}{key}])")
        return Table(value, self.source, f"{self.where}{key}." if where is None else where)

    def unknown(self, allowed: Iterable[str]) -> None:
        extra = sorted(set(self.table) - set(allowed))
        if extra:
            raise self.fail(extra[0], "unknown field; check the spelling")

    def read(self, checks: Mapping[str, Callable[[str], Any]]) -> dict[str, Any]:
        """Check the keys present with their check; any other key is an error.

        Returns only the keys present, so the dataclass they feed supplies the defaults.
        """
        self.unknown(checks)
        return {key: check(key) for key, check in checks.items() if key in self.table}

    # -- templates ------------------------------------------------------------------------
    def template(self, key: str, text: str, names: Collection[str]) -> str:
        """Check `text`'s {placeholders}: only `names`, plain (no format spec, conversion,
        attribute or index), and no stray braces ({{ and }} are literal braces)."""
        allowed = ", ".join(f"{{{n}}}" for n in sorted(names)) or "no placeholders"
        try:
            fields = list(string.Formatter().parse(text))
        except ValueError as exc:
            raise self.fail(
                key, f"{exc} in {text!r}; write {{{{ or }}}} for a literal brace"
            ) from None
        for _, name, spec, conversion in fields:
            if name is None:
                continue
            extra = (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            shown = "{" + name + extra + "}"
            if spec or conversion or not name.isidentifier():
                raise self.fail(key, f"{shown}: write a plain placeholder like {{name}}")
            if name not in names:
                raise self.fail(key, f"unknown placeholder {shown}; this text may use {allowed}")
        return text


def parse_clock(text: str, table: Table, key: str) -> time:
    hours, _, minutes = text.strip().partition(":")
    if not (hours.isdigit() and minutes.isdigit() and len(minutes) == 2 and len(hours) <= 2):
        raise table.fail(key, f'{text!r} must look like "18:00"')
    h, m = int(hours), int(minutes)
    if h > 23 or m > 59:
        raise table.fail(key, f"{text!r} is not a valid time of day")
    return time(h, m)
