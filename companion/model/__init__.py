"""The on-device model: the ONNX encoder (`encode`), match scores (`similarity`), per-participant
preference learning (`personalize`) and the empathic story chooser (`empathy`).

May import: the foundation modules, `settings`, `store` and `engine` (the chooser plugs into
the engine's `StoryChooser`). Never `voice`, `research`, `service`, `ops`, `app` or `cli`.
onnxruntime and tokenizers are imported only when a model is loaded.
"""
