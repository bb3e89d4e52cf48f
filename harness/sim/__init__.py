"""One session, simulated: model profiles (`profiles`), the mock model's policy (`model`), the replay
kernel (`kernel`: the loop; `tool_player`, `billing`, `throttling`, `clock`, `agent`: its parts),
loop detection (`loops`), the per-call and per-session records (`metrics`) and the calibration
probes (`calibration`). Imports `strategies`, `scenarios` and `harness.core`; nothing above."""
