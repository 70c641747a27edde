"""Build-time tools of the on-device model: train, export, quantize and fit it. Never imported by
the runtime package `companion`. The modules that train, export or quantize need the build extra
(torch, onnx); the others run on the runtime's dependencies. The test install has no build
extra: the tests import only the latter (`ackfit`, `calibrate_ack`) and read the others'
source.

The modules are in three layers. A module imports modules of its own layer or the layers below,
never one above, and no import circle; the tools import no other tool (each runs as a script,
`.venv/bin/python models/TOOL.py`). tests/models/test_layering.py enforces this table:

1. Shared (import no other module here):
   `graph` (the graph's shapes and window, the quantizable units and their nodes, the
   transformer fusion), `minilm` (the MiniLM encoder in plain torch), `ackfit` (fitting the
   acknowledgement rule to labelled probabilities).
2. Quantization: `deterministic` (the same-bits int8 graph of the shipped model), `quant` (the
   scheme QUANT, `quantize` by it, and the previous fused scheme `quantize_fused`).
3. Tools: `build` (train, export, quantize, write the model and its sidecar), `optimize` (graph
   and quantization variants that tests/bench compares), `quant_sweep` (which units stay fp32),
   `calibrate_ack` (the acknowledgement rule), `fit_matching` (the [matching] weights),
   `confusions` (the model's confusions), `bank_cache` (the shipped bank's encodings).

Every module may import `companion` (the runtime), never the other way round.
"""
