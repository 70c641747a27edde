"""CSV cells a spreadsheet would not execute, and their exact inverse for `companion merge`.

A text cell beginning with `=`, `+`, `-`, `@`, tab or carriage return can run as a formula
when the CSV is opened in a spreadsheet (CSV injection), so export prefixes it with an
apostrophe, the OWASP rule. A text cell that already begins with an apostrophe is prefixed
too, so removing one leading apostrophe from every cell restores the original exactly; an
empty text value is written as a lone apostrophe, so an empty cell always means NULL.
Numbers (an INTEGER or REAL value, e.g. -1.5) are not text and are written as they are.
JSONL carries every value exactly and needs none of this.
"""

from __future__ import annotations

from typing import Any

PREFIX = "'"
# Cells a spreadsheet treats as formulas, plus the prefix itself (so the escape is reversible).
NEUTRALISED = ("=", "+", "-", "@", "\t", "\r", PREFIX)

FORMAT_NOTES = {
    "csv": (
        "CSV cells are neutralised against spreadsheet formulas (CSV injection): a text value "
        "beginning with =, +, -, @, a tab, a carriage return or an apostrophe is written with "
        "one extra leading apostrophe ('), and an empty text value as a lone apostrophe. "
        "Remove one leading apostrophe from such a cell to get the stored value "
        "(`companion merge` does). An empty cell is NULL. Numbers are written as they are "
        "(e.g. -1.5). JSONL exports carry every value exactly."
    ),
    "jsonl": (
        "JSONL carries every value exactly as stored (null = NULL); nothing is escaped. CSV "
        "exports prefix text cells a spreadsheet would run as formulas with an apostrophe."
    ),
}


def neutralise(value: Any) -> Any:
    """The CSV cell for a stored value: text a spreadsheet would execute gets a leading `'`."""
    if value is None:
        return ""
    if isinstance(value, str) and (value == "" or value.startswith(NEUTRALISED)):
        return PREFIX + value
    return value


def restore(cell: str) -> str | None:
    """The stored value of a CSV cell written by `neutralise` (numbers stay text here):
    an empty cell is NULL, and one leading apostrophe is removed."""
    if cell == "":
        return None
    return cell[1:] if cell.startswith(PREFIX) else cell
