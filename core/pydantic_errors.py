"""Turn a pydantic ValidationError into located diagnostics, with did-you-mean for unknown keys."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from capplan.core.diagnostics import Diagnostic, InputError, did_you_mean
from capplan.core.env_var_names import CREDENTIAL_VALUE_MESSAGE, looks_like_credential
from capplan.core.yaml_source import SourceFile

M = TypeVar("M", bound=BaseModel)

_EFFORT_HINT = (
    "unsupported effort levels are declared as param_value_rules, e.g. "
    "`params: {param_value_rules: {reasoning_effort: {medium: {action: reject, evidence: \"<date>, <what was seen>\"}}}}`"
)


#: fields whose value an error message never quotes (see ``secret_field``)
_UNQUOTED_FIELDS = frozenset({"endpoint", "referer", "title"})


def parse(source: SourceFile, cls: type[M]) -> M:
    """Validate ``source.data`` as ``cls``; every problem in the file is reported at once."""
    try:
        return cls.model_validate(source.data)
    except ValidationError as exc:
        raise InputError([_unquoted(_diagnostic(source, cls, err), err) for err in exc.errors()]) from None


def _unquoted(diag: Diagnostic, err: Any) -> Diagnostic:
    """``diag`` without a key that may be a pasted credential (``rate_limits.keys.<sk-…>.x``) in its path."""
    loc = tuple(err["loc"])
    if len(loc) > 2 and loc[:2] == ("rate_limits", "keys") and isinstance(loc[2], str) and looks_like_credential(loc[2]):
        return dataclasses.replace(diag, path="rate_limits.keys[<credential-like key>]" + diag.path.partition(loc[2])[2])
    # any other key that looks like a pasted credential (an unknown key, say) is named by what it
    # looks like, in the path and in the message, never quoted
    for part in loc:
        if isinstance(part, str) and looks_like_credential(part):
            diag = dataclasses.replace(diag, path=diag.path.replace(part, CREDENTIAL_KEY),
                                       message=diag.message.replace(part, CREDENTIAL_KEY))
    return diag


#: what a credential-like key is shown as in a diagnostic
CREDENTIAL_KEY = "<credential-like key>"


def _diagnostic(source: SourceFile, root: type[BaseModel], err: Any) -> Diagnostic:
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p))  # drop validator labels
    kind = err["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        valid = _field_names_at(root, loc[:-1])
        if key == "unsupported_effort_levels":
            return source.diag(loc, "unsupported-effort-levels",
                               f"`unsupported_effort_levels` is not a key of this block; legal keys: {', '.join(sorted(valid))}",
                               _EFFORT_HINT)
        code = "unknown-litellm-flag" if loc and loc[0] == "litellm_models" else "unknown-key"
        return source.diag(loc, code, f"unknown key {key!r}", did_you_mean(key, valid))
    if kind == "missing":
        field = str(loc[-1])
        if field == "evidence":
            return source.diag(loc[:-1], "missing-evidence", "`evidence` is required",
                               "say what was observed, where and when, e.g. \"2026-08-01, litellm 1.96.0: …\"")
        return source.diag(loc[:-1], "missing-key", f"required key {field!r} is missing")
    if kind in ("string_too_short", "string_pattern_mismatch") and loc and loc[-1] == "evidence":
        return source.diag(loc, "missing-evidence", "`evidence` is " + ("empty" if kind == "string_too_short" else "blank"),
                           "say what was observed, where and when, e.g. \"2026-08-01, litellm 1.96.0: …\"")
    if kind in ("string_too_short", "string_pattern_mismatch", "too_short") \
            and any(part in ("match", "match_provider") for part in loc[-2:]):
        return source.diag(loc, "empty-glob", "a glob must not be empty or blank (it would match nothing)",
                           "write a glob such as \"acme-*\", or remove the entry")
    if kind == "list_type" and isinstance(err.get("input"), str):
        return source.diag(loc, "wrong-type", "must be a list, not a single string",
                           "a single item is still a list: write it in brackets, e.g. [\"first\"], or as a block list of `- item` lines")
    if kind == "finite_number":
        return source.diag(loc, "wrong-type", "must be a finite number (not .nan or .inf)")
    message = str(err["msg"]).removeprefix("Value error, ")
    if "needs a `with:` value" in message:
        return source.diag(loc, "override-without-with", message, "add `with: <value to send instead>`")
    if "`with:` only applies" in message:
        return source.diag(loc, "with-without-override", message, "remove `with:` or use `action: override`")
    if CREDENTIAL_VALUE_MESSAGE in message:  # never echo what may be a secret
        return source.diag(loc, "credential-value", message,
                           "put the key in an environment variable and name that variable here, e.g. ACME_API_KEY")
    got = err.get("input")
    # whatever was pasted into a variable-name field may be a key; an endpoint may carry a password;
    # a header value may be a token, and its control characters would garble the terminal
    secret_field = bool(loc) and (str(loc[-1]).endswith("_env") or loc[-1] in _UNQUOTED_FIELDS)
    shown = f" (got {got!r})" if not secret_field and (isinstance(got, (str, int, float, bool)) or got is None) else ""
    return source.diag(loc, "wrong-type", message + shown)


def _field_names_at(root: type[BaseModel], loc: tuple[Any, ...]) -> set[str]:
    """Field names valid at ``loc`` below ``root`` (the keys a mapping there may have)."""
    current: Any = root
    for part in loc:
        current = _step(current, part)
        if current is None:
            return set()
    model = _as_model(current)
    if model is None:
        return set()
    return {f.alias or name for name, f in model.model_fields.items()}


def _step(tp: Any, part: Any) -> Any:
    model = _as_model(tp)
    if model is not None:
        for name, field in model.model_fields.items():
            if part in (name, field.alias):
                return field.annotation
        root_field = model.model_fields.get("root")
        return _step(root_field.annotation, part) if root_field else None
    tp = _unwrap(tp)
    origin = get_origin(tp)
    if origin in (dict, typing.Mapping):
        return get_args(tp)[1]
    if origin in (list, tuple):
        return get_args(tp)[0]
    return None


def _unwrap(tp: Any) -> Any:
    while True:
        origin = get_origin(tp)
        if origin is typing.Annotated:
            tp = get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            tp = args[0] if len(args) == 1 else next((a for a in args if _as_model(a)), args[0])
        else:
            return tp


def _as_model(tp: Any) -> type[BaseModel] | None:
    tp = _unwrap(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None
