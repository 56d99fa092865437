"""``capplan conformance``'s engine: every plan x every scenario that applies, against its route's emulator.

For each plan: where its requests go (:func:`~capplan.conformance.routes.target_of`), an emulator
of that protocol and route loaded with the corpus, started on loopback, and every scenario that
applies run through the plan's real client pointed at it (``api_base``), with a dummy credential
for the binding's key variable (never the caller's environment). Then one cell per plan and
rule: ``accepted`` (the rule applied and some request was held to it, none broke it),
``rejected`` (the provider's status and text, the scenario and the request's index in it) or
``not_applicable`` (why: another protocol, route or model, or no scenario sent a request it holds).

Plans run concurrently, each on an emulator of its own (a script is per conversation, so two
plans never share one); a plan's scenarios run one after another.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from capplan.conformance.carriers import CarrierMint
from capplan.conformance.corpus import Corpus, Rule
from capplan.conformance.emulator import Emulator, Exchange, _message_of
from capplan.conformance.emulators import emulators as shipped_emulators
from capplan.conformance.routes import MOCK_REASON, Target, Unheld, target_of
from capplan.conformance.scenarios import SCENARIOS, Scenario, ScenarioContext, ScenarioRun
from capplan.core.diagnostics import Diagnostic, InputError
from capplan.executor.client import Client, default_completion
from capplan.executor.plan import Plan

#: the dummy credential every key variable gets: conformance never reads the caller's keys
DUMMY_KEY = "conformance-dummy-key"
#: what the emulator's base URL takes before the route's own path, per protocol
API_BASE_SUFFIX: dict[str, str] = {"openai-chat": "/v1", "openai-responses": "/v1"}
#: plans run at once (each on its own emulator)
MAX_WORKERS = 8

CellStatus = Literal["accepted", "rejected", "not_applicable"]


@dataclass(frozen=True)
class PlanInput:
    """A plan to hold to the corpus: its model key, the plan, and where it came from (for errors)."""

    key: str
    plan: Plan
    where: str


@dataclass(frozen=True)
class ScenarioResult:
    """One scenario's run for one plan."""

    scenario: str
    #: ran | rejected (a request broke a rule) | history_rejected (only another model's history request
    #: did) | not_applicable | refused_by_plan | error
    status: str
    detail: str = ""
    requests: int = 0
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Cell:
    """One plan x rule verdict."""

    plan: str
    rule_id: str
    status: CellStatus
    detail: str
    scenario: str | None = None
    #: the request's index within the scenario (0: its first request)
    request: int | None = None
    http_status: int | None = None
    error: Any = None
    #: the other scenarios a request of which broke the rule too (a rejected cell names the first)
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlanResult:
    """One plan: where it is held, and each scenario's run."""

    key: str
    where: str
    target: Target | None
    unheld: str | None
    scenarios: tuple[ScenarioResult, ...] = ()
    #: what capplan warned while building this plan's requests (a dropped parameter, reasoning left out), once each
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Matrix:
    """The whole run: the rules, each plan's results, and every cell."""

    corpus: Corpus
    plans: tuple[PlanResult, ...]
    cells: tuple[Cell, ...]

    @property
    def rejected(self) -> tuple[Cell, ...]:
        return tuple(cell for cell in self.cells if cell.status == "rejected")

    @property
    def errors(self) -> tuple[tuple[str, ScenarioResult], ...]:
        """Scenarios that failed for a reason that is no provider rule (the run cannot vouch for them)."""
        return tuple((p.key, s) for p in self.plans for s in p.scenarios if s.status == "error")

    @property
    def exit_code(self) -> int:
        """0 all accepted, 1 any rejection or scenario error."""
        return 1 if self.rejected or self.errors else 0


EmulatorClasses = Mapping[str, type[Emulator]]


def unspoken(plans: Sequence[PlanInput], emulators: EmulatorClasses) -> list[Diagnostic]:
    """A located error for each plan whose protocol no emulator speaks."""
    problems = []
    for item in plans:
        target = target_of(item.plan)
        if isinstance(target, Target) and target.protocol not in emulators:
            spoken = ", ".join(sorted(emulators)) or "none yet"
            problems.append(Diagnostic(
                item.where, 1, 1, "CONFORMANCE",
                f"no emulator speaks {target.protocol} (plan {item.key!r}, route {target.route}, model {target.model})",
                hint=f"capplan's emulators speak: {spoken}; leave this plan out of the run (its route's rules "
                     "cannot be checked offline)"))
    return problems


def run_conformance(plans: Sequence[PlanInput], corpus: Corpus, *, emulators: EmulatorClasses | None = None,
                    scenarios: Sequence[Scenario] = SCENARIOS, workers: int = MAX_WORKERS) -> Matrix:
    """Hold every plan to ``corpus`` through every scenario that applies; raises InputError for an unspoken protocol."""
    classes = shipped_emulators() if emulators is None else emulators
    problems = unspoken(plans, classes)
    if problems:
        raise InputError(problems)
    capture = _WarningCapture()

    def one(item: PlanInput) -> tuple[PlanResult, list[Cell]]:
        capture.plan.key = item.key
        try:
            result, cells = _run_plan(item, corpus, classes, scenarios)
        finally:
            capture.plan.key = None
        return replace(result, warnings=capture.of(item.key)), cells

    with capture:
        if workers > 1 and len(plans) > 1:
            # the longest runs first (litellm's routes: its import and its calls cost the most), so
            # none of them starts last and holds the run open alone; results keep the plans' order
            order = sorted(range(len(plans)), key=lambda i: not _through_litellm(plans[i].plan))
            with ThreadPoolExecutor(max_workers=min(workers, len(plans)), thread_name_prefix="conformance") as pool:
                futures = {i: pool.submit(one, plans[i]) for i in order}
                outcomes = [futures[i].result() for i in range(len(plans))]
        else:
            outcomes = [one(item) for item in plans]
    results = tuple(result for result, _ in outcomes)
    cells = tuple(cell for _, plan_cells in outcomes for cell in plan_cells)
    return Matrix(corpus, results, cells)


class _WarningCapture(logging.Handler):
    """capplan's warnings while plans run, kept per plan (the thread running it) instead of printed.

    A policy warns once per plan about what it left out (a temperature the route refuses, history
    reasoning it does not replay); printed as they come, 28 plans' warnings would bury the matrix.
    The report carries them per plan (``warnings`` in JSON). Installed on the ``capplan`` logger
    for the run only; while it is there, Python's last-resort printer stays quiet for that logger.
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.plan = threading.local()
        self.seen: dict[str, list[str]] = {}
        self._guard = threading.Lock()
        self._logger = logging.getLogger("capplan")

    def emit(self, record: logging.LogRecord) -> None:
        key = getattr(self.plan, "key", None)
        if key is None:
            return
        message = record.getMessage()
        with self._guard:
            kept = self.seen.setdefault(key, [])
            if message not in kept:
                kept.append(message)

    def of(self, key: str) -> tuple[str, ...]:
        with self._guard:
            return tuple(self.seen.get(key, ()))

    def __enter__(self) -> _WarningCapture:
        self._logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self._logger.removeHandler(self)


def _through_litellm(plan: Plan) -> bool:
    target = target_of(plan)
    return isinstance(target, Target) and target.transport != "direct"


# --- one plan -------------------------------------------------------------------------------------------


@dataclass
class _Seen:
    """The exchanges of one scenario, in the order they were sent."""

    scenario: str
    exchanges: list[Exchange] = field(default_factory=list)


def _run_plan(item: PlanInput, corpus: Corpus, classes: EmulatorClasses,
              scenarios: Sequence[Scenario]) -> tuple[PlanResult, list[Cell]]:
    target = target_of(item.plan)
    if isinstance(target, Unheld):
        result = PlanResult(item.key, item.where, None, target.reason,
                            tuple(ScenarioResult(s.id, "not_applicable", MOCK_REASON) for s in scenarios))
        return result, [Cell(item.key, rule.id, "not_applicable", target.reason) for rule in corpus.rules]
    if not corpus.for_route(target.protocol, target.route, target.model):
        # nothing to hold the plan to: no emulator is started and no request is made
        none_hold = f"no rule of the corpus holds for {target.protocol} on {target.route} for {target.model}"
        result = PlanResult(item.key, item.where, target, None,
                            tuple(ScenarioResult(s.id, "not_applicable", none_hold) for s in scenarios))
        return result, _cells(item.key, target, corpus.rules, [], result.scenarios)
    cls = classes[target.protocol]
    seen: list[_Seen] = []
    results: list[ScenarioResult] = []
    # one client per plan and emulator for the whole run, as a trial run keeps one per plan: the
    # scenarios run one after another, and a client serves concurrent callers anyway
    clients: dict[tuple[int, str], tuple[Plan, Client]] = {}
    factory = make_client(target)

    def client_for(plan: Plan, base_url: str) -> Client:
        key = (id(plan), base_url)
        if key not in clients:
            clients[key] = (plan, factory(plan, base_url))  # the plan is kept so its id stays its own
        return clients[key][1]

    with cls(corpus.rules, route=target.route) as emulator:
        for scenario in scenarios:
            why = scenario.applies(item.plan, target)
            if why is not None:
                results.append(ScenarioResult(scenario.id, "not_applicable", why))
                continue
            results.append(_run_scenario(item.plan, target, emulator, cls, scenario, seen, client_for))
    return PlanResult(item.key, item.where, target, None, tuple(results)), _cells(item.key, target, corpus.rules, seen, results)


def _run_scenario(plan: Plan, target: Target, emulator: Emulator, cls: type[Emulator], scenario: Scenario,
                  seen: list[_Seen], client_for: Callable[[Plan, str], Client]) -> ScenarioResult:
    start = len(emulator.exchanges)
    others: list[Emulator] = []

    def start_other(mint: CarrierMint) -> Emulator:
        other = cls(emulator.rules, route=target.route, mint=mint).start()
        others.append(other)
        return other

    ctx = ScenarioContext(plan, target, emulator, client_for, start_other, others)
    try:
        run = scenario.run(ctx)
    except Exception as exc:  # a scenario's own failure is reported in the matrix, never a traceback
        run = ScenarioRun(end="error", error=f"{type(exc).__name__}: {str(exc)[:300]}")
    finally:
        for other in others:
            other.stop()
    # history made elsewhere first (the route switch's other upstream), then this route's requests
    exchanges = [x for other in others for x in other.exchanges] + emulator.exchanges[start:]
    seen.append(_Seen(scenario.id, exchanges))
    strays = [x for x in exchanges if x.status >= 400 and not x.violations]
    broken = next((x for x in exchanges if x.violations and x.model == target.model), None)
    if broken is not None:
        status, detail = "rejected", f"{broken.violations[0].rule_id}: {provider_text(broken.violations[0].body)}"
    elif any(x.violations for x in exchanges):
        # only the other model's history request broke a rule: this plan's own request was never made
        refused = next(x for x in exchanges if x.violations)
        status, detail = "history_rejected", (f"the history request (model {refused.model}) was refused: "
                                              f"{provider_text(refused.violations[0].body)}")
    elif run.refused is not None:
        status, detail = "refused_by_plan", f"capplan refused before sending: {run.refused}"
    elif run.error is not None:
        status, detail = "error", run.error
    elif strays:
        status, detail = "error", f"the emulator could not read request {exchanges.index(strays[0])}: {_text(strays[0].answer)}"
    else:
        status, detail = "ran", run.end
    return ScenarioResult(scenario.id, status, detail, len(exchanges), tuple(run.notes))


def make_client(target: Target) -> Callable[[Plan, str], Client]:
    """A client factory for plans of ``target``'s protocol sending to an emulator's base URL.

    Every key variable the plan's route reads gets :data:`DUMMY_KEY` in the client's own
    environment (the process environment is never read for credentials or a gateway). litellm
    reads native providers' keys from the process environment, so on those routes the call
    carries the dummy key itself (``api_key``) through litellm's real ``completion``.
    """
    suffix = API_BASE_SUFFIX.get(target.protocol, "")

    def make(plan: Plan, base_url: str) -> Client:
        binding = plan.binding.binding
        names = [binding.api_key_env, *(plan.wire.key_envs if plan.wire is not None else ())]
        env = {name: DUMMY_KEY for name in names if name}
        completion = None
        if plan.wire is None or plan.wire.transport != "direct":
            completion = _with_key(default_completion(plan, env))
        return Client(plan, env=env, api_base=base_url + suffix, completion=completion, sleep=lambda _: None)

    return make


def _with_key(completion: Callable[..., Any]) -> Callable[..., Any]:
    def call(**kwargs: Any) -> Any:
        return completion(**{**kwargs, "api_key": kwargs.get("api_key") or DUMMY_KEY})

    return call


# --- cells ---------------------------------------------------------------------------------------------


def _cells(key: str, target: Target, rules: Sequence[Rule], seen: Sequence[_Seen],
           results: Sequence[ScenarioResult]) -> list[Cell]:
    cells = []
    for rule in rules:
        why = _scope_miss(rule, target)
        if why is not None:
            cells.append(Cell(key, rule.id, "not_applicable", why))
            continue
        cells.append(_verdict(key, rule, target, seen, results))
    return cells


def _scope_miss(rule: Rule, target: Target) -> str | None:
    if rule.protocol != target.protocol:
        return f"the rule is {rule.protocol}'s; the plan speaks {target.protocol}"
    if target.route not in rule.routes:
        return f"the rule holds on {', '.join(rule.routes)}; the plan is sent to {target.route}"
    if not rule.applies(target.protocol, target.route, target.model):
        return f"the rule holds for models {', '.join(rule.models)}; the plan sends {target.model}"
    return None


def _verdict(key: str, rule: Rule, target: Target, seen: Sequence[_Seen], results: Sequence[ScenarioResult]) -> Cell:
    held_in: list[str] = []
    first: Cell | None = None
    broken_in: list[str] = []
    for scenario in seen:
        for index, exchange in enumerate(scenario.exchanges):
            if exchange.model != target.model:
                continue  # another model's request, made only to give this plan its history (the model switch)
            for violation in exchange.violations:
                if violation.rule_id != rule.id:
                    continue
                if first is None:
                    first = Cell(key, rule.id, "rejected", provider_text(violation.body), scenario.scenario, index,
                                 violation.status, violation.body)
                if scenario.scenario not in broken_in:
                    broken_in.append(scenario.scenario)
            if rule.id in exchange.rules and scenario.scenario not in held_in:
                held_in.append(scenario.scenario)
    if first is not None:
        return replace(first, also=tuple(name for name in broken_in if name != first.scenario))
    if held_in:
        return Cell(key, rule.id, "accepted", f"held in {len(held_in)} scenario(s): {', '.join(held_in)}")
    refused = [r.scenario for r in results if r.status == "refused_by_plan"]
    why = "no scenario sent a request it holds"
    if refused:
        why += f" (capplan refused before sending in {', '.join(refused)})"
    return Cell(key, rule.id, "not_applicable", why)


def _text(answer: Any) -> str:
    return (_message_of(answer) or str(answer))[:300]


def provider_text(body: Any) -> str:
    """The error text a user reads: the body's message, and a relayed upstream body's own message.

    OpenRouter wraps an upstream refusal as ``Provider returned error`` with the upstream's body
    as a string in ``metadata.raw``; the upstream's words are the ones that say what is wrong.
    """
    message = _message_of(body) or json.dumps(body, sort_keys=True)
    error = body.get("error") if isinstance(body, dict) else None
    metadata = error.get("metadata") if isinstance(error, dict) else None
    raw = metadata.get("raw") if isinstance(metadata, dict) else None
    if isinstance(raw, str) and raw:
        try:
            inner = _message_of(json.loads(raw)) or raw
        except ValueError:
            inner = raw
        provider = metadata.get("provider_name") if isinstance(metadata, dict) else None
        message = f"{message} ({provider or 'upstream'}: {inner})"
    return message


def workers_default() -> int:
    """Plans run at once: :data:`MAX_WORKERS` whatever the CPUs (a plan's run mostly waits on loopback
    round trips, so more plans in flight than cores shortens the wall time; measured on 2 cores)."""
    return MAX_WORKERS
