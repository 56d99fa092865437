"""The conversation a caller hands the executor, which is also the ``REQUEST.json`` file format.

A request is provider-neutral: a system prompt, OpenAI-style messages (an assistant message may
carry the reasoning blocks its provider returned, so they can be replayed), tool results with
optional images, tool definitions, and per-call settings. Everything provider-specific happens in
the request builder, from the plan's policies.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from capplan.core.default_factories import empty_dict, empty_list
from capplan.core.input_limits import MAX_REQUEST_BYTES, InputLimitError, read_limited
from capplan.core.strict_json import StrictJSONError, loads_strict
from capplan.executor.content_checks import base64_problem, image_url_problem
from capplan.executor.errors import RequestFileError
from capplan.executor.policies.params_policy import MAX_TEMPERATURE
from capplan.executor.reasoning import BlockType, ReasoningBlock, ReasoningConfig, ReasoningOrigin, StructuredReasoning
from capplan.executor.request_checks import conversation_problems


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


#: The range of ``seed``: a signed 64-bit integer, the widest any provider API takes.
SEED_MIN, SEED_MAX = -(2**63), 2**63 - 1
#: Most tokens a request may ask for (``max_tokens``, a reasoning budget): past any model's
#: output, so a larger number is a typo or an attack, never a setting.
MAX_REQUEST_TOKENS = 10_000_000

#: pydantic error type of a problem found inside a field's value, which carries the problems'
#: own paths (relative to the field) in its context so each is located where it stands
NESTED_PROBLEMS = "nested_problems"


def _nested(problems: list[tuple[tuple[str | int, ...], str]]) -> PydanticCustomError:
    return PydanticCustomError(
        NESTED_PROBLEMS, "{summary}", {"summary": "; ".join(msg for _, msg in problems), "problems": problems}
    )


def _refused(problem: str | None, value: str) -> str:
    if problem:
        raise ValueError(problem)
    return value


class TextPart(_Model):
    """A text part of a multi-part user message."""

    type: Literal["text"]
    text: str


class ImageUrl(_Model):
    """Where an image part's bytes are: an https URL or a ``data:`` URL."""

    url: str = Field(min_length=1, description="https:// (or http://) URL, or a data:image/…;base64,… URL.")
    detail: Literal["auto", "low", "high"] | None = None

    @field_validator("url")
    @classmethod
    def _fetchable(cls, url: str) -> str:
        return _refused(image_url_problem(url), url)


class ImagePart(_Model):
    """An image part of a multi-part user message (OpenAI ``image_url`` shape)."""

    type: Literal["image_url"]
    image_url: ImageUrl


ContentPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class UserMessage(_Model):
    """A user turn: a string, or text and image parts."""

    role: Literal["user"]
    content: str | list[ContentPart] = Field(description="A string, or a list of text / image_url parts.")


class FunctionCall(_Model):
    """The function half of a tool call in the history."""

    name: str = Field(min_length=1)
    arguments: str | dict[str, Any] = Field(
        description="The arguments as the model emitted them: a JSON string (sent verbatim) or an object "
        "(serialised to JSON)."
    )


class ToolCallIn(_Model):
    """A tool call an earlier assistant turn made."""

    id: str = Field(min_length=1)
    type: Literal["function"] = "function"
    function: FunctionCall


class ReasoningOriginIn(_Model):
    """Where a reasoning block (or a message's signatures) was made: recorded when capplan parsed the
    response. A block without one is replayed as the caller gave it, wherever the request goes."""

    protocol: str = Field(min_length=1, description="The plan's wire protocol (openai-chat, litellm, ...).")
    route: str = Field(min_length=1, description="The plan's binding key (its provider key when it has none).")
    model: str = Field(min_length=1, description="The model as the plan sent it (its wire model string).")
    upstream: str | None = Field(
        None, min_length=1, description="The upstream a gateway said served the call (OpenRouter's `provider`).")

    @classmethod
    def of(cls, origin: ReasoningOrigin | None) -> ReasoningOriginIn | None:
        """The request form of ``origin``."""
        if origin is None:
            return None
        return cls(protocol=origin.protocol, route=origin.route, model=origin.model, upstream=origin.upstream)

    def to_origin(self) -> ReasoningOrigin:
        """The executor's origin type."""
        return ReasoningOrigin(self.protocol, self.route, self.model, self.upstream)


def _origin(origin: ReasoningOriginIn | None) -> ReasoningOrigin | None:
    return None if origin is None else origin.to_origin()


class ReasoningBlockIn(_Model):
    """One reasoning block exactly as an earlier response carried it; signatures verbatim."""

    type: BlockType = Field(description="thinking | redacted_thinking | summary_text | reasoning_text | encrypted")
    text: str = Field("", description="The reasoning text (empty for redacted blocks and omitted displays).")
    signature: str | None = Field(None, description="The provider's signature over the block, verbatim.")
    encrypted_data: str | None = Field(None, description="Opaque payload of redacted / encrypted blocks, verbatim.")
    extras: dict[str, Any] = Field(
        default_factory=empty_dict,
        description="Provider keys with no field above (e.g. OpenRouter's id / format / index), replayed verbatim.",
    )
    origin: ReasoningOriginIn | None = Field(
        None, description="Where the block was made. A signed or encrypted block is replayed only to that origin "
        "(another model or route: left out, or its text alone, as the plan's codec says); without one it is "
        "replayed as given.",
    )

    def to_block(self) -> ReasoningBlock:
        """The executor's block type."""
        return ReasoningBlock(type=self.type, text=self.text, signature=self.signature,
                              encrypted_data=self.encrypted_data, extras=tuple(self.extras.items()),
                              origin=_origin(self.origin))


class ReasoningIn(_Model):
    """The reasoning an earlier assistant turn returned, for replay."""

    blocks: list[ReasoningBlockIn] = Field(default_factory=empty_list)
    summary: str | None = None
    signatures: list[str] = Field(
        default_factory=empty_list, description="Message-level signatures (e.g. Gemini thought signatures), verbatim."
    )
    signatures_origin: ReasoningOriginIn | None = Field(
        None, description="Where the signatures were made; they are replayed only to that origin (without one: as given)."
    )

    @classmethod
    def from_structured(cls, reasoning: StructuredReasoning) -> ReasoningIn:
        """The request form of extracted reasoning, so a result's reasoning can be replayed next turn."""
        return cls(
            blocks=[
                ReasoningBlockIn(
                    type=b.type,
                    text=b.text,
                    signature=b.signature,
                    encrypted_data=b.encrypted_data,
                    extras=dict(b.extras),
                    origin=ReasoningOriginIn.of(b.origin),
                )
                for b in reasoning.blocks
            ],
            summary=reasoning.summary,
            signatures=list(reasoning.signatures),
            signatures_origin=ReasoningOriginIn.of(reasoning.signatures_origin),
        )

    def to_structured(self) -> StructuredReasoning:
        """The executor's reasoning type, which the plan's codec encodes for replay."""
        return StructuredReasoning(
            blocks=tuple(b.to_block() for b in self.blocks),
            summary=self.summary,
            signatures=tuple(self.signatures),
            signatures_origin=_origin(self.signatures_origin),
        )


class AssistantMessage(_Model):
    """An earlier assistant turn: text, tool calls, and the reasoning that came with it."""

    role: Literal["assistant"]
    content: str | None = Field(None, description="The reply text; null or empty on a pure tool-call turn.")
    tool_calls: list[ToolCallIn] = Field(default_factory=empty_list)
    reasoning: ReasoningIn | None = Field(None, description="Reasoning blocks to replay on this turn.")

    @model_validator(mode="after")
    def _not_empty(self) -> AssistantMessage:
        if not self.content and not self.tool_calls and self.reasoning is None:
            raise ValueError("an assistant message needs content, tool_calls or reasoning")
        return self


class ToolImage(_Model):
    """An image a tool returned (e.g. a screenshot), base64-encoded."""

    media_type: Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
    data: str = Field(min_length=1, description="Base64 of the image bytes (no data: prefix).")

    @field_validator("data")
    @classmethod
    def _base64(cls, data: str) -> str:
        return _refused(base64_problem(data), data)


class ToolMessage(_Model):
    """The result of one tool call."""

    role: Literal["tool"]
    tool_call_id: str = Field(min_length=1)
    content: str
    images: list[ToolImage] = Field(default_factory=empty_list, description="Images the tool returned with its text.")


Message = Annotated[UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")]


class ToolFunction(_Model):
    """A tool's name, description and JSON-Schema parameters, as the caller defines them."""

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str | None = None
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON Schema of the arguments (Pydantic output with $defs / $ref is fine; every $ref is a "
        "'#/…' pointer into these parameters, never a URL or a file).",
    )
    strict: bool | None = Field(None, strict=True)

    @model_validator(mode="after")
    def _object_schema(self) -> ToolFunction:
        # the same rule as a task file's tools: a tool's arguments are one JSON object, so its
        # parameters are an object schema (no `type` means object); anything else is never sent
        kind = self.parameters.get("type", "object")
        if kind != "object":
            shown = json.dumps(kind, ensure_ascii=True)
            raise _nested([(("parameters", "type"), f"tool {self.name!r}: parameters must be an object schema "
                            f"(type object, with properties), not type {shown if len(shown) <= 40 else shown[:37] + '...'}; "
                            "wrap a single value in a property of an object")])
        if not isinstance(self.parameters.get("properties", {}), dict):
            raise _nested([(("parameters", "properties"), f"tool {self.name!r}: parameters.properties must be an "
                            "object of parameter names to schemas")])
        return self

    @model_validator(mode="after")
    def _refs_stay_local(self) -> ToolFunction:
        # one rule for every route: a passthrough route would hand a remote or dangling $ref to
        # the provider and the argument validator as it stands (imported here for start-up cost
        # only, no cycle: most requests declare no tools)
        from capplan.executor.policies.schema_sanitizer import json_pointer
        from capplan.executor.schema_refs import ref_problems

        problems = ref_problems(self.parameters)
        if problems:
            raise _nested([(("parameters", *path), f"tool {self.name!r}: {json_pointer(path)}: {msg}")
                           for path, msg in problems])
        return self


class ToolSpec(_Model):
    """One tool in OpenAI's ``{"type": "function", "function": {...}}`` shape."""

    type: Literal["function"]
    function: ToolFunction


class NamedFunction(_Model):
    """The function a named tool_choice forces."""

    name: str = Field(min_length=1)


class NamedToolChoice(_Model):
    """``tool_choice`` forcing one named function."""

    type: Literal["function"]
    function: NamedFunction


ToolChoice = Literal["auto", "none", "required"] | NamedToolChoice


class ChatRequest(_Model):
    """A conversation plus per-call settings: the input to ``Client.generate`` and ``capplan preview/send``."""

    system: str | None = Field(None, description="The system prompt before any policy enriches it.")
    messages: list[Message] = Field(min_length=1, description="The conversation, oldest first; no system role.")
    tools: list[ToolSpec] = Field(default_factory=empty_list, description="Tools the model may call.")
    # numbers are strict: a quoted "0.5" or a true is a mistake in the file, not a value to coerce
    temperature: float | None = Field(
        None, ge=0, le=MAX_TEMPERATURE, strict=True, description="Overrides the plan's default temperature."
    )
    seed: int | None = Field(
        None, ge=SEED_MIN, le=SEED_MAX, strict=True, description="Overrides the plan's default seed (a signed 64-bit integer)."
    )
    top_p: float | None = Field(None, gt=0, le=1, strict=True, description="Overrides the plan's default top_p.")
    max_tokens: int | None = Field(
        None, gt=0, le=MAX_REQUEST_TOKENS, strict=True, description="Overrides the plan's default output token cap."
    )
    tool_choice: ToolChoice | None = Field(None, description="auto | none | required | a named function; needs tools.")
    parallel_tool_calls: bool | None = Field(
        None, strict=True, description="Overrides the plan's default; sent only beside tools, ruled by param_value_rules."
    )
    reasoning: ReasoningConfig | None = Field(None, description="Overrides the plan's default reasoning config.")

    #: tool-call ids the history has made, kept so ``extended`` checks only the new messages
    _call_ids: frozenset[str] = PrivateAttr(default=frozenset())

    @model_validator(mode="after")
    def _consistent(self) -> ChatRequest:
        budget = self.reasoning.budget_tokens if self.reasoning is not None else None
        if budget is not None and budget > MAX_REQUEST_TOKENS:
            raise _nested([(("reasoning", "budget_tokens"),
                            f"Input should be less than or equal to {MAX_REQUEST_TOKENS}")])
        counts = Counter(t.function.name for t in self.tools)
        duplicates = sorted(n for n, c in counts.items() if c > 1)
        if duplicates:
            raise ValueError(f"duplicate tool names: {', '.join(duplicates)}")
        if self.tool_choice is not None and not self.tools:
            # tool_choice only ever travels alongside tools, so without them it would be ignored
            raise ValueError("tool_choice is set but the request has no tools")
        if self.parallel_tool_calls is not None and not self.tools:
            raise ValueError("parallel_tool_calls is set but the request has no tools")
        if isinstance(self.tool_choice, NamedToolChoice) and self.tool_choice.function.name not in counts:
            raise ValueError(f"tool_choice names {self.tool_choice.function.name!r}, which is not among the tools")
        self._call_ids = _answered_calls(self.messages, frozenset(), 0)
        return self

    def extended(self, messages: Iterable[Message | Mapping[str, Any]]) -> ChatRequest:
        """This request with ``messages`` appended, validating only the new messages.

        A trial's next turn is its last request plus a few messages; building it this way costs
        what the new messages cost, not the whole history, and the executor then converts only
        the new messages too. Raises ``ValidationError`` for a malformed message and
        ``ValueError`` for a tool result answering a call no earlier turn made.
        """
        new = [_MESSAGE.validate_python(m) for m in messages]
        call_ids = _answered_calls(new, self._call_ids, len(self.messages))
        out = self.model_copy(update={"messages": [*self.messages, *new]})
        out._call_ids = call_ids
        return out

    def tools_json(self) -> bytes:
        """The tools as compact JSON bytes, unset optional keys omitted (the sanitiser memo's key)."""
        return _TOOLS.dump_json(self.tools, exclude_none=True)

    def tool_dicts(self) -> list[dict[str, Any]]:
        """The tools as plain dicts, in order (what the sanitiser receives)."""
        result: list[dict[str, Any]] = json.loads(self.tools_json())
        return result


def _answered_calls(messages: Sequence[Message], made: frozenset[str], offset: int) -> frozenset[str]:
    """``made`` plus the calls ``messages`` make; refuses a tool result answering no earlier call."""
    seen = set(made)
    for i, msg in enumerate(messages, offset):
        if isinstance(msg, AssistantMessage):
            seen.update(c.id for c in msg.tool_calls)
        elif isinstance(msg, ToolMessage) and msg.tool_call_id not in seen:
            raise ValueError(
                f"messages[{i}] answers tool_call_id {msg.tool_call_id!r}, which no earlier assistant turn made"
            )
    return frozenset(seen)


_TOOLS: TypeAdapter[list[ToolSpec]] = TypeAdapter(list[ToolSpec])
_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)


def load_request(path: str | Path) -> ChatRequest:
    """Read and validate a request file; every problem is reported with its position."""
    p = Path(path)
    try:
        text = read_limited(p, MAX_REQUEST_BYTES).decode("utf-8")
    except InputLimitError as exc:
        raise RequestFileError([f"{p}:1:1: error[REQUEST]: {exc}"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RequestFileError([f"{p}: error[REQUEST]: cannot read request file: {exc}"]) from None
    return parse_request(text, source=str(p))


def parse_request(text: str, *, source: str = "<request>") -> ChatRequest:
    """Validate request JSON text; ``source`` names it in error messages."""
    try:
        data = loads_strict(text)
    except (StrictJSONError, InputLimitError) as exc:
        raise RequestFileError([f"{source}:{exc.line}:{exc.col}: error[REQUEST]: {exc}"]) from None
    try:
        request = ChatRequest.model_validate(data)
    except ValidationError as exc:
        raise RequestFileError(_located(exc, text, source)) from None
    problems = conversation_problems(data)
    if problems:
        raise RequestFileError(_located_problems(problems, text, source))
    return request


_LOCATE_MAX_CHARS = 1024 * 1024


def _located(exc: ValidationError, text: str, source: str) -> list[str]:
    problems: list[tuple[tuple[Any, ...], str]] = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        if err["type"] == NESTED_PROBLEMS:
            problems += [((*loc, *rel), msg) for rel, msg in err["ctx"]["problems"]]
        else:
            problems.append((loc, str(err["msg"]).removeprefix("Value error, ")))
    return _located_problems(problems, text, source)


def _located_problems(problems: list[tuple[tuple[Any, ...], str]], text: str, source: str) -> list[str]:
    # the position-tracking reader is slow (~8 s per MB); past this size errors name the JSON path only
    locate = _locator(text) if len(text) <= _LOCATE_MAX_CHARS else None
    # a union field fails once per member at the same place; those become one line
    merged: dict[tuple[tuple[int, int], str], list[str]] = {}
    for loc, msg in problems:
        where, path = locate(loc) if locate else ((0, 0), loc)
        dotted = ".".join(str(p) for p in path) or "(root)"
        messages = merged.setdefault((where, dotted), [])
        if msg not in messages:
            messages.append(msg)
    lines = []
    for (where, dotted), messages in sorted(merged.items()):
        prefix = f"{source}:{where[0]}:{where[1]}" if locate else source
        lines.append(f"{prefix}: error[REQUEST]: {dotted}: {'; or '.join(messages)}")
    return lines


Locator = Callable[[tuple[Any, ...]], tuple[tuple[int, int], tuple[Any, ...]]]


def _locator(text: str) -> Locator | None:
    """Map a pydantic ``loc`` to a 1-based (line, col) and the loc without union tags.

    JSON is YAML 1.2 flow syntax, so ruamel's round-trip loader gives every key and item a
    position; it is only consulted once validation has already failed. None when the text
    cannot be read that way (the messages then carry the key path alone).
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.error import YAMLError

    try:
        root = YAML(typ="rt", pure=True).load(text)
    except YAMLError:
        return None

    def locate(loc: tuple[Any, ...]) -> tuple[tuple[int, int], tuple[Any, ...]]:
        node: Any = root
        pos = (1, 1)
        path: list[Any] = []
        for part in loc:
            if isinstance(node, CommentedMap) and part in node:
                line, col = node.lc.key(part)
            elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
                line, col = node.lc.item(part)
            else:
                # pydantic's union tags (e.g. 'assistant', 'str') name no place in the file
                continue
            node, pos = node[part], (line + 1, col + 1)
            path.append(part)
        return pos, tuple(path)

    return locate


def request_json_schema() -> dict[str, Any]:
    """The JSON Schema of the request file format (written to ``schemas/request.schema.json``)."""
    schema = ChatRequest.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
        "title": "capplan request file",
    }
