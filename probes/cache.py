"""Cache markers and cached tokens: the plan's own request with a cacheable prefix, sent twice.

A plan makes two claims about prompt caching on its route:

- its cache policy places ``cache_control`` markers (``anthropic_ephemeral``): the route takes them;
- its price has a cached-input rate (``pricing.cache_read``) or it places markers: the route caches a
  repeated prefix, and its usage says so where capplan's usage reader looks
  (``prompt_tokens_details.cached_tokens``, ``cache_read_input_tokens``), so the cost is right.

The question is the plan's own request (its request builder, its cache policy, its transport,
sent once each with every retry off, as every probe question) with a system prompt long enough
to be cached, the provider's minimum with a margin: 1024 tokens for automatic caching (OpenAI's
minimum) and 4096 where the plan places Anthropic markers (the largest minimum of Anthropic's
models), written at five characters per token, more than any tokenizer packs into this text. The
same request goes out twice. The first answer says whether the markers are accepted (2xx) or
refused (the provider's exact text); the repeat's usage says whether the prefix was read from the
cache (cached tokens > 0). A 429, a 5xx or a transport error is ``not measured``, never a claim;
the repeat is sent only after an accepted first call. The budget reserves both calls before the
first: a probe that cannot afford the repeat sends neither.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from capplan.core.canonical import canonical_bytes, sha256_hex
from capplan.executor.client import Client
from capplan.executor.cost_bound import worst_case_usd
from capplan.executor.direct.request import RequestMapper
from capplan.executor.errors import ExecutorError
from capplan.executor.messages import ChatRequest
from capplan.executor.plan import Plan
from capplan.executor.request_builder import BuiltRequest
from capplan.executor.usage import UsageExtractor
from capplan.probes.evidence import Outcome
from capplan.probes.questions import PROBE_MAX_TOKENS, PROMPT
from capplan.probes.runner import send_one, unprobeable_reason

#: the cacheable minimum the prefix is sized for: OpenAI caches from 1024 prompt tokens; Anthropic
#: from 1024, 2048 or 4096 depending on the model, so a plan with Anthropic markers gets the largest
MIN_TOKENS_AUTOMATIC = 1024
MIN_TOKENS_MARKERS = 4096
#: characters written per token of the minimum: tokenizers pack four or fewer of this text's
#: characters into a token, so five per token keeps the prefix over the minimum
CHARS_PER_TOKEN = 5
#: the fixed seed of the prefix: the same bytes in every probe (and in the dry run's fingerprint)
SEED = 1024
_WORDS = ("harbor", "ledger", "beacon", "quarry", "trellis", "almanac", "sextant", "cistern", "compass", "gazebo",
          "meridian", "lantern", "orchard", "granary", "bulwark", "causeway", "foundry", "tannery", "spindle", "furrow")

CacheVerdict = Literal["cached", "not cached", "not measured"]


def prefix_text(min_tokens: int) -> str:
    """A deterministic system prompt of at least ``min_tokens * CHARS_PER_TOKEN`` characters."""
    rng = random.Random(SEED)
    lines = ["Reference notes for this conversation. Read them, then answer the user's request."]
    length = len(lines[0])
    while length < min_tokens * CHARS_PER_TOKEN:
        line = (f"Note {len(lines)}: the {rng.choice(_WORDS)} by the {rng.choice(_WORDS)} logged "
                f"{rng.randint(100, 9999)} entries near the {rng.choice(_WORDS)}.")
        lines.append(line)
        length += len(line) + 1
    return "\n".join(lines)


def markers_in(value: Any) -> int:
    """How many ``cache_control`` markers a request's kwargs carry, anywhere."""
    if isinstance(value, Mapping):
        return int(value.get("cache_control") is not None) + sum(markers_in(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(markers_in(v) for v in value)
    return 0


@dataclass(frozen=True)
class CachePlan:
    """The cache question of one plan: the request (sent twice) and what the plan claims."""

    plan: Plan
    built: BuiltRequest
    fingerprint: str
    #: worst case of one of the two calls
    worst_usd: float | None
    min_tokens: int
    markers: int
    claim_markers: str | None
    claim_cached: str | None

    def total_worst_usd(self) -> float | None:
        return None if self.worst_usd is None else 2 * self.worst_usd


@dataclass(frozen=True)
class CacheRecord:
    """What the route answered the cache question."""

    plan_key: str
    fingerprint: str
    min_tokens: int
    markers: int
    first: Outcome
    repeat: Outcome | None
    #: cached tokens the repeat's usage reports (None: no usable repeat)
    cached_tokens: int | None
    #: whether the repeat's usage had a cached-token field at all (0 and absent read alike otherwise)
    reported: bool
    claim_markers: str | None
    claim_cached: str | None
    stopped: str | None = None
    sent: int = 0
    reserved_usd: float = 0.0

    @property
    def markers_verdict(self) -> str:
        """``accepted`` / ``refused`` / ``not measured``, or ``none sent`` for a plan without markers."""
        return "none sent" if not self.markers else self.first.kind

    @property
    def cached_verdict(self) -> CacheVerdict:
        if self.repeat is None or self.repeat.kind != "accepted" or self.cached_tokens is None:
            return "not measured"
        return "cached" if self.cached_tokens > 0 else "not cached"

    def as_json(self) -> dict[str, Any]:
        def outcome(o: Outcome | None) -> dict[str, Any] | None:
            return None if o is None else {"outcome": o.kind, "status": o.status, "detail": o.detail}
        return {"fingerprint": self.fingerprint, "min_tokens": self.min_tokens, "markers": self.markers,
                "markers_verdict": self.markers_verdict, "first": outcome(self.first), "repeat": outcome(self.repeat),
                "cached_tokens": self.cached_tokens, "cached_field_reported": self.reported,
                "cached_verdict": self.cached_verdict, "claim_markers": self.claim_markers,
                "claim_cached": self.claim_cached, "stopped": self.stopped, "sent": self.sent}


def _claims(plan: Plan, markers: int) -> tuple[str | None, str | None]:
    policy = plan.policies["cache_policy"].name
    claim_markers = f"the plan places {markers} cache_control marker(s) (cache_policy {policy})" if markers else None
    read = plan.pricing.cache_read if plan.pricing is not None else None
    if read is not None:
        claim_cached = f"the plan prices cached input at ${float(read):g}/M tokens (read from usage cached tokens)"
    elif markers:
        claim_cached = "the plan places cache markers, so a repeated prefix is read from the cache"
    else:
        claim_cached = None
    return claim_markers, claim_cached


def plan_cache(client: Client) -> CachePlan | str:
    """The cache question for ``client``'s plan, or why it has none."""
    plan = client.plan
    reason = unprobeable_reason(plan)
    if reason is not None:
        return reason
    policy = plan.policies["cache_policy"].name
    min_tokens = MIN_TOKENS_AUTOMATIC if policy == "none" else MIN_TOKENS_MARKERS
    request = ChatRequest.model_validate({"system": prefix_text(min_tokens),
                                          "messages": [{"role": "user", "content": PROMPT}],
                                          "max_tokens": PROBE_MAX_TOKENS})
    try:
        built = client.build(request)
    except (ExecutorError, ValueError) as exc:
        return f"the plan's request with a long system prompt cannot be built: {' '.join(str(exc).split())}"
    markers = markers_in(built.kwargs)
    claim_markers, claim_cached = _claims(plan, markers)
    if claim_markers is None and claim_cached is None:
        return "the plan places no cache markers and prices no cached input: it claims nothing about caching"
    wire = RequestMapper(plan, client.environment).map(built.kwargs)
    return CachePlan(plan, built, sha256_hex(canonical_bytes(wire.body)), worst_case_usd(plan, built.kwargs),
                     min_tokens, markers, claim_markers, claim_cached)


def run_cache(client: Client, cplan: CachePlan, *, max_requests: int | None = None,
              max_cost: float | None = None) -> CacheRecord:
    """Send the request twice (the repeat only after an accepted first), within what is left of the budget."""
    def record(first: Outcome, repeat: Outcome | None = None, cached: int | None = None, reported: bool = False,
               stopped: str | None = None, sent: int = 0) -> CacheRecord:
        return CacheRecord(cplan.plan.model.key, cplan.fingerprint, cplan.min_tokens, cplan.markers, first, repeat,
                           cached, reported, cplan.claim_markers, cplan.claim_cached, stopped, sent,
                           (cplan.total_worst_usd() or 0.0) if sent else 0.0)

    stopped = _over_budget(cplan, max_requests, max_cost)
    if stopped is not None:
        return record(Outcome("not measured", detail=stopped), stopped=stopped)
    first, _ = send_one(client, cplan.built)
    if first.kind != "accepted":
        return record(first, sent=1)
    repeat, response = send_one(client, cplan.built)
    if repeat.kind != "accepted":
        return record(first, repeat, sent=2)
    cached, reported = cached_tokens(response)
    return record(first, repeat, cached, reported, sent=2)


def _over_budget(cplan: CachePlan, max_requests: int | None, max_cost: float | None) -> str | None:
    if max_requests is not None and max_requests < 2:
        return f"over budget: both calls are needed and --max-requests leaves {max_requests}"
    worst = cplan.total_worst_usd() or 0.0
    if max_cost is not None and worst > max_cost:
        return f"over budget: both calls could cost ${worst:.6f}, which would pass --max-cost (${max_cost:.6f} left)"
    return None




def cached_tokens(response: Any) -> tuple[int | None, bool]:
    """The cached prompt tokens capplan's usage reader finds in ``response``, and whether a field reported them."""
    usage, problems = UsageExtractor().extract_checked(response)
    if problems:
        return None, True  # a counter out of bounds is unknown, not zero
    raw = usage.provider_raw
    details = raw.get("prompt_tokens_details")
    reported = ("cache_read_input_tokens" in raw or (isinstance(details, Mapping) and (
        "cached_tokens" in details or "cache_read_tokens" in details)))
    return max(usage.cached_tokens or 0, usage.cache_read_input_tokens or 0), reported


@dataclass(frozen=True)
class CacheDrift:
    drifted: tuple[str, ...]
    unmeasured: tuple[str, ...]


def cache_drift(record: CacheRecord) -> CacheDrift:
    """The plan's caching claims against today's answers."""
    key = record.plan_key
    drifted: list[str] = []
    unmeasured: list[str] = []
    first = record.first
    if first.kind == "not measured":
        return CacheDrift((), (f"{key}: cache markers and cached tokens: not measured ({first.detail})",))
    if first.kind == "refused":
        what = "cache markers" if record.claim_markers else "the cache question"
        drifted.append(f"{key}: {what}: {record.claim_markers or 'the plan sends this request'}, route refuses it "
                       f"with {first.status} \"{first.detail}\"")
        return CacheDrift(tuple(drifted), ())
    if record.claim_cached is None:
        return CacheDrift((), ())
    verdict = record.cached_verdict
    if verdict == "not measured":
        repeat = record.repeat
        unmeasured.append(f"{key}: cached tokens: not measured ({repeat.detail if repeat else 'no repeat call'})")
    elif verdict == "not cached":
        field = "reports 0 cached tokens" if record.reported else "reports no cached-token field"
        drifted.append(f"{key}: cached tokens: {record.claim_cached}, route {field} on the repeat call today "
                       f"(prefix of at least {record.min_tokens} tokens)")
    return CacheDrift(tuple(drifted), tuple(unmeasured))
