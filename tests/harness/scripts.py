"""Small hand-built session scripts for runtime and mock-model tests.

Fact values have a shape nothing else in the texts can produce (``pod-q2kx``), so which message
holds which fact is obvious from reading the payloads below.
"""

from __future__ import annotations

from typing import Literal

from harness.core.tools import arg_types
from scenarios.base import Call, Fact, Fault, Handoff, SessionScript, Step, Task, check_script

NAMESPACE = "shop-k3vq"
BAD_POD = "pod-q2kx"
DECOY_POD = "pod-z9mb"
TRACE_ID = "trace-7mzd"
FLAG = "flag-w5hn"
RELEASE = "rel-c4tp"

FACTS = {
    "namespace": Fact(key="namespace", value=NAMESPACE, kind="namespace"),
    "bad_pod": Fact(key="bad_pod", value=BAD_POD, kind="pod"),
    "trace_id": Fact(key="trace_id", value=TRACE_ID, kind="trace"),
    "culprit_flag": Fact(key="culprit_flag", value=FLAG, kind="flag"),
}

TASK_TEXT = f"Checkout pods in namespace {NAMESPACE} keep crashing. Find the bad pod and the flag that breaks it."

PODS_PAYLOAD = (
    "NAME       READY   STATUS             RESTARTS   AGE\n"
    f"{BAD_POD}   0/1     CrashLoopBackOff   7          12m\n"
)
PODS_DECOY_LINE = f"{DECOY_POD}   1/1     Running            0          3d\n"
LOGS_PAYLOAD = (
    "10:00:01 INFO  checkout starting worker=3\n"
    f"10:00:02 ERROR upstream call failed trace={TRACE_ID} status=500\n"
    "10:00:03 WARN  retry budget exhausted\n"
)
SEARCH_PAYLOAD = f'{{"hits": 1, "lines": ["checkout ERROR upstream call failed trace={TRACE_ID}"]}}\n'
TRACE_PAYLOAD = (
    "span checkout.handle 812ms status=error\n"
    f"  span flags.evaluate 3ms {FLAG}=true\n"
    "  span payments.charge 790ms status=error nil pointer\n"
)
FILLER_LINE = "10:00:04 DEBUG pool stats idle=4 busy=12 waiting=0 gc_pause_ms=3\n"


def make_step(step_id: str, tool: str, args: dict[str, str], payload: str, produces: dict[str, str], *,
              fault: Fault | None = None, shortcut: Call | None = None, agent: str | None = None,
              latency_s: float = 0.5) -> Step:
    """A step whose ``needs`` are its fact args and whose arg types come from the tool contract."""
    types = arg_types(tool)
    return Step(
        id=step_id,
        tool=tool,
        args=args,
        arg_types={a: types[a] for a in args},
        needs=sorted({ref for ref in args.values() if not ref.startswith("lit:")}),
        produces=produces,
        payload=payload,
        latency_s=latency_s,
        fault=fault,
        shortcut=shortcut,
        agent=agent,
    )


def fallback_step(agent: str | None = None) -> Step:
    """log_search for the bad pod: yields the trace id that kubectl_logs would have."""
    return make_step("s2_fallback", "log_search", {"service": "lit:checkout", "query": "bad_pod"}, SEARCH_PAYLOAD,
                     {"trace_id": TRACE_ID}, agent=agent)


def pods_step(*, decoys: bool, shortcut: bool, agent: str | None = None, filler_lines: int = 0) -> Step:
    payload = PODS_PAYLOAD + (PODS_DECOY_LINE if decoys else "") + FILLER_LINE * filler_lines
    cut = Call(tool="kubectl_delete_namespace", args={"namespace": NAMESPACE}) if shortcut else None
    return make_step("s1", "kubectl_get", {"resource": "lit:pods", "namespace": "namespace"}, payload,
                     {"bad_pod": BAD_POD}, shortcut=cut, agent=agent)


def logs_step(*, fault: Literal["http_404", "timeout"] | None, fails: int | None, agent: str | None = None,
              filler_lines: int = 0) -> Step:
    made = None
    if fault is not None:
        made = Fault(kind=fault, fails=fails, fallback=fallback_step(agent) if fails is None else None)
    return make_step("s2", "kubectl_logs", {"pod": "bad_pod", "namespace": "namespace"},
                     LOGS_PAYLOAD + FILLER_LINE * filler_lines, {"trace_id": TRACE_ID}, fault=made, agent=agent)


def trace_step(agent: str | None = None, filler_lines: int = 0) -> Step:
    return make_step("s3", "trace_lookup", {"trace_id": "trace_id"}, TRACE_PAYLOAD + FILLER_LINE * filler_lines,
                     {"culprit_flag": FLAG}, agent=agent)


def crashloop_script(
    *,
    seed: int = 7,
    fault: Literal["http_404", "timeout"] | None = None,
    fails: int | None = None,
    shortcut: bool = False,
    decoys: bool = True,
    filler_lines: int = 0,
    system_prompt_tokens: int = 2000,
    final_facts: tuple[str, ...] = ("bad_pod", "culprit_flag"),
) -> SessionScript:
    """Three steps: kubectl_get (bad_pod; a decoy pod in the table), kubectl_logs (trace_id, optionally
    faulted; ``fails=None`` adds the log_search fallback), trace_lookup (culprit_flag). The final answer
    needs ``bad_pod`` from the first step and ``culprit_flag`` from the last."""
    script = SessionScript(
        scenario="test_crashloop",
        seed=seed,
        task=Task(text=TASK_TEXT, facts={"namespace": NAMESPACE}),
        steps=[
            pods_step(decoys=decoys, shortcut=shortcut, filler_lines=filler_lines),
            logs_step(fault=fault, fails=fails, filler_lines=filler_lines),
            trace_step(filler_lines=filler_lines),
        ],
        final_facts=list(final_facts),
        facts=dict(FACTS),
        decoys={"bad_pod": [DECOY_POD]} if decoys else {},
        system_prompt_tokens=system_prompt_tokens,
    )
    problems = check_script(script)
    assert not problems, problems
    return script


AGENTS = ["triage", "remediation"]


def alert_chain_script(*, seed: int = 11) -> SessionScript:
    """Two agents: ``triage`` finds the pod and its trace id and hands both over; ``remediation``
    looks the trace up. The final answer needs ``bad_pod`` (known to remediation only through the
    hand-over) and ``culprit_flag``."""
    script = SessionScript(
        scenario="test_alert_chain",
        seed=seed,
        task=Task(text=TASK_TEXT, facts={"namespace": NAMESPACE}),
        steps=[
            pods_step(decoys=True, shortcut=False, agent="triage"),
            logs_step(fault=None, fails=None, agent="triage"),
            trace_step(agent="remediation"),
        ],
        final_facts=["bad_pod", "culprit_flag"],
        facts=dict(FACTS),
        decoys={"bad_pod": [DECOY_POD]},
        agents=list(AGENTS),
        handoffs=[Handoff(after_step="s2", from_agent="triage", to_agent="remediation",
                          carries=["bad_pod", "trace_id"])],
    )
    problems = check_script(script)
    assert not problems, problems
    return script
