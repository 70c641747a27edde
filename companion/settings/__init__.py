"""Settings: the home directory and config.toml (`config`), the protocol's [schedule] table
(`schedule`), and the one validation module every settings file goes through (`validate`).

May import: the foundation modules only.
"""
