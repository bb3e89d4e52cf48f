"""Per-call and per-session records: the rows of ``calls.parquet`` and ``sessions.parquet``
(docs/design.md, "sessions.parquet columns"). Plain frozen values, cheap to build on the hot path; their
fields are the columns `harness.core.tables` declares (a test keeps the two equal)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any

from harness.core.tables import OUTCOMES, SESSION_COLUMNS, CallKind, Outcome, defaults, names
from harness.sim.clock import SimClock

__all__ = [
    "MEMORY_COLUMNS",
    "MEMORY_OFF_ROW",
    "OUTCOMES",
    "SERIES_COLUMNS",
    "THRASH_TURNS",
    "CallKind",
    "CallRecord",
    "Outcome",
    "SessionEnded",
    "SessionRecord",
    "Tally",
    "session_record",
]


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One model call (an agent turn, a summary, or a hand-over)."""

    scenario: str
    session_index: int
    strategy: str
    agent: str
    call_index: int
    call_kind: CallKind
    step_id: str
    attempt: int
    #: What the call was for: step | retrieve | refetch | shortcut | fix | resend | final | text | handoff |
    #: summary. A malformed call keeps its intended purpose here; ``malformed_kind`` says what was wrong.
    action: str
    malformed_kind: str
    input_tokens: int
    cached_input_tokens: int
    cache_write_tokens: int
    output_tokens: int
    context_tokens: int
    noise: float
    model_s: float
    clock_s: float
    cost_usd: float
    #: Tokens the strategy's compactions took out of this agent's window since its previous call
    #: (docs/sdk-strategies.md 3: the report's histogram of tokens freed).
    tokens_freed: int
    #: The decision trace: for each needed key, whether it was visible, x, p, u and the branch.
    trace: str

    def as_row(self) -> dict[str, Any]:
        # Every field is a scalar, so this is `dataclasses.asdict` without its recursive deep copy,
        # which cost a tenth of a replay.
        return dict(zip(_CALL_FIELDS, _call_values(self), strict=True))


#: A compaction this many turns or fewer after the agent's previous one counts as thrash
#: (docs/sdk-strategies.md 3).
THRASH_TURNS = 3


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One session replayed under one strategy."""

    scenario: str
    session_index: int
    seed: int
    strategy: str
    outcome: Outcome
    contracts: bool
    errors: str
    breaker: bool
    #: The ``output_cap_chars`` switch the session ran with (0: uncapped).
    output_cap_chars: int
    #: The ``token_budget`` the session ran with (0: none).
    token_budget: int
    #: The ``normalize_tool_names`` switch the session ran with.
    normalize_tool_names: bool
    family: str
    agents: int
    turns: int
    model_calls: int
    summary_calls: int
    tool_calls: int
    tool_syntax_errors: int
    syntax_errors_reaching_tool: int
    #: Tool calls naming a registered tool with ``-`` and ``_`` swapped (``kubectl_logs`` for
    #: ``kubectl-logs``), run or refused; each refused one is also a tool-syntax error.
    name_variants: int
    engineering_errors: int
    retrieve_calls: int
    refetches: int
    #: Steps done again after being done once (docs/model.md v3 change 1): every trace of them left the
    #: context (the agent started over, or re-explored to find a fact whose source it no longer saw).
    redone_steps: int
    wrong_values: int
    unsafe_actions: int
    nudges: int
    loop_detected: bool
    loop_rule: str
    facts_lost: int
    #: Facts the tool-output cap cut from an output that held them (a produced fact cut there may never
    #: reach the context: no strategy can bring it back).
    facts_cut: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    context_tokens_mean: float
    context_tokens_peak: int
    overflow_events: int
    throttle_retries: int
    latency_s: float
    tool_s: float
    backoff_s: float
    cost_usd: float
    summary_cost_usd: float
    #: Times a strategy hook took tokens out of what the model sees (a clear, summary, slide or mask;
    #: offloading a result as it arrives is not one: the model never saw it whole).
    compactions: int
    #: Agent calls whose prompt changed inside what the previous call sent, so the cached prefix
    #: ends there (what Anthropic's ``clear_at_least`` exists to make worth it).
    cache_breaking_edits: int
    #: Compactions within `THRASH_TURNS` turns of the agent's previous compaction.
    thrash: int
    #: Tokens all compactions took out of the window.
    tokens_freed: int
    error: str = ""

    def as_row(self) -> dict[str, Any]:
        return dict(zip(_SESSION_FIELDS, _session_values(self), strict=True))


_CALL_FIELDS = tuple(f.name for f in fields(CallRecord))
_call_values = attrgetter(*_CALL_FIELDS)
_SESSION_FIELDS = tuple(f.name for f in fields(SessionRecord))
_session_values = attrgetter(*_SESSION_FIELDS)


@dataclass(slots=True)
class Tally:
    """Running counters of one session (all agents), turned into a SessionRecord at the end by
    `session_record`: a counter named like a SessionRecord column is that column."""

    turns: int = 0
    model_calls: int = 0
    summary_calls: int = 0
    tool_calls: int = 0
    tool_syntax_errors: int = 0
    syntax_errors_reaching_tool: int = 0
    name_variants: int = 0
    engineering_errors: int = 0
    retrieve_calls: int = 0
    refetches: int = 0
    redone_steps: int = 0
    wrong_values: int = 0
    unsafe_actions: int = 0
    nudges: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    context_tokens_peak: int = 0
    overflow_events: int = 0
    cost_usd: float = 0.0
    summary_cost_usd: float = 0.0
    compactions: int = 0
    cache_breaking_edits: int = 0
    thrash: int = 0
    tokens_freed: int = 0
    #: Sum and count of the agent calls' prompt tokens (their mean is ``context_tokens_mean``).
    agent_context_tokens_sum: int = 0
    agent_calls: int = 0
    #: Keys the model needed but could not see although a producer had shown them (``facts_lost``).
    lost_keys: set[str] = field(default_factory=set)
    #: Keys whose value a tool output held but the output cap cut away (``facts_cut``).
    cut_keys: set[str] = field(default_factory=set)
    #: The ``normalize_tool_names`` switch the session's tool player ran with (it sets this), recorded
    #: with the session like the other switches.
    normalize_tool_names: bool = False


#: The SessionRecord columns that are plain tally counters, copied by name.
_COUNTED = tuple(f.name for f in fields(SessionRecord) if f.name in Tally.__dataclass_fields__)


def session_record(tally: Tally, clock: SimClock, *, outcome: Outcome, loop_rule: str, throttle_retries: int,
                   scenario: str, session_index: int, seed: int, strategy: str, contracts: bool, errors: str,
                   breaker: bool, output_cap_chars: int, token_budget: int, family: str, agents: int,
                   error: str = "") -> SessionRecord:
    """The row of a finished session: its identity and switches, the outcome, every tally counter
    under its own name, and the figures derived from the tally and the clock."""
    counted = {name: getattr(tally, name) for name in _COUNTED}
    return SessionRecord(
        scenario=scenario, session_index=session_index, seed=seed, strategy=strategy, outcome=outcome,
        contracts=contracts, errors=errors, breaker=breaker, output_cap_chars=output_cap_chars,
        token_budget=token_budget, family=family, agents=agents,
        loop_detected=outcome == "stuck", loop_rule=loop_rule, facts_lost=len(tally.lost_keys),
        facts_cut=len(tally.cut_keys),
        context_tokens_mean=round(tally.agent_context_tokens_sum / tally.agent_calls, 3) if tally.agent_calls else 0.0,
        throttle_retries=throttle_retries, latency_s=round(clock.now, 6), tool_s=round(clock.spent["tool"], 6),
        backoff_s=round(clock.spent["backoff"], 6), error=error, **counted,
    )


class SessionEnded(BaseException):
    """Ends a session replay with an outcome. A BaseException on purpose: it may be raised inside a
    strategy hook (a summary call that spends the token budget or is throttled out), and the
    strategies' best-effort handlers, which catch Exception, must not swallow it."""

    def __init__(self, outcome: Outcome, rule: str = "") -> None:
        super().__init__(outcome)
        self.outcome = outcome
        self.rule = rule


#: The sessions columns of a run with ``[series]`` (none otherwise, so a run without series keeps its
#: tables byte for byte): where the session sits in its series, then what its memory did.
SERIES_COLUMNS = names(SESSION_COLUMNS, ("series",))
MEMORY_COLUMNS = names(SESSION_COLUMNS, ("memory",))
#: A memory-off variant's values of `MEMORY_COLUMNS` in a series run: their defaults.
MEMORY_OFF_ROW: dict[str, Any] = defaults(c for c in SESSION_COLUMNS if c.group == "memory")
