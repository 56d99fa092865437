"""The policy registry: which policy class answers to which name, per slot.

Built-in policies are listed here explicitly. Per-model-family policies (``executor/families``)
and third-party packages register through the ``capplan.policies`` entry-point group, as
``<slot>.<name> = module:Class``, and go through the same merge: a duplicate name or an unknown
slot fails loud. Names map to import paths, so the compiler can check that a name exists
without importing any policy code.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from capplan.core.entry_points import POLICY_GROUP, Found, entry_points_in
from capplan.core.errors import UserError

#: the entry-point group third-party policies register in
ENTRY_POINT_GROUP = POLICY_GROUP

#: The nine slots, in the order a plan lists them.
SLOTS: tuple[str, ...] = (
    "schema_sanitizer",
    "prompt_policy",
    "content_policy",
    "params_policy",
    "response_policy",
    "reasoning_codec",
    "cache_policy",
    "message_assembly_policy",
    "assistant_text_policy",
)

_P = "capplan.executor.policies."
BUILTIN_POLICIES: dict[str, dict[str, str]] = {
    "schema_sanitizer": {
        "passthrough": _P + "schema_sanitizer:PassthroughSchema",
        "strict": _P + "strict_schema:StrictSchema",
    },
    "prompt_policy": {
        "none": _P + "prompt_policy:NoPromptEnrichment",
        "dict_map_hints": _P + "prompt_policy:DictMapHints",
    },
    "content_policy": {
        "openai": _P + "content_policy:OpenAIContent",
        "anthropic": _P + "content_policy:AnthropicContent",
        "nova": _P + "content_policy:NovaContent",
    },
    "params_policy": {
        "generation_params": _P + "params_policy:GenerationParams",
    },
    "response_policy": {
        "standard": _P + "response_policy:StandardResponse",
        "unwrap_input": _P + "response_policy:UnwrapInputResponse",
        "json_coerce": _P + "response_policy:JsonCoerceResponse",
        "array_dict_map": _P + "response_policy:ArrayDictMapResponse",
    },
    "reasoning_codec": {
        "none": _P + "reasoning_codec:NoReasoningCodec",
        "anthropic": _P + "reasoning_codec:AnthropicReasoningCodec",
        "openai": _P + "reasoning_codec:OpenAIReasoningCodec",
        "openai_responses": _P + "reasoning_codec:OpenAIResponsesReasoningCodec",
        "gemini": _P + "reasoning_codec:GeminiReasoningCodec",
        "reasoning_content": _P + "reasoning_codec:ReasoningContentCodec",
    },
    "cache_policy": {
        "none": _P + "cache_policy:NoCache",
        "anthropic_ephemeral": _P + "cache_policy:AnthropicEphemeralCache",
    },
    "message_assembly_policy": {
        "null": _P + "message_assembly_policy:NullMessageAssembly",
        # registry key "nova" kept for the filler policy: overlay files name it this way
        "nova": _P + "message_assembly_policy:FillEmptyAssistantAssembly",
    },
    "assistant_text_policy": {
        "passthrough": _P + "assistant_text_policy:PassthroughAssistantText",
    },
}

#: The policy each slot gets when no layer names one.
DEFAULT_POLICY: dict[str, str] = {
    "schema_sanitizer": "passthrough",
    "prompt_policy": "none",
    "content_policy": "openai",
    "params_policy": "generation_params",
    "response_policy": "standard",
    "reasoning_codec": "none",
    "cache_policy": "none",
    "message_assembly_policy": "null",
    "assistant_text_policy": "passthrough",
}


class RegistryError(UserError, RuntimeError):
    """The registry cannot be assembled: duplicate name, unknown slot, bad entry point.

    A broken policy installation, not a mistake in one input file: it is shown as the sentence
    it is (``capplan: policy registry cannot be built: …``), with no place.
    """

    code = "REGISTRY"

    def render(self) -> str:
        return f"capplan: {self.message}"


def _merge(
    base: dict[str, dict[str, str]], extra: list[tuple[str, str, object]]
) -> dict[str, dict[str, str]]:
    merged = {slot: dict(names) for slot, names in base.items()}
    problems: list[str] = []
    for key, target, origin in extra:
        slot, sep, name = key.partition(".")
        if not sep or not name:
            problems.append(f"{origin}: entry point {key!r} must be named '<slot>.<name>'")
        elif slot not in merged:
            problems.append(
                f"{origin}: entry point {key!r} names unknown slot {slot!r}; "
                f"valid slots: {', '.join(SLOTS)}"
            )
        elif name in merged[slot]:
            problems.append(
                f"{origin}: duplicate policy name {slot}.{name} "
                f"(already registered as {merged[slot][name]})"
            )
        else:
            merged[slot][name] = target
    if problems:
        raise RegistryError("policy registry cannot be built:\n  " + "\n  ".join(problems))
    return merged


class _Origin:
    """Where an entry point comes from, worded only when a problem is reported.

    The distribution's name is read from its METADATA file (parsed as an e-mail message), so it
    is read only for the message, not for every entry point on every start-up.
    """

    def __init__(self, found: Found) -> None:
        self._found = found

    def __str__(self) -> str:
        return f"{self._found.distribution()} ({ENTRY_POINT_GROUP})"


def _entry_points() -> tuple[Found, ...]:
    return entry_points_in(ENTRY_POINT_GROUP)


# not a speed memo (it stays in the reference mode): the registry is read once, so every plan and
# client of a process resolves policy names against the same one, whatever is installed meanwhile
@cache
def policy_targets() -> dict[str, dict[str, str]]:
    """Every registered policy, ``{slot: {name: "module:Class"}}``, built-ins plus entry points."""
    extra: list[tuple[str, str, object]] = [(ep.name, ep.value, _Origin(ep)) for ep in _entry_points()]
    return _merge(BUILTIN_POLICIES, extra)


def registered_names(slot: str) -> list[str]:
    """Sorted policy names registered for ``slot``."""
    return sorted(policy_targets()[slot])


def policy_class(slot: str, name: str) -> type[Any]:
    """Import and return the class registered as ``slot.name``.

    A class that declares a ``slot`` class attribute must be registered under that slot, so a
    class registered in the wrong slot fails here, loudly, not at its first call.
    """
    targets = policy_targets()
    if slot not in targets:
        raise RegistryError(f"unknown policy slot {slot!r}; valid slots: {', '.join(SLOTS)}")
    if name not in targets[slot]:
        raise RegistryError(
            f"no {slot} policy named {name!r}; registered: {', '.join(sorted(targets[slot]))}"
        )
    module_name, _, attr = targets[slot][name].partition(":")
    cls: type[Any] = getattr(importlib.import_module(module_name), attr)
    if getattr(cls, "slot", slot) != slot:
        raise RegistryError(f"{cls.__qualname__} is a {cls.slot} policy, registered under {slot}")
    problem = _declaration_problem(targets[slot][name], cls)
    if problem is not None:
        raise RegistryError(f"{slot}.{name}: {problem}")
    return cls


_DECLARATIONS: dict[str, str | None] = {}


def _declaration_problem(target: str, cls: type[Any]) -> str | None:
    # every policy declares its parameters (capplan.executor.policy_params), so a preset can be checked
    # against them before any plan exists; checked once per import path
    if target not in _DECLARATIONS:
        from capplan.executor.policy_params import declaration_problem

        _DECLARATIONS[target] = declaration_problem(cls)
    return _DECLARATIONS[target]
