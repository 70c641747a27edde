"""Field operations: `doctor` (is this device ready for a study day?).

May import everything below the wiring (`settings`, `store`, `engine`, `model`, `voice`,
`service`); heavy modules only inside the check that needs them. Never `app` or `cli`.
"""
