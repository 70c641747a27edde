"""The always-on service: the daily plan (`schedule`, pure functions of time), the APScheduler
runner (`runner`), `companion status` (`status`) and the service's terminal (`terminal`).

May import: the foundation modules, `settings`, `store` and `engine`. Never `voice`, `model`,
`research`, `ops`, `app` or `cli`: the runner is handed its channel and story chooser.
Only `runner` imports APScheduler; `status` does not import `runner`.
"""
