"""One session: model profiles (`profiles`), the mock model's policy (`model`), the replay kernel
(`kernel`: the loop; `window`, the window engine it shares with the accounting replay; `tool_player`,
`billing`, `throttling`, `clock`, `agent`, `fact_lines`: its parts), the accounting replay of a recorded
session (`recorded`), loop detection (`loops`), the per-call and per-session records (`metrics`), the
per-turn event log (`events`), memory across the sessions of a series (`memory`) and the calibration
probes (`calibration`). Imports `strategies`, `scenarios` and `harness.core`; nothing above."""
