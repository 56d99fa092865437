"""Warn when a binding would send a credential that is not its provider's key to a non-default endpoint.

A binding names an environment variable (``api_key_env``, ``api_keys_env``, ``key_file_env``) and
an ``endpoint``; every call then sends that variable's value there. An overlay from a pull request
could pair ``GITHUB_TOKEN`` (or ``AWS_SECRET_ACCESS_KEY``, or another provider's key) with an
endpoint of its choosing, and the CI job that lints it has that token in its environment.

The rule, stated in the hint so a reader can predict it: a variable is the binding's own key when
its name starts with ``<KEY>_`` and ends with ``_KEY``, ``_KEYS`` or ``_KEY_FILE`` (so
``ACME_API_KEY``, ``ACME_GATEWAY_KEY``), where ``<KEY>`` is the binding key upper-cased (any
other character → ``_``), and contains none of ``TOKEN``, ``SECRET``, ``PASSWORD``, ``ACCESS``, ``SESSION`` (words of CI and
cloud credentials). The endpoint is non-default when it differs from the shipped binding's (every
endpoint of a binding capplan does not ship is non-default).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from capplan.core.diagnostics import Diagnostic
from capplan.core.yaml_source import Loc, SourceFile
from capplan.executor.binding import ProviderBinding

CODE = "key-to-foreign-endpoint"
KEY_FIELDS = ("api_key_env", "api_keys_env", "key_file_env")
_SUFFIXES = ("_KEY", "_KEYS", "_KEY_FILE")
_NOT_PROVIDER_WORDS = ("TOKEN", "SECRET", "PASSWORD", "ACCESS", "SESSION")

HINT = ("a binding's own key variable is named <KEY>_…_KEY, _KEYS or _KEY_FILE for binding <KEY> (upper-cased, "
        "e.g. ACME_API_KEY), without TOKEN/SECRET/PASSWORD/ACCESS/SESSION; rename the variable to that form, or keep "
        "the shipped endpoint; review this before merging: the variable's value is sent to that endpoint")


def own_key_variable(binding_key: str, name: str) -> bool:
    """True when ``name`` is, by the rule above, the key variable of binding ``binding_key``."""
    prefix = re.sub(r"[^A-Z0-9]", "_", binding_key.upper())
    upper = name.upper()
    if any(word in upper for word in _NOT_PROVIDER_WORDS):
        return False
    return name.startswith(prefix + "_") and name.endswith(_SUFFIXES) and len(name) >= len(prefix) + 4


def foreign_key_warnings(source: SourceFile, at: Loc, written: Mapping[str, ProviderBinding],
                         shipped: Mapping[str, ProviderBinding], *, patches: bool) -> list[Diagnostic]:
    """Warnings for each binding of ``written`` (at ``at`` in ``source``) that sends a variable not its
    own to a non-default endpoint. ``patches``: the bindings change only the fields they write (an
    overlay), so the effective binding is the shipped one with those fields replaced."""
    out: list[Diagnostic] = []
    for key, binding in written.items():
        base = shipped.get(key)
        effective = binding
        if patches and base is not None:
            effective = base.model_copy(update={f: getattr(binding, f) for f in binding.model_fields_set})
        default_endpoint = base.endpoint if base is not None else None
        if effective.endpoint is None or effective.endpoint == default_endpoint:
            continue
        for fld in KEY_FIELDS:
            name = getattr(effective, fld)
            if name is None or own_key_variable(key, name):
                continue
            where = (*at, key, fld) if fld in binding.model_fields_set or not patches else (*at, key, "endpoint")
            out.append(source.diag(where, CODE,
                                   f"binding {key!r} sends the value of {name} ({fld}) to an endpoint other than "
                                   "the shipped one; that name does not look like this provider's key",
                                   HINT, severity="warning"))
    return out
