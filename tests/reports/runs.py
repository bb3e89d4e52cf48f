"""The small real run the report and compare tests are made from."""

from __future__ import annotations

from typing import Any

SMALL_RUN: dict[str, Any] = {
    "sessions": 12,
    "seed": 3,
    "batch_size": 4,
    "executor": "serial",
    "scenarios": [{"name": "mix", "turns": 20}],
    "strategies": [{"name": "unbounded"}, {"name": "sliding_window", "label": "sw20", "window_size": 20},
                   {"name": "offload_contracts"}],
}
