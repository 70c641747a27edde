"""The store: the study database and everything that reads or writes its state.

Owns the schema definition (`schema`), the versioned migrations (`migrations`), connections,
transactions and events (`db`), shared queries (`queries`), what a session records
(`recorder`), the protocols and story bank (`content`), the model's encodings and preference
models (`learning`), adherence counting shared by `status` and the report (`adherence`),
read-only access that writes nothing (`readonly`), what an export reads (`exports`), the
study database merge writes (`study`), the home's session lock (`lock`) and backups
(`backup`). No other package writes to a database (tests/test_layers.py checks it).

May import: the foundation modules and `companion.settings`. Nothing above it.
"""
