"""One instance of every policy a plan names, built once per plan and shared by every request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from capplan.executor.errors import PolicyConstructionError
from capplan.executor.plan import Plan
from capplan.executor.policies.assistant_text_policy import AssistantTextPolicy
from capplan.executor.policies.cache_policy import CachePolicy
from capplan.executor.policies.content_policy import ToolContentPolicy
from capplan.executor.policies.message_assembly_policy import MessageAssemblyPolicy
from capplan.executor.policies.params_policy import ParamsPolicy
from capplan.executor.policies.prompt_policy import SystemPromptPolicy
from capplan.executor.policies.reasoning_codec import ReasoningCodec
from capplan.executor.policies.response_policy import ResponsePolicy
from capplan.executor.policies.schema_sanitizer import ToolSchemaSanitizer
from capplan.executor.policy_params import construct
from capplan.executor.registry import SLOTS, policy_class

#: The base class every policy of a slot derives from (the contract the executor calls).
SLOT_BASES: dict[str, type] = {
    "schema_sanitizer": ToolSchemaSanitizer,
    "prompt_policy": SystemPromptPolicy,
    "content_policy": ToolContentPolicy,
    "params_policy": ParamsPolicy,
    "response_policy": ResponsePolicy,
    "reasoning_codec": ReasoningCodec,
    "cache_policy": CachePolicy,
    "message_assembly_policy": MessageAssemblyPolicy,
    "assistant_text_policy": AssistantTextPolicy,
}


@dataclass(frozen=True)
class PolicySet:
    """The nine policy instances of a plan, one per slot.

    Policies are stateless after construction (their parameters are plan data), which is what
    lets one set serve concurrent requests.
    """

    schema_sanitizer: ToolSchemaSanitizer
    prompt_policy: SystemPromptPolicy
    content_policy: ToolContentPolicy
    params_policy: ParamsPolicy
    response_policy: ResponsePolicy
    reasoning_codec: ReasoningCodec
    cache_policy: CachePolicy
    message_assembly_policy: MessageAssemblyPolicy
    assistant_text_policy: AssistantTextPolicy

    @classmethod
    def from_plan(cls, plan: Plan) -> PolicySet:
        """Instantiate every policy the plan names, with the plan's constructor parameters."""
        missing = [slot for slot in SLOTS if slot not in plan.policies]
        if missing:
            # a plan lists all nine slots; a gap means a foreign or hand-made plan, not a default
            raise PolicyConstructionError(
                f"plan {plan.model.key!r} names no policy for slot(s) {', '.join(missing)}; "
                "recompile it with `capplan compile`"
            )
        instances: dict[str, Any] = {}
        for slot in SLOTS:
            ref = plan.policies[slot]
            klass = policy_class(slot, ref.name)
            if not issubclass(klass, SLOT_BASES[slot]):
                raise PolicyConstructionError(
                    f"plan {plan.model.key!r}: {slot} policy {ref.name!r} is {klass.__module__}.{klass.__qualname__}, "
                    f"which does not derive from {SLOT_BASES[slot].__qualname__}"
                )
            try:
                instances[slot] = construct(klass, dict(ref.params))
            except (TypeError, ValueError) as exc:
                raise PolicyConstructionError(
                    f"plan {plan.model.key!r}: {slot} policy {ref.name!r} refuses its parameters: {exc}"
                ) from exc
        return cls(**instances)
