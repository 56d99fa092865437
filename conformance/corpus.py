"""The conformance corpus: one rule per provider acceptance check, as data with its source.

A rule names the protocol and routes that enforce it, the models it holds for (globs on the model
as the route is sent it), the condition a request breaks (``check``: a predicate the protocol's
emulator implements, with ``params``), the status and error body the provider answers (``error``'s
strings may hold ``{field}`` placeholders the check fills, such as a message index), and the
public sources it was observed in, each with its date. The bundled corpus is
``capplan/presets/conformance/*.yaml``; ``--corpus FILE`` replaces it.
"""

from __future__ import annotations

import datetime
import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from capplan.core.default_factories import empty_dict
from capplan.core.diagnostics import Diagnostic, InputError, did_you_mean
from capplan.core.pydantic_errors import parse
from capplan.core.yaml_source import SourceFile, read_bundled, read_source

#: the wire protocols an emulator speaks
Protocol = Literal["openai-chat", "openai-responses", "anthropic-messages", "gemini-generate-content"]
PROTOCOLS: tuple[str, ...] = ("openai-chat", "openai-responses", "anthropic-messages", "gemini-generate-content")

#: the routes (who serves the protocol) a rule can be scoped to
Route = Literal["openai", "azure_ai", "xai", "openrouter", "deepseek", "moonshot", "vllm", "llama.cpp",
                "anthropic", "bedrock", "gemini", "nova"]

BUNDLED_DIR = Path(__file__).resolve().parents[1] / "presets" / "conformance"
BUNDLED_DISPLAY = "bundled:conformance"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(_Model):
    """Where a rule's error was observed: a public page, and the date it shows the error on."""

    url: str = Field(description="The public page (issue, pull request, documentation) that shows the error.")
    observed: datetime.date = Field(description="The date the page shows the error on (YYYY-MM-DD).")
    note: str | None = Field(None, description="What the page shows, when the URL alone does not say.")


class Rule(_Model):
    """One acceptance rule a provider enforces."""

    id: str = Field(pattern=r"^[a-z0-9_]+(\.[a-z0-9_]+)+$", description="Stable id: `<family>.<what>`.")
    title: str = Field(min_length=1, description="One line: what the provider refuses.")
    protocol: Protocol
    routes: tuple[Route, ...] = Field(min_length=1, description="The routes that enforce it.")
    models: tuple[str, ...] = Field(("*",), min_length=1, description="Globs on the model as the route is sent it.")
    check: str = Field(min_length=1, description="The emulator predicate that finds the condition in a request.")
    params: dict[str, Any] = Field(default_factory=empty_dict, description="The predicate's parameters.")
    status: int = Field(ge=200, le=599, description="The HTTP status the provider answers: 4xx/5xx, or 200 for a "
                        "refusal the route returns as a failed completion (OpenRouter's MALFORMED_FUNCTION_CALL).")
    error: dict[str, Any] = Field(description="The error body the provider answers; strings may hold {field} placeholders.")
    sources: tuple[Source, ...] = Field(min_length=1)
    principle: str | None = Field(None, description="The general requirement this rule is an instance of.")

    @field_validator("models")
    @classmethod
    def _globs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for glob in value:
            if not glob or glob != glob.strip():
                raise ValueError(f"model glob {glob!r} is empty or has surrounding spaces")
        return value

    def applies(self, protocol: str, route: str, model: str) -> bool:
        """Whether this rule holds for a request of ``protocol`` on ``route`` for ``model``."""
        return (self.protocol == protocol and route in self.routes
                and any(fnmatch.fnmatchcase(model, glob) for glob in self.models))

    def render_error(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """The error body with the check's fields put into its placeholders."""
        filled: dict[str, Any] = _fill(self.error, fields)
        return filled


def _fill(value: Any, fields: Mapping[str, Any]) -> Any:
    if isinstance(value, str):
        out = value
        for key, field_value in fields.items():
            out = out.replace("{" + key + "}", str(field_value))
        return out
    if isinstance(value, dict):
        return {k: _fill(v, fields) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, fields) for v in value]
    return value


class RulesFile(_Model):
    """One corpus file."""

    corpus_version: Literal[1] = Field(description="The corpus format; 1.")
    rules: tuple[Rule, ...] = Field(min_length=1)


class Corpus:
    """Every rule, by id, in file order."""

    def __init__(self, rules: Iterable[Rule], files: Sequence[str] = ()) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.by_id: dict[str, Rule] = {rule.id: rule for rule in self.rules}
        self.files = tuple(files)

    def for_route(self, protocol: str, route: str, model: str) -> tuple[Rule, ...]:
        """The rules a request of ``protocol`` on ``route`` for ``model`` is held to."""
        return tuple(rule for rule in self.rules if rule.applies(protocol, route, model))

    def select(self, patterns: Sequence[str]) -> Corpus:
        """The rules whose id matches one of ``patterns`` (ids or globs); an unmatched pattern is an error."""
        chosen: dict[str, Rule] = {}
        problems: list[Diagnostic] = []
        for pattern in patterns:
            hits = [rule for rule in self.rules if fnmatch.fnmatchcase(rule.id, pattern)]
            if not hits:
                hint = did_you_mean(pattern, self.by_id)
                problems.append(Diagnostic("--rules", 1, 1, "RULE", f"no conformance rule matches {pattern!r}",
                                           hint=hint or "`capplan conformance --list-rules` lists every rule id"))
            chosen.update((rule.id, rule) for rule in hits)
        if problems:
            raise InputError(problems)
        return Corpus((rule for rule in self.rules if rule.id in chosen), self.files)


def load_corpus(paths: Sequence[Path] = (), *, checks: Mapping[str, frozenset[str]] | None = None) -> Corpus:
    """The rules in ``paths`` (files, or folders of ``*.yaml``), or the bundled corpus when none.

    ``checks`` maps each protocol to the predicates its emulator implements: a rule naming another
    is a located error, as is a duplicate id (every problem of every file is reported at once).
    """
    sources: list[SourceFile] = []
    if paths:
        for path in paths:
            files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
            sources += [read_source(file) for file in files]
    else:
        sources = [read_bundled(file, f"{BUNDLED_DISPLAY}/{file.name}") for file in sorted(BUNDLED_DIR.glob("*.yaml"))]
    problems: list[Diagnostic] = []
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    for source in sources:
        try:
            parsed = parse(source, RulesFile)
        except InputError as exc:
            problems += exc.diagnostics
            continue
        for index, rule in enumerate(parsed.rules):
            line, col = source.position(("rules", index, "id"))
            if rule.id in seen:
                problems.append(Diagnostic(source.display, line, col, "RULE", f"rule id {rule.id!r} is also defined in {seen[rule.id]}",
                                           path=f"rules[{index}].id", hint="rule ids are unique across the corpus"))
            seen.setdefault(rule.id, source.display)
            known = (checks or {}).get(rule.protocol)
            if checks is not None and (known is None or rule.check not in known):
                line, col = source.position(("rules", index, "check"))
                hint = did_you_mean(rule.check, known or ())
                problems.append(Diagnostic(source.display, line, col, "RULE",
                                           f"the {rule.protocol} emulator has no check {rule.check!r}", path=f"rules[{index}].check",
                                           hint=hint or f"known checks: {', '.join(sorted(known or ())) or 'none'}"))
            rules.append(rule)
    if problems:
        raise InputError(problems)
    return Corpus(rules, [source.display for source in sources])
