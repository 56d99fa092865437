"""Credential routing: the plan fields that decide which key is sent where, and with which headers.

A change to any of them is one a reviewer must look at, whatever else a pull request does: an
overlay that moves ``api_key_env`` to ``GITHUB_TOKEN`` or ``endpoint`` to another host sends a
secret of the CI job (or of every later run) to that host. ``capplan diff`` lists these changes in
a section of their own, whichever ``--checks`` run, and ``--fail-on credential-routing`` turns
them into an exit status CI can stop on.

A model only one side has is compared with the other side's routes: a new model whose binding
(with its OpenRouter headers) no old model used is a new credential route too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from capplan.compiler.diff.model import ABSENT, Change, RoutingChange
from capplan.compiler.diff.walk import Path, leaf_changes, source_of, subtree

CHECK = "credential-routing"

#: plan field → what it decides (the aspect a reviewer reads)
ROUTING_FIELDS: dict[Path, str] = {
    ("binding", "key"): "binding",
    ("binding", "binding", "endpoint"): "endpoint",
    ("binding", "binding", "api_base_env"): "endpoint variable",
    ("binding", "binding", "api_key_env"): "key variable",
    ("binding", "binding", "api_keys_env"): "key variable",
    ("binding", "binding", "key_file_env"): "key variable",
    ("binding", "binding", "custom_llm_provider"): "transport pin",
    ("binding", "binding", "kwargs_pin_transport"): "transport pin",
    ("binding", "binding", "unroutable"): "gateway",
    ("openrouter", "referer"): "gateway header",
    ("openrouter", "title"): "gateway header",
}


def routing_changes(old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]
                    ) -> tuple[RoutingChange, ...]:
    """Every routing change between two plan sets (bodies by model key), in model then field order."""
    out: list[RoutingChange] = []
    old_routes = {_route(body) for body in old.values()}
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key), new.get(key)
        if after is None:
            continue  # a removed model sends nothing any more
        if before is None:
            if _route(after) not in old_routes:
                out += _new_route(key, after)
            continue
        for path, aspect in ROUTING_FIELDS.items():
            for leaf, was, now in leaf_changes(subtree(before, path), subtree(after, path), path):
                out.append(RoutingChange(key, aspect, Change(CHECK, ".".join(leaf), was, now,
                                                             source_of(leaf, after, before))))
    return tuple(out)


def _new_route(key: str, body: Mapping[str, Any]) -> list[RoutingChange]:
    """The routing fields a model new to the diff sets (null and false fields route nothing)."""
    out = []
    for path, aspect in ROUTING_FIELDS.items():
        value = subtree(body, path)
        if value not in (ABSENT, None, False):
            out.append(RoutingChange(key, aspect, Change(CHECK, ".".join(path), ABSENT, value,
                                                         source_of(path, body, None))))
    return out


def _route(body: Mapping[str, Any]) -> str:
    return json.dumps([subtree(body, p) if subtree(body, p) is not ABSENT else None for p in ROUTING_FIELDS], sort_keys=True)


def located(changes: tuple[RoutingChange, ...], locate: Any) -> tuple[RoutingChange, ...]:
    """``changes`` with each layer at its line now (``locate`` is a LineIndex's ``locate``)."""
    return tuple(replace(r, change=replace(r.change, located=locate(r.change.source))) if r.change.source else r
                 for r in changes)
