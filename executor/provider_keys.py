"""The environment variables litellm itself reads a provider's key from, asked of litellm.

A binding without ``api_key_env`` (the bundled ``openai``, ``anthropic``, ``gemini``, ``xai``
ones) leaves the key to litellm, which reads a variable of its own choosing (``OPENAI_API_KEY``;
``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``; ...). That value is in play as much as a bound one, so
the redactor must know it; the names come from litellm at run time, never from a table here.

``litellm.validate_environment(model)`` tests ``NAME in os.environ`` for every variable the
model's provider may take its credentials from. Evaluated against an empty environment that
records each name asked for, it lists them all whether or not they are set, without reading or
changing the process environment (so it is safe beside concurrent calls).
"""

from __future__ import annotations

import os
import re
import types
from collections.abc import Iterator, Mapping
from typing import Any

from capplan.core.reference_mode import speed_memo

#: Variables that hold a credential rather than a location or a project name.
_CREDENTIAL_NAME = re.compile(r"(?i)key|token|secret|password")


class _AskedFor(Mapping[str, str]):
    """An empty environment that remembers every name looked up in it."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __getitem__(self, name: str) -> str:
        self.names.append(name)
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str):
            self.names.append(name)
        return False

    def get(self, name: str, default: Any = None) -> Any:
        self.names.append(name)
        return default

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def litellm_model(model: str, custom_llm_provider: str | None) -> str:
    """The model name litellm resolves its provider from: the routing hint as prefix when given."""
    if custom_llm_provider and not model.startswith(f"{custom_llm_provider}/"):
        return f"{custom_llm_provider}/{model}"
    return model


@speed_memo(maxsize=512)
def litellm_key_variables(model: str) -> tuple[str, ...]:
    """The credential variables litellm may read for ``model`` (imports litellm; cached per model)."""
    # without this litellm first tries to download its model cost map on import
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    check = litellm.validate_environment
    asked = _AskedFor()
    names: set[str] = set()
    try:
        probe = types.FunctionType(
            check.__code__, {**check.__globals__, "os": types.SimpleNamespace(environ=asked, getenv=asked.get)},
            check.__name__, check.__defaults__, check.__closure__,
        )
        result = probe(model=model)
        names.update(asked.names, result.get("missing_keys", ()))
    except Exception:  # noqa: BLE001 - litellm changed the function's shape: ask it the ordinary way
        names.update(check(model=model).get("missing_keys", ()))
    return tuple(sorted(n for n in names if isinstance(n, str) and _CREDENTIAL_NAME.search(n)))
