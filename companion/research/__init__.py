"""For researchers: export (`export`), its codebook (`codebook`), de-identification
(`deidentify`), merging devices (`merge`), the HTML report (`report`, with the plots' item
rules in `instruments`) and datasette (`browse`).

May import: the foundation modules, `settings`, `store` and `engine` (the protocol's
instruments). Never `voice`, `model`, `service`, `ops`, `app` or `cli`. matplotlib (the
`research` extra) is imported only when a report is drawn.
"""
