"""Checks on values a schema alone does not catch: URLs, names that become paths, pasted keys.

Every function here returns located diagnostics instead of raising, and no message quotes the
value it is about: an endpoint may carry a password, a "variable name" may be a pasted key.
"""

from __future__ import annotations

from collections.abc import Iterable

from capplan.core.diagnostics import Diagnostic
from capplan.core.env_var_names import CREDENTIAL_VALUE_MESSAGE, env_var_name, looks_like_credential
from capplan.core.safe_names import name_problem
from capplan.core.value_types import http_url_problem
from capplan.core.yaml_source import Loc, SourceFile


def url_problem(value: object) -> str | None:
    """What is wrong with ``value`` as an endpoint (an http(s) base URL with a host), or None.

    The plan model's rule (:func:`capplan.core.value_types.http_url_problem`), so the compiler never
    writes an endpoint a plan load would refuse.
    """
    if not isinstance(value, str):
        return None  # the schema reports the type
    return http_url_problem(value)


def variable_name_diagnostic(source: SourceFile, loc: Loc, shown: str, name: str, what: str) -> Diagnostic | None:
    """A located error when ``name`` is not an environment variable name; the text never quotes it.

    ``shown`` is the key path printed in place of ``loc`` (which ends with the name itself).
    """
    if looks_like_credential(name):
        return _at(source, loc, shown, "credential-value", f"{what} {CREDENTIAL_VALUE_MESSAGE}",
                   "name the environment variable that holds the key (e.g. OPENROUTER_API_KEY), never the key; "
                   "rotate the key if this file was shared")
    try:
        env_var_name(name)
    except ValueError as exc:
        return _at(source, loc, shown, "not-a-variable-name", f"{what} is {exc}")
    return None


def _at(source: SourceFile, loc: Loc, shown: str, code: str, message: str, hint: str | None = None) -> Diagnostic:
    line, col = source.position(loc)
    return Diagnostic(source.display, line, col, code, message, shown, hint)


def check_endpoints(source: SourceFile, at: Loc, bindings: object) -> list[Diagnostic]:
    """Every binding's ``endpoint`` in the raw mapping ``bindings`` (found at ``at``) is an http(s) URL."""
    out: list[Diagnostic] = []
    if not isinstance(bindings, dict):
        return out
    for key, entry in bindings.items():
        endpoint = entry.get("endpoint") if isinstance(entry, dict) else None
        problem = url_problem(endpoint)
        if problem is not None:
            out.append(source.diag((*at, key, "endpoint"), "bad-url", f"endpoint {problem}",
                                   "write the provider's base URL, e.g. https://llm.example.com/v1"))
    return out


def check_rate_limit_names(source: SourceFile, providers: Iterable[str], keys: Iterable[str]) -> list[Diagnostic]:
    """``rate_limits``: provider names are binding keys, key names are variable names (never keys)."""
    out: list[Diagnostic] = []
    for index, name in enumerate(keys):
        found = variable_name_diagnostic(source, ("rate_limits", "keys", name), f"rate_limits.keys[{index}]", name,
                                         f"rate_limits.keys entry {index + 1}")
        if found is not None:
            out.append(found)
    for index, name in enumerate(providers):
        problem = name_problem(name)
        if problem is not None or looks_like_credential(name):
            out.append(_at(source, ("rate_limits", "providers", name), f"rate_limits.providers[{index}]",
                           "credential-value" if problem is None else "unsafe-name",
                           f"rate_limits.providers entry {index + 1} "
                           + (CREDENTIAL_VALUE_MESSAGE if problem is None else problem),
                           "name a provider binding key, e.g. openrouter"))
    return out
