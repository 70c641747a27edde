"""The engine: one session, pure of devices and models.

Owns the session (`session`), the channel interface (`dialogue`), answer parsing (`answers`;
what each item accepts: `items`),
the study protocol (`protocol`), acknowledgements (`acknowledge`; the naming rule `ackrule`,
fitted at build time by `models/ackfit.py`), the story bank (`stories`),
story choice (`match`), the text channel (`textio`) and the simulated participant (`simulate`).

May import: the foundation modules (`companion.errors`, `emotions`, `checksum`, `files`,
`clock`), `companion.settings` and `companion.store`. Never `voice`, `model`, `research`,
`service`, `ops`, `app` or `cli` (checked by tests/test_layers.py).
"""
