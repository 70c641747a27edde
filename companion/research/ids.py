"""Written identifiers: national insurance, NHS, account and registration numbers, number
plates and sort codes, as `deidentify` redacts them ([ID]); spoken ones are in `spoken`."""

from __future__ import annotations

import re

# Mixed letters and at least three digits: national insurance, NHS or account numbers,
# written as one token or in groups ("PN 88213 774", "QQ 12 34 56 C").
ID = re.compile(
    r"\b(?=[A-Z0-9/-]*\d[A-Z0-9/-]*\d[A-Z0-9/-]*\d)(?=[A-Z0-9/-]*[A-Z])[A-Z0-9/-]{5,}\b"
)  # "WMT/PN/0088214" too
GROUPED_ID = re.compile(
    r"\b[A-Z]{1,3}(?:\s?\d{2,}){2,4}(?:\s?[A-Z\d])?\b|\b[A-Z]{2,5}(?:\s\d{1,2})?\s\d{5,}\b"
    r"|\b\d{2,3}/\d{3}/\d{3,5}\b"  # "ISDS 341907", "UK 0 541783", a holding "36/411/0027"
)
# A UK number plate ("BP68 WZN") and a bank sort code ("80-22-61").
PLATE = re.compile(r"\b[A-Z]{2}\d{2}\s?[A-Z]{3}\b")
SORT_CODE = re.compile(r"(?<![\d-])\d{2}-\d{2}-\d{2}(?![\d-])")
