"""reports.identical: strategies whose session rows agree in every column are found and shown once."""

from __future__ import annotations

import pandas as pd

from reports.identical import identical_groups, merge_identical


def rows(strategy: str, tokens: list[int]) -> list[dict[str, object]]:
    return [{"scenario": "mix", "session_index": i, "strategy": strategy, "outcome": "success", "input_tokens": t}
            for i, t in enumerate(tokens)]


def test_strategies_with_the_same_rows_in_any_order_form_one_group_in_the_runs_order() -> None:
    frame = pd.DataFrame(rows("b", [1, 2, 3]) + rows("a", [1, 2, 3])[::-1] + rows("c", [1, 2, 4]))
    groups = identical_groups(frame, ["b", "a", "c"])
    assert [g.strategies for g in groups] == [("b", "a")]
    assert groups[0].name == "b = a"
    assert groups[0].sessions == 3 and groups[0].columns == 4
    merged = merge_identical(frame, groups)
    assert sorted(set(merged["strategy"])) == ["b = a", "c"]
    assert len(merged) == 6


def test_one_differing_value_in_any_column_keeps_strategies_apart() -> None:
    a, b = rows("a", [1, 2, 3]), rows("b", [1, 2, 3])
    b[1]["outcome"] = "stuck"
    assert identical_groups(pd.DataFrame(a + b), ["a", "b"]) == []
    fewer = rows("c", [1, 2])
    assert identical_groups(pd.DataFrame(a + fewer), ["a", "c"]) == []
