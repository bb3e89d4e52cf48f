"""Check a strands-agents conversation manager with the kit (strands is an optional dependency)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from strategies.testing.invariants import StrategyLike


def from_strands(manager: Any) -> Callable[[], StrategyLike]:
    """A factory of ctxbench strategies that each run a deep copy of the strands ``manager`` (a
    ``ConversationManager`` instance), for `check_invariants`. Needs strands installed."""
    # Imported here: strands is optional and the bridge needs it only when a manager runs.
    from strategies.strands_bridge import StrandsManagerStrategy

    def build() -> StrategyLike:
        strategy = StrandsManagerStrategy()
        strategy.manager = copy.deepcopy(manager)
        return strategy

    return build
