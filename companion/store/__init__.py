"""The store: the study database and everything that reads or writes its state.

Owns the schema definition (`schema`), the versioned migrations (`migrations`), connections,
transactions and events (`db`), shared queries (`queries`), adherence counting shared by
`status` and the report (`adherence`), read-only access that writes nothing (`readonly`), the
home's session lock (`lock`) and backups (`backup`).

May import: the foundation modules and `companion.settings`. Nothing above it.
"""
