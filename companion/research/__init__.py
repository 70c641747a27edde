"""For researchers: export (`export`, with what each option includes and the per-row changes
in `options`), its codebook (`codebook`) and Frictionless `datapackage`, de-identification
(`deidentify`, with spoken forms in `spoken`, written ids in `ids`, the NER pipeline in `ner`,
word lists in `gazetteer`, names found by case and context in `casing`, `context`, `cues`,
`intros` and `unknown`, places by their kind in `landmarks`, names spread in an export by
`propagate`), who
a participant is across devices (`identity`), merging devices (`merge`), the HTML report
(`report`, with the plots' item rules in `instruments`) and datasette (`browse`).

May import: the foundation modules, `settings`, `store` and `engine` (the protocol's
instruments). Never `voice`, `model`, `service`, `ops`, `app` or `cli`. matplotlib (the
`research` extra) is imported only when a report is drawn; spaCy (the `deidentify` extra) only
when transcripts are de-identified.
"""
