"""The secret rules and the engine that applies them, one module per layer.

`rules` (formats, with `vendors`), `structure` and `cli` (a value secret by where it
sits), `names` (secret names in the other syntaxes), `entropy` (generated-looking tokens
near a secret word) and `spread` (a value found once is redacted everywhere); `base` holds
the shared pieces and `scan` the engine. `scorer.prepare.redact` applies them to whole
sessions; docs/security.md describes the layers.
"""
