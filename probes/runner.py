"""Building and sending a plan's questions, exactly as trials send requests, each once.

Each question is built by the plan's :class:`~capplan.executor.client.Client` (its binding, the
keys from the environment, the gateway when ``LLM_PROXY_*`` is set, ``--api-base``) and sent by
:meth:`~capplan.executor.client.Client.send_once`: the trials' transport with every retry off,
because a probe records the route's first answer. A 2xx is ``accepted``; a 4xx that judges the
request is ``refused`` with the provider's exact error text (redacted by value, bounded); a
429, a 5xx, a timeout, a transport error, or a 401 / 403 / 404 / 407 / 408 (which judge the key,
the model name or the wait, never the value asked about) is ``not measured`` with the reason. A
budget (requests, worst-case dollars) stops the probe before the request that would pass it.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from capplan.core.canonical import canonical_bytes, sha256_hex
from capplan.core.errors import UserError
from capplan.core.redaction import redact_text, redact_url
from capplan.executor.client import Client
from capplan.executor.cost_bound import worst_case_usd
from capplan.executor.direct.request import RequestMapper
from capplan.executor.errors import ExecutorError, ProviderResponseError
from capplan.executor.mock_provider import is_mock
from capplan.executor.plan import Plan
from capplan.executor.request_builder import BuiltRequest
from capplan.executor.value_rules import RejectedValueError
from capplan.probes.errors import ProbeError
from capplan.probes.evidence import Claim, Outcome, total_usd, ProbeRecord, QuestionResult, RouteIdentity, bounded
from capplan.probes.questions import Question, question_set, sent_value
from capplan.probes.usage_census import UsageRead, UsageSeen, census, plan_reads

#: the wire protocols a probe can ask today (the OpenAI-compatible ones, on either transport)
PROBED_PROTOCOLS = ("openai-chat", "openai-responses", "xai-responses")
#: 4xx answers about the call's setup rather than the value under test: never a refusal of the value
SETUP_STATUSES: dict[int, str] = {
    401: "the route refused the credentials",
    403: "the route refused the key's access",
    404: "the route has no such model or path",
    407: "a proxy on the way asked for credentials",
    408: "the route timed the request out",
}


def capplan_version() -> str:
    """The installed capplan's version (``0+unknown`` in a source tree never installed)."""
    try:
        return importlib.metadata.version("capplan")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def unprobeable_reason(plan: Plan) -> str | None:
    """Why ``plan``'s route cannot be probed (None: it can)."""
    if is_mock(plan.model.provider):
        return "the offline mock answers without a route: there is nothing to probe"
    wire = plan.wire
    if wire is None or wire.protocol not in PROBED_PROTOCOLS:
        protocol = wire.protocol if wire is not None else "litellm"
        return (f"its wire protocol is {protocol!r}; probes ask {', '.join(PROBED_PROTOCOLS)} routes only "
                "(a native litellm route's refusals arrive in litellm's words, not the provider's)")
    return None


@dataclass(frozen=True)
class Planned:
    """One question as it will be sent (``built``), or why it is not (``skipped``)."""

    question: Question
    built: BuiltRequest | None
    fingerprint: str | None
    worst_usd: float | None
    claim: Claim
    skipped: str | None = None


@dataclass(frozen=True)
class ProbePlan:
    """A plan's questions, built, with the route they go to."""

    plan: Plan
    route: RouteIdentity
    questions: tuple[Planned, ...]
    #: the usage fields the plan reads, which every accepted answer's census is compared with
    usage_reads: tuple[UsageRead, ...] = ()

    @property
    def to_send(self) -> list[Planned]:
        return [p for p in self.questions if p.skipped is None]

    def worst_usd(self) -> float | None:
        """The most sending every question can cost (None: the plan has no price)."""
        return total_usd(planned.worst_usd for planned in self.to_send)


def plan_probe(client: Client) -> ProbePlan:
    """Build every question of ``client``'s plan; raises :class:`ProbeError` for a route it cannot ask."""
    plan = client.plan
    reason = unprobeable_reason(plan)
    if reason is not None:
        raise ProbeError(f"plan {plan.model.key} cannot be probed: {reason}",
                         hint="probe a plan whose route speaks an OpenAI-compatible protocol")
    # the questions are requests the plan would not send as they are: what its policies say about
    # them (a temperature left out, a seed not sent) is the question, not news for the log
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        return _plan_questions(client)
    finally:
        logging.disable(previous)


def _plan_questions(client: Client) -> ProbePlan:
    plan = client.plan
    # the direct transport's mapper names the URL and body either transport sends (wire-identical by test)
    mapper = RequestMapper(plan, client.environment)
    planned: list[Planned] = []
    route: RouteIdentity | None = None
    asks_reasoning = False
    for question in question_set(plan):
        claim = _claim(client, question)
        if question.skip is not None:
            planned.append(Planned(question, None, None, None, claim, skipped=question.skip))
            continue
        try:
            built = client.build(question.request, under_test=question.under_test)
        except (ExecutorError, ValueError) as exc:
            # the plan's protocol cannot express the parameter (the Responses API has no `stop`, ...),
            # or the plan refuses the request itself (a tool schema its sanitiser cannot make valid)
            reason = _one_line(str(exc))
            if question.claim is not None:
                claim = Claim("none", f"the plan refuses such a request before sending: {reason}")
            planned.append(Planned(question, None, None, None, claim, skipped=reason))
            continue
        if not planned:  # the baseline: the plan's own request, as trials send it
            asks_reasoning = sent_value(built.kwargs, "reasoning_effort") is not None
        worst = worst_case_usd(plan, built.kwargs)
        if question.rewrite is not None:
            built = dataclasses.replace(built, kwargs=question.rewrite(built.kwargs))
        if question.on_wire is None:
            sent = sent_value(built.kwargs, question.param)
            if sent is None or (question.expect is not None and sent != question.expect):
                shown = "nothing" if sent is None else repr(sent)
                planned.append(Planned(question, None, None, None, claim, skipped=(
                    f"the plan's request carries {shown} for {question.param} here, not the value asked about "
                    "(its params policy decides this parameter)")))
                continue
        wire = mapper.map(built.kwargs)
        missing = question.on_wire(wire.body) if question.on_wire is not None else None
        if missing is not None:
            planned.append(Planned(question, None, None, None, Claim("none", missing), skipped=missing))
            continue
        if route is None:
            route = _route_of(client, wire.url, str(wire.body.get("model", "")))
        fingerprint = sha256_hex(canonical_bytes(wire.body))
        planned.append(Planned(question, built, fingerprint, worst, claim))
    if route is None:
        first = planned[0].skipped if planned else None
        raise ProbeError(f"plan {plan.model.key}: no question could be built for its route (the first: {first})",
                         hint="run `capplan preview` with a one-message request to see what the plan refuses")
    return ProbePlan(plan, route, tuple(planned), plan_reads(plan, asks_reasoning=asks_reasoning))


def _route_of(client: Client, url: str, model: str) -> RouteIdentity:
    plan = client.plan
    wire = plan.wire
    decision = client.route
    gateway_route = decision.route if decision is not None and decision.via_gateway else None
    return RouteIdentity(protocol=wire.protocol if wire is not None else "litellm",
                         endpoint=redact_url(client.redactor.text(url)), model=model,
                         transport=wire.transport if wire is not None else "litellm", gateway_route=gateway_route)


def _claim(client: Client, question: Question) -> Claim:
    """What the plan says about the question's value: its rule, or what its own request carries."""
    plan = client.plan
    if question.claim is not None:
        return question.claim
    if question.rule_key is not None:
        rule = plan.param_value_rules.get(question.param, {}).get(question.rule_key)
        if rule is not None:
            return Claim("refused", f"rule {rule.action}, evidence: {rule.evidence}")
    if not question.plan_can_send:
        return Claim("none", f"capplan never sends {question.param}")
    try:
        built = client.build(question.request)
    except RejectedValueError as exc:
        return Claim("refused", f"rule reject, evidence: {exc.evidence}")
    except (ExecutorError, ValueError) as exc:
        return Claim("none", _one_line(str(exc)))
    sent = sent_value(built.kwargs, question.param)
    if sent is None:
        return Claim("refused", f"the plan leaves {question.param} out of its requests (its params policy)")
    return Claim("accepted", f"the plan sends {question.param}={sent!r}")


def run_probe(client: Client, probe: ProbePlan, *, date: str, max_requests: int | None = None,
              max_cost: float | None = None, on_answer: Callable[[QuestionResult], None] | None = None) -> ProbeRecord:
    """Send each question once, within the budget; what was not sent is recorded and why."""
    results: list[QuestionResult] = []
    sent = 0
    spent = 0.0
    stopped: str | None = None
    for planned in probe.questions:
        q = planned.question
        if planned.skipped is not None:
            outcome, usage = Outcome("skipped", detail=planned.skipped), None
        elif stopped is not None:
            outcome, usage = Outcome("not measured", detail=stopped), None
        elif max_requests is not None and sent >= max_requests:
            stopped = f"over budget: --max-requests {max_requests} reached"
            outcome, usage = Outcome("not measured", detail=stopped), None
        elif max_cost is not None and spent + (planned.worst_usd or 0.0) > max_cost:
            stopped = (f"over budget: this request could cost ${planned.worst_usd:.6f}, which would pass "
                       f"--max-cost ${max_cost:g} (${spent:.6f} reserved so far)")
            outcome, usage = Outcome("not measured", detail=stopped), None
        else:
            assert planned.built is not None  # every question not skipped was built
            sent += 1
            spent += planned.worst_usd or 0.0
            outcome, usage = _ask(client, planned.built)
        result = QuestionResult(q.id, q.param, q.rule_key, planned.fingerprint, outcome, planned.claim, q.notes,
                                usage if outcome.kind == "accepted" else None)
        results.append(result)
        if on_answer is not None:
            on_answer(result)
    plan = probe.plan
    return ProbeRecord(plan.model.key, plan.fingerprint, date, capplan_version(), probe.route, tuple(results), stopped,
                       sent=sent, reserved_usd=spent, usage_reads=probe.usage_reads)


def send_one(client: Client, built: BuiltRequest) -> tuple[Outcome, Any]:
    """Send ``built`` once: its outcome, and the answer when it was accepted (else None).

    Every failure of the send is an outcome, never raised, except a :class:`UserError` (a missing
    key, a refused gateway configuration): then the setup is wrong, not the route.
    """
    try:
        answer = client.send_once(built)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 (every failure of one send is recorded, never raised)
        return classify_failure(exc, client.redactor.text), None
    return Outcome("accepted", status=200), answer


def _ask(client: Client, built: BuiltRequest) -> tuple[Outcome, UsageSeen | None]:
    """One send: its outcome, and for an accepted answer the usage fields it carried (names only)."""
    outcome, answer = send_one(client, built)
    if outcome.kind != "accepted":
        return outcome, None
    wire = client.plan.wire
    return Outcome("accepted", status=200), census(answer, wire.protocol if wire is not None else "litellm",
                                                   client.redactor.text)


def classify_failure(exc: BaseException, redact: Callable[[str], str]) -> Outcome:
    """A failed send's outcome: ``refused`` for a 4xx that judges the request, else ``not measured``."""
    if _refused_by_litellm(exc):
        # litellm's own model map, not the route: the request never left this machine
        return Outcome("not measured", None, "litellm refused it before sending (its own parameter map, not the "
                       f"route's answer): {bounded(redact_text(redact(str(exc))))}")
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        text = bounded(redact_text(redact(error_text(exc))))
        if status == 429:
            return Outcome("not measured", status, f"HTTP 429, rate limited: {text}")
        if status in SETUP_STATUSES:
            return Outcome("not measured", status, f"HTTP {status}, {SETUP_STATUSES[status]}: {text}")
        if 400 <= status < 500:
            return Outcome("refused", status, text)
        return Outcome("not measured", status, f"HTTP {status}: {text}")
    if isinstance(exc, ProviderResponseError):
        return Outcome("not measured", exc.http_status, bounded(redact_text(redact(str(exc)))))
    if isinstance(exc, TimeoutError):
        return Outcome("not measured", None, f"timeout: {bounded(redact_text(redact(str(exc))))}")
    if isinstance(exc, ConnectionError):
        return Outcome("not measured", None, f"transport error: {bounded(redact_text(redact(str(exc))))}")
    return Outcome("not measured", None, f"{type(exc).__name__}: {bounded(redact_text(redact(str(exc))))}")


def _refused_by_litellm(exc: BaseException) -> bool:
    """Whether litellm refused the call itself (``UnsupportedParamsError``: a status 400 it made up)."""
    litellm = sys.modules.get("litellm")  # loaded by then whenever litellm made the call
    kind = getattr(litellm, "UnsupportedParamsError", None)
    return isinstance(kind, type) and isinstance(exc, kind)


def error_text(exc: BaseException) -> str:
    """The provider's own error text: the body's ``error.message`` (or ``message``), else the body, else the exception."""
    body = getattr(exc, "body", None)
    found = _message_in(body)
    if found is not None:
        return found
    response = getattr(exc, "response", None)
    raw = getattr(response, "text", None)
    if isinstance(raw, str) and raw:
        try:
            found = _message_in(json.loads(raw))
        except ValueError:
            found = None
        return found if found is not None else raw
    return str(exc)


def _message_in(body: Any) -> str | None:
    if isinstance(body, str):
        return body or None
    if not isinstance(body, Mapping):
        return None
    error = body.get("error")
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str):
        return error
    message = body.get("message")
    return message if isinstance(message, str) else None


def _one_line(text: str) -> str:
    return " ".join(text.split())
