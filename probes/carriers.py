"""Reasoning carriers: the replay eval's text step, run on a plan's own route within the probe's budget.

For a plan whose reasoning codec is not ``none`` (the model returns reasoning, so whether and how
to replay it is a claim), the probe runs step 1 of the reasoning-replay eval
(``capplan.evals.reasoning_replay``) against the plan's route: at the ``in_loop`` and
``cross_turn`` positions, the ``none`` baseline and every synthetic carrier the eval knows for the
route's wire kind (chat: ``reasoning_content``, ``reasoning``, ``reasoning_details``, ``all``;
Responses: ``summary_item``, ``content_item``). Everything about those requests is the eval's: its
fixture and trace, its wire bodies, its client, its text step, its signals and verdicts, and its
overlay writer. The probe only supplies the route, taken from the plan exactly as trials send it
(the URL and headers of the plan's own request: binding, keys, gateway, ``--api-base``) and the
plan's own generation settings (its temperature, effort and output-cap name ride in the eval's
``extra``), and it keeps the eval's client inside the probe's budget.

Choices that differ from ``capplan replay run``, and why:

- the neutral ``alt`` probe wording from the start: the eval reruns a position with it after a 403
  on the standard wording (xAI), which would make the number of requests depend on the answer; the
  dry run must list exactly what can be sent;
- step 2 (the opaque replay of the model's own carriers) is not run: it needs a live turn 1 whose
  tool call and carrier the model may or may not return, escalating the effort until it does, so
  its request count has no fixed bound; a codec that replays opaque carriers
  (``reasoning.encrypted_content``) is listed as not compared;
- no retry of any answer (``retries=0``), no settings discovery (the plan's settings are what is
  asked about), and the eval's folder is a temporary one: a probe measures today, never resumes.

One addition: where a position's baseline (no carrier) is refused with a 4xx that judges the
request, the eval stops that position; the probe then sends the same carrier requests the eval
would have sent (they are in the budget already), so a route that *requires* a carrier (DeepSeek's
``Missing `reasoning_content` field …``) is told from one that refuses everything.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from capplan.core.redaction import redact_text
from capplan.evals.reasoning_replay import redact as eval_redact
from capplan.evals.reasoning_replay.analysis import overlay as eval_overlay
from capplan.evals.reasoning_replay.analysis.signals import Signal, measure
from capplan.evals.reasoning_replay.analysis.summary import load, rows
from capplan.evals.reasoning_replay.analysis.verdicts import verdict
from capplan.evals.reasoning_replay.budget import Budget
from capplan.evals.reasoning_replay.errors import BudgetExhausted
from capplan.evals.reasoning_replay.fixture import PROBES, Session, make_session
from capplan.evals.reasoning_replay.outcome import TRANSIENT, CellOutcome
from capplan.evals.reasoning_replay.provider.client import CallSpec, Result
from capplan.evals.reasoning_replay.provider.client import Client as EvalClient
from capplan.evals.reasoning_replay.provider.credentials import NoKey
from capplan.evals.reasoning_replay.provider.lanes import DIRECT
from capplan.evals.reasoning_replay.provider.pricing import Price, PriceList
from capplan.evals.reasoning_replay.provider.ratelimit import RateLimiter
from capplan.evals.reasoning_replay.routes import Route
from capplan.evals.reasoning_replay.run.context import Options, RunContext
from capplan.evals.reasoning_replay.run.scheduler import Cell, record_state
from capplan.evals.reasoning_replay.run.text_step import run_text_cell
from capplan.evals.reasoning_replay.store.outdir import OutDir
from capplan.evals.reasoning_replay.wire import wire_for
from capplan.evals.reasoning_replay.wire.carriers import VARIANTS, synthetic
from capplan.evals.reasoning_replay.wire.knobs import Knobs
from capplan.executor.client import Client
from capplan.executor.cost_bound import OUTPUT_CAP_KEYS, worst_case_usd
from capplan.executor.direct.request import RequestMapper
from capplan.executor.plan import Plan
from capplan.executor.registry import RegistryError, policy_class
from capplan.probes.evidence import RouteIdentity, bounded, total_usd
from capplan.probes.questions import PROBE_MAX_TOKENS
from capplan.probes.runner import SETUP_STATUSES, ProbePlan

#: the eval's two default positions (``loop_steps`` is its opt-in, three times the trace: left out)
POSITIONS = ("in_loop", "cross_turn")
#: the eval's neutral probe wording, used from the start (see the module docstring)
WORDING = "alt"
#: a fixed seed, so the trace, and so every request's fingerprint, is the same in the dry run and
#: in every probe (two probes of one route compare request for request)
SEED = 36
#: the eval's wire kind of each protocol a probe can ask
KIND_OF_PROTOCOL = {"openai-chat": "chat", "openai-responses": "responses", "xai-responses": "responses"}
#: body keys the eval's wire sets itself (the conversation, its tools, its output cap); every other
#: key of the plan's own request rides along as the eval's ``extra``
EVAL_KEYS = frozenset({"model", "messages", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
                       *OUTPUT_CAP_KEYS})
#: a verdict of the eval, as the replay scope the compiler makes of it (compiler/replay_evidence.py)
SCOPE_OF_VERDICT = {"consumes-all-turns": "all_turns", "in-loop-only": "in_loop",
                    "accepted-ignored": "never", "rejected": "never"}
#: the headers whose value is a credential (the direct transport's ``Authorization`` and Azure's ``api-key``)
CREDENTIAL_HEADERS = frozenset({"authorization", "api-key", "x-api-key"})
#: seconds one carrier request may take (the eval's own default is 180 s; a probe asks a small question)
TIMEOUT_S = 60.0

CarrierOutcome = Literal["consumed", "accepted", "rejected", "required", "not measured"]


@dataclass(frozen=True)
class CarrierRequest:
    """One request of the eval's text step, as it will go on the wire."""

    position: str
    variant: str
    #: sha256 of the exact bytes the eval's client sends (its ``calls.jsonl`` names the same hash)
    fingerprint: str
    worst_usd: float | None

    @property
    def id(self) -> str:
        return f"carrier:{self.position}:{self.variant}"


@dataclass(frozen=True)
class CarrierPlan:
    """The carrier requests of one plan, and the route and settings they go out with."""

    plan: Plan
    route: RouteIdentity
    kind: str
    #: the model as the plan's request body names it
    model: str
    base_url: str
    #: the plan's request headers (its key among them: never printed, never written)
    headers: dict[str, str] = field(repr=False)
    extra: dict[str, Any]
    knobs: Knobs
    session: Session
    requests: tuple[CarrierRequest, ...]

    def worst_usd(self) -> float | None:
        """The most every carrier request can cost (None: the plan has no price)."""
        return total_usd(request.worst_usd for request in self.requests)


@dataclass(frozen=True)
class PositionResult:
    """One carrier at one position: the eval's class, its delta, status and exact error text."""

    position: str
    klass: str
    delta: int | None
    status: int | None
    detail: str | None

    def as_json(self) -> dict[str, Any]:
        return {"position": self.position, "class": self.klass, "delta": self.delta, "status": self.status,
                "detail": self.detail}


@dataclass(frozen=True)
class CarrierResult:
    """What the route did with one carrier today."""

    carrier: str
    outcome: CarrierOutcome
    #: the eval's verdict for this carrier alone (``consumes-all-turns`` …), ``required`` or ``not measured``
    verdict: str
    positions: tuple[PositionResult, ...]
    reason: str | None = None

    @property
    def scope(self) -> str | None:
        """The replay scope the verdict supports (``required``: the route needs the carrier)."""
        return "required" if self.verdict == "required" else SCOPE_OF_VERDICT.get(self.verdict)

    def evidence(self) -> str:
        """The per-position answers in one line: ``in-loop consumed +412; cross-turn rejected HTTP 400 "…"``."""
        parts = []
        for p in self.positions:
            amount = f"{p.delta:+d}" if p.delta is not None else (
                f"HTTP {p.status}" if p.status and p.klass != "required" else "")
            text = f" {json.dumps(p.detail, ensure_ascii=False)}" if p.detail and p.klass != "consumed" else ""
            parts.append(f"{p.position.replace('_', '-')} {p.klass} {amount}".rstrip() + text)
        return "; ".join(parts) or (self.reason or "no request answered")

    def as_json(self) -> dict[str, Any]:
        return {"carrier": self.carrier, "outcome": self.outcome, "verdict": self.verdict, "scope": self.scope,
                "reason": self.reason, "evidence": self.evidence(), "positions": [p.as_json() for p in self.positions]}


@dataclass(frozen=True)
class CarrierRecord:
    """Everything the carrier questions of one plan found."""

    plan_key: str
    kind: str
    trace_tokens: float
    results: tuple[CarrierResult, ...]
    #: the requests by id, with the outcome of each (status, or why it was not sent)
    requests: tuple[dict[str, Any], ...]
    #: the ``reasoning_replay:`` overlay block (the eval's own writer), or None when nothing was measured
    overlay: str | None
    stopped: str | None = None
    sent: int = 0
    reserved_usd: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "trace_tokens": self.trace_tokens, "stopped": self.stopped, "sent": self.sent,
                "carriers": [r.as_json() for r in self.results], "requests": list(self.requests)}


def unasked_reason(plan: Plan) -> str | None:
    """Why the carrier questions do not apply to ``plan`` (None: they do)."""
    codec = plan.policies["reasoning_codec"].name
    if codec == "none":
        return "its reasoning codec is none: the plan reads no reasoning, so it replays none"
    wire = plan.wire
    if wire is None or wire.protocol not in KIND_OF_PROTOCOL:
        return "the replay eval's text step speaks chat completions and the Responses API only"
    return None


def plan_carriers(client: Client, probe: ProbePlan) -> CarrierPlan | str:
    """The carrier requests for ``client``'s plan, or why there are none."""
    plan = client.plan
    reason = unasked_reason(plan)
    if reason is not None:
        return reason
    baseline = probe.questions[0]
    if baseline.built is None:
        return f"the plan's own request cannot be built: {baseline.skipped}"
    assert plan.wire is not None  # unasked_reason checked the protocol
    kind = KIND_OF_PROTOCOL[plan.wire.protocol]
    wire_request = RequestMapper(plan, client.environment).map(baseline.built.kwargs)
    body = wire_request.body
    path = wire_for(kind).path("")
    if not wire_request.url.endswith(path):
        return f"the plan's endpoint does not end in {path}, where the replay eval's {kind} requests go"
    cap_name = next((name for name in OUTPUT_CAP_KEYS if name in body), "max_tokens")
    # the eval's wire sets no temperature or effort of its own (temperature=None, style none): the
    # plan's own values, and every other setting of its request, ride in ``extra``
    knobs = Knobs(temperature=None, effort=None, effort_style="none",
                  max_tokens_key=cap_name if kind == "chat" else "max_tokens")
    extra = {k: v for k, v in body.items() if k not in EVAL_KEYS}
    model = str(body.get("model", ""))
    session = make_session(SEED)
    requests = []
    for position in POSITIONS:
        for variant in VARIANTS[kind]:
            data = _body_bytes(kind, model, position, variant, session, knobs, extra)
            requests.append(CarrierRequest(position, variant, hashlib.sha256(data).hexdigest(),
                                           worst_case_usd(plan, json.loads(data))))
    headers = {k: v for k, v in wire_request.headers.items() if k.lower() != "content-type"}
    return CarrierPlan(plan, probe.route, kind, model, wire_request.url[: -len(path)], headers, extra, knobs, session,
                       tuple(requests))


def _payload(kind: str, position: str, variant: str, session: Session) -> list[dict[str, Any]]:
    return synthetic(kind, position, variant, session.trace, PROBES[WORDING])


def _body_bytes(kind: str, model: str, position: str, variant: str, session: Session, knobs: Knobs,
                extra: dict[str, Any]) -> bytes:
    """The bytes the eval's client sends for one request (it serialises the same way)."""
    body = wire_for(kind).body(model, _payload(kind, position, variant, session), knobs, PROBE_MAX_TOKENS,
                               json.loads(json.dumps(extra)))
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


class _Ledger:
    """The probe's budget as the carrier requests spend it: requests and worst-case dollars left."""

    def __init__(self, max_requests: int | None, max_cost: float | None) -> None:
        self.max_requests = max_requests
        self.max_cost = max_cost
        self.sent = 0
        self.reserved = 0.0

    def reserve(self, worst: float | None) -> None:
        """Count one request about to be sent; raises the eval's BudgetExhausted when it would pass a limit."""
        if self.max_requests is not None and self.sent >= self.max_requests:
            raise BudgetExhausted("over budget: the --max-requests budget is spent")
        cost = worst or 0.0
        if self.max_cost is not None and self.reserved + cost > self.max_cost:
            raise BudgetExhausted(f"over budget: this request could cost ${cost:.6f}, which would pass --max-cost "
                                  f"(${self.max_cost:.6f} left, ${self.reserved:.6f} reserved so far)")
        self.sent += 1
        self.reserved += cost


@dataclass
class _ProbeClient(EvalClient):
    """The eval's client, sending with the plan's headers and inside the probe's budget.

    ``call`` is the eval's own; only the reservation before it (the probe's ledger, priced by the
    plan as every probe request is) and the headers (the plan's, so the key, the gateway's headers
    and the binding's extra headers are the trials') are the probe's.
    """

    plan: Plan | None = None
    ledger: _Ledger | None = None
    plan_headers: dict[str, str] = field(default_factory=dict, repr=False)
    #: the plan's own settings, sent with every request (the eval's text step passes no ``extra``)
    plan_extra: dict[str, Any] = field(default_factory=dict)

    def call(self, spec: CallSpec, annotate: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> Result:
        assert self.plan is not None and self.ledger is not None
        if spec.extra is None:
            spec = replace(spec, extra=json.loads(json.dumps(self.plan_extra)))
        body = self.wire.body(spec.model, spec.payload, spec.knobs, spec.max_tokens, spec.extra)
        self.ledger.reserve(worst_case_usd(self.plan, body))
        return super().call(spec, annotate)

    def _headers(self, key: str) -> dict[str, str]:
        return {"Content-Type": "application/json", **self.plan_headers}


def run_carriers(client: Client, cplan: CarrierPlan, *, max_requests: int | None = None,
                 max_cost: float | None = None) -> CarrierRecord:
    """Run the eval's text step on the plan's route, within what is left of the budget."""
    for name, value in cplan.headers.items():
        if name.lower() in CREDENTIAL_HEADERS:
            # the eval's records never hold the key (and they stay in a temporary folder)
            eval_redact.register(value.removeprefix("Bearer ").strip())
    ledger = _Ledger(max_requests, max_cost)
    stopped: str | None = None
    with tempfile.TemporaryDirectory(prefix="capplan-probe-carriers-") as tmp:
        out = OutDir(Path(tmp) / "replay")
        try:
            ctx = _context(cplan, out, ledger)
            for position in POSITIONS:
                cell = Cell(ctx.route.name, cplan.model, "text", position)
                if stopped is not None:
                    record_state(ctx, cell, CellOutcome("budget-exhausted", final=False, reason=stopped))
                    continue
                try:
                    outcome = run_text_cell(ctx, cplan.model, position, cell.key)
                    if outcome.state == "baseline-failed":
                        _carriers_after_refused_baseline(ctx, cplan, position)
                except BudgetExhausted as exc:
                    stopped = str(exc)
                    outcome = CellOutcome("budget-exhausted", final=False, reason=stopped)
                record_state(ctx, cell, outcome)
            records, _ = out.calls.read()
            table = rows(load(out))
        finally:
            out.close()
    redact = client.redactor.text
    results = tuple(_results(cplan, records, redact))
    return CarrierRecord(cplan.plan.model.key, cplan.kind, cplan.session.trace_tokens, results,
                         tuple(_request_rows(cplan, records, stopped, redact)),
                         _overlay(cplan, table, results, redact), stopped, ledger.sent, ledger.reserved)


def _context(cplan: CarrierPlan, out: OutDir, ledger: _Ledger) -> RunContext:
    route = Route(name=provider_key(cplan.plan), kind=cplan.kind, base_url=cplan.base_url, key="", rps=0.0)
    pricing = cplan.plan.pricing
    price = Price(float(pricing.input) / 1e6, float(pricing.output) / 1e6, "plan") if pricing else Price(0.0, 0.0, "plan")
    eval_client = _ProbeClient(route=route, wire=wire_for(cplan.kind), keys=NoKey(), budget=Budget(out.costs, math.inf),
                               limiter=RateLimiter(0.0), out=out, prices=PriceList({cplan.model: price}),
                               canary=cplan.session.canary, run_id=f"probe-{time.strftime('%Y%m%dT%H%M%S')}",
                               retries=0, timeout=TIMEOUT_S, plan=cplan.plan, ledger=ledger,
                               plan_headers=dict(cplan.headers), plan_extra=cplan.extra)
    options = Options(variants=VARIANTS[cplan.kind], positions=POSITIONS, steps=("text",), want_direct=frozenset(),
                      lane_attempts=1, max_tokens=PROBE_MAX_TOKENS, turn1_max_tokens=PROBE_MAX_TOKENS, probe=WORDING)
    # the plan's settings are the ones asked about: saved, so the eval's settings discovery never runs
    return RunContext(route=route, client=eval_client, session=cplan.session, options=options,
                      saved_knobs={cplan.model: cplan.knobs})


def _carriers_after_refused_baseline(ctx: RunContext, cplan: CarrierPlan, position: str) -> None:
    """Send the position's carriers when its baseline was refused with a 4xx about the request."""
    records, _ = ctx.client.out.calls.read()
    base = [r for r in records if r.get("position") == position and r.get("variant") == "none"]
    status = base[-1].get("status") if base else None
    if not (isinstance(status, int) and 400 <= status < 500 and status not in TRANSIENT and status not in SETUP_STATUSES):
        return  # a 429, a 5xx, a transport error: nothing to tell apart, and nothing more is sent
    for variant in VARIANTS[cplan.kind]:
        if variant != "none":
            ctx.client.call(CallSpec(model=cplan.model, step="text", position=position, variant=variant, probe=WORDING,
                                     payload=_payload(cplan.kind, position, variant, cplan.session), knobs=cplan.knobs,
                                     max_tokens=PROBE_MAX_TOKENS,
                                     cell=Cell(ctx.route.name, cplan.model, "text", position).key))


def _measured(status: Any) -> bool:
    """Whether an answer with ``status`` judges the request (a 2xx, or a 4xx about the request itself)."""
    return isinstance(status, int) and (200 <= status < 300 or (
        400 <= status < 500 and status not in TRANSIENT and status not in SETUP_STATUSES))


def _results(cplan: CarrierPlan, records: list[dict[str, Any]], redact: Callable[[str], str]) -> list[CarrierResult]:
    """Each carrier's answers, judged by the eval's own signals and verdict rules."""
    text = [r for r in records if r.get("step") == "text"]
    table = _signals(cplan, text)
    out = []
    for variant in VARIANTS[cplan.kind]:
        if variant == "none":
            continue
        positions: list[PositionResult] = []
        signals: list[Signal] = []
        required_at: list[str] = []
        unmeasured: list[str] = []
        for position in POSITIONS:
            mine = [r for r in text if r.get("position") == position and r.get("variant") == variant]
            if not mine:
                unmeasured.append(f"{position}: not sent")
                continue
            record = mine[-1]
            signal = table.get((position, variant))
            klass = signal.klass if signal is not None else "error"
            detail = _detail(record, redact)
            status = record.get("status") if isinstance(record.get("status"), int) else None
            if not _measured(status) or klass in ("error", "no-usage"):
                unmeasured.append(f"{position}: {_why(record, redact)}")
                positions.append(PositionResult(position, "not measured", None, status, _why(record, redact)))
                continue
            if klass == "no-baseline":
                base = [r for r in text if r.get("position") == position and r.get("variant") == "none"]
                if base and _measured(base[-1].get("status")) and not base[-1].get("ok"):
                    required_at.append(position)
                    positions.append(PositionResult(position, "required", None, status,
                                                     f"without it: HTTP {base[-1].get('status')} {_detail(base[-1], redact)}"))
                else:
                    unmeasured.append(f"{position}: its baseline gave no measurement")
                    positions.append(PositionResult(position, "not measured", None, status, "no baseline"))
                continue
            assert signal is not None
            signals.append(signal)
            positions.append(PositionResult(position, klass, signal.delta, status, detail))
        out.append(_judge(variant, positions, signals, required_at, unmeasured))
    return out


def _signals(cplan: CarrierPlan, records: list[dict[str, Any]]) -> dict[tuple[str, str], Signal]:
    """The eval's signal for every (position, variant) measured (lane: the route's one)."""
    found: dict[tuple[str, str], Signal] = {}
    for position in POSITIONS:
        for signal in measure(records, DIRECT, "text", position, cplan.session.trace_tokens):
            found[(position, signal.variant)] = signal
    return found


def _judge(variant: str, positions: list[PositionResult], signals: list[Signal], required_at: list[str],
           unmeasured: list[str]) -> CarrierResult:
    if required_at:
        return CarrierResult(variant, "required", "required", tuple(positions))
    if not signals:
        return CarrierResult(variant, "not measured", "not measured", tuple(positions),
                             reason="; ".join(unmeasured) or "nothing measured")
    found = verdict(signals)
    if found not in SCOPE_OF_VERDICT:
        return CarrierResult(variant, "not measured", "not measured", tuple(positions), reason=found)
    if unmeasured and found in ("accepted-ignored", "rejected", "in-loop-only"):
        # the position not measured could have changed the verdict: no claim from half a measurement
        return CarrierResult(variant, "not measured", "not measured", tuple(positions), reason="; ".join(unmeasured))
    outcome: CarrierOutcome = ("consumed" if found in ("consumes-all-turns", "in-loop-only")
                               else "rejected" if found == "rejected" else "accepted")
    return CarrierResult(variant, outcome, found, tuple(positions))


def _detail(record: Mapping[str, Any], redact: Callable[[str], str]) -> str | None:
    error = record.get("error")
    return bounded(redact_text(redact(str(error)))) if error else None


def _why(record: Mapping[str, Any], redact: Callable[[str], str]) -> str:
    status = record.get("status")
    text = _detail(record, redact) or "no usable answer"
    if status == 429:
        return f"HTTP 429, rate limited: {text}"
    if isinstance(status, int) and status in SETUP_STATUSES:
        return f"HTTP {status}, {SETUP_STATUSES[status]}: {text}"
    return f"HTTP {status}: {text}" if status else text


def _request_rows(cplan: CarrierPlan, records: list[dict[str, Any]], stopped: str | None,
                  redact: Callable[[str], str]) -> list[dict[str, Any]]:
    by_hash = {str(r.get("request_sha256")): r for r in records if r.get("step") == "text"}
    out = []
    for request in cplan.requests:
        record = by_hash.get(request.fingerprint)
        row: dict[str, Any] = {"id": request.id, "fingerprint": request.fingerprint}
        if record is None:
            row.update(sent=False, status=None, detail=stopped or "not sent (the eval stopped this position)")
        else:
            row.update(sent=True, status=record.get("status"), prompt_tokens=record.get("prompt_tokens"),
                       detail=_detail(record, redact))
        out.append(row)
    return out


def _overlay(cplan: CarrierPlan, table: list[dict[str, Any]], results: tuple[CarrierResult, ...],
             redact: Callable[[str], str]) -> str | None:
    """The ``reasoning_replay:`` block, by the eval's own writer, of what was measured (None: nothing).

    A cell answered by a 429, a 5xx or a 401/403/404/407/408 is taken out first and the row's verdict
    worked out again by the eval's rules: such an answer claims nothing; so does a carrier the probe
    judged not measured (one position stopped by the budget, say). A row left with no verdict
    the compiler acts on is left out. The row is filed under the plan's provider key and model name,
    which is where the compiler looks for it (``compiler/replay_evidence.py``).
    """
    plan = cplan.plan
    judged = {r.carrier for r in results if r.outcome != "not measured"}
    kept = []
    for row in table:
        cells = [c for c in row.get("cells", []) if _measured(c.get("status")) and c.get("variant") in judged
                 and c.get("class") in ("consumed", "partial", "ignored", "rejected")]
        signals = [Signal(step=str(c["step"]), position=str(c["position"]), variant=str(c["variant"]),
                       klass=str(c["class"]), delta=c.get("delta"), status=c.get("status")) for c in cells]
        found = verdict(signals) if signals else "baseline-failed"
        if found not in SCOPE_OF_VERDICT:
            continue
        kept.append({**row, "model": plan.model.name, "cells": cells, "verdict": found})
    if not kept:
        return None
    meta = {"out": f"capplan probe of plan {plan.model.key} ({cplan.route.text()})",
            "trace_tokens": cplan.session.trace_tokens}
    return redact_text(redact(eval_overlay.render(kept, meta, route_as=provider_key(plan))))


def provider_key(plan: Plan) -> str:
    """The name the compiler files a plan's replay evidence under: its binding key, else its provider."""
    return plan.binding.key or plan.model.provider


def plan_carrier(plan: Plan) -> tuple[str | None, str | None]:
    """``(carrier, replay scope)`` the plan's codec claims on its route (carrier None: it replays none).

    As the compiler decides it: the codec's ``replay_carrier``; on OpenRouter a ``reasoning_content``
    codec replays through OpenRouter's ``reasoning_details`` envelope, and only when it asks for it.
    """
    codec = plan.policies["reasoning_codec"]
    try:
        carrier = getattr(policy_class("reasoning_codec", codec.name), "replay_carrier", None)
    except RegistryError:
        return None, None
    params = dict(codec.params)
    if carrier == "reasoning_content" and provider_key(plan) == "openrouter":
        carrier = "reasoning_details" if params.get("openrouter_envelope") else None
    if carrier is None:
        return None, None
    return str(carrier), str(params.get("replay", "all_turns"))


PHRASES = {"consumes-all-turns": "reads it on every turn", "in-loop-only": "reads it in the tool loop only",
           "accepted-ignored": "accepts it and ignores it", "rejected": "rejects it"}


@dataclass(frozen=True)
class CarrierDrift:
    drifted: tuple[str, ...]
    unmeasured: tuple[str, ...]


def carrier_drift(record: CarrierRecord, plan: Plan) -> CarrierDrift:
    """The plan's codec scope against today's verdict for its carrier (and any carrier the route requires)."""
    key = record.plan_key
    carrier, scope = plan_carrier(plan)
    evidence = plan.policies["reasoning_codec"].params.get("evidence")
    claim = f"plan replays {scope} ({f'evidence: {evidence}' if evidence else 'no evidence'})"
    by_name = {r.carrier: r for r in record.results}
    drifted: list[str] = []
    unmeasured: list[str] = []
    required = [r for r in record.results if r.outcome == "required"]
    # ``all`` carries every field at once: it names the need only where no single carrier does
    required = [r for r in required if r.carrier != "all"] or required
    if carrier is None:
        for needed in required:
            drifted.append(f"{key}: {needed.carrier}: route refuses a request without it ({needed.evidence()}): "
                           "plan replays no reasoning")
        return CarrierDrift(tuple(drifted), ())
    result = by_name.get(carrier)
    if result is None:
        unmeasured.append(f"{key}: {carrier}: the replay eval's text step does not measure it (its opaque step "
                          "replays the model's own carriers; not run by a probe)")
        return CarrierDrift((), tuple(unmeasured))
    if result.outcome == "not measured":
        unmeasured.append(f"{key}: {carrier}: not measured ({result.reason})")
    elif result.outcome == "required":
        if scope == "never":
            drifted.append(f"{key}: {carrier}: {claim}, route requires it today ({result.evidence()})")
    elif result.scope != scope:
        drifted.append(f"{key}: {carrier}: {claim}, route {PHRASES[result.verdict]} today ({result.evidence()})")
    if result.outcome in ("rejected", "not measured"):
        # the plan's own carrier does not get through: a carrier the route needs instead is drift too
        for other in required:
            drifted.append(f"{key}: {other.carrier}: route refuses a request without it ({other.evidence()}): "
                           f"plan replays {carrier} only")
    return CarrierDrift(tuple(drifted), tuple(unmeasured))
