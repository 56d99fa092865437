"""capplan's requests against tolokaforge 0.29.0's, case by case, field by field.

The upstream side is ``golden/upstream/<model>.json``, written only by ``tools/upstream_oracle.py``
in a venv with the upstream engine. This side compiles the same catalogue entry with the same
variant settings against the same data (tolokaforge-models 1.8.0, a test dependency) and builds
the same conversation. Every difference is a :class:`Difference` at the most specific path where
the two requests part; ``docs/deviations.md`` lists the ones capplan keeps, and
:func:`match_deviations` tells listed from unlisted.

    python -m tests.upstream.parity            # a summary of every difference, by path and model
"""

from __future__ import annotations

import fnmatch
import json
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "golden" / "upstream"
DEVIATIONS = REPO / "docs" / "deviations.md"
REGENERATE = "python tools/upstream_oracle.py  (in a venv with tolokaforge==0.29.0; README, Contributing)"
REDACTED = "<redacted>"
CREDENTIALS = {"NOVA_API_KEY": "golden-credential"}

sys.path.insert(0, str(REPO / "tools"))
import upstream_cases as cases  # noqa: E402


@dataclass(frozen=True)
class Difference:
    """Where one case's two requests part: ``path`` is dotted, list items as ``[i]``."""

    model: str
    case: str
    path: str
    upstream: Any
    capplan: Any


@dataclass(frozen=True)
class Deviation:
    """One entry of docs/deviations.md: the paths and models it covers."""

    ident: str
    title: str
    fields: tuple[str, ...]
    models: tuple[str, ...]
    cases: tuple[str, ...]
    reason: str

    def covers(self, diff: Difference) -> bool:
        return (any(field_pattern(f).fullmatch(diff.path) for f in self.fields)
                and ("*" in self.models or diff.model in self.models)
                and any(fnmatch.fnmatchcase(diff.case, c) for c in self.cases))


def field_pattern(glob: str) -> re.Pattern[str]:
    """A field glob as a regex: ``[*]`` is any list index, ``*`` any run of characters."""
    parts = re.split(r"(\[\*\]|\*)", glob)
    return re.compile("".join(r"\[\d+\]" if p == "[*]" else ".*" if p == "*" else re.escape(p) for p in parts))


@dataclass
class Comparison:
    """Every case compared, and the differences found."""

    compared: int = 0
    equal: int = 0
    differences: list[Difference] = field(default_factory=list)


def upstream_fixtures() -> dict[str, dict[str, Any]]:
    """model key -> {case -> recorded result}."""
    return {p.stem: json.loads(p.read_text(encoding="utf-8"))["cases"]
            for p in sorted(FIXTURES.glob("*.json")) if p.name != "MANIFEST.json"}


def catalogue() -> dict[str, dict[str, Any]]:
    from ruamel.yaml import YAML

    from capplan.presets import data_dir

    models: dict[str, dict[str, Any]] = YAML(typ="safe", pure=True).load(
        (data_dir() / "catalogue.yaml").read_text(encoding="utf-8"))["models"]
    return {key: entry for key, entry in models.items() if entry["provider"] != "mock"}


def upstream_data_dir() -> Path:
    import tolokaforge_models

    return Path(tolokaforge_models.__file__).parent / "data"


def _plans(tmp: Path) -> dict[tuple[str, str], Any]:
    """One plan per (model, variant), or the compile error that refused it."""
    from capplan.compiler.compile import compile_models
    from capplan.core.diagnostics import InputError
    from capplan.compiler.inputs.run_config import ModelConfig
    from capplan.compiler.loading import load_inputs

    run = tmp / "run.yaml"
    run.write_text(json.dumps({"models": {"placeholder": {"provider": "openai", "name": "x"}}}), encoding="utf-8")
    inputs = load_inputs(data_dir=upstream_data_dir(), run_config=run, overlays=[])
    out: dict[tuple[str, str], Any] = {}
    for key, entry in catalogue().items():
        for vname, variant in cases.VARIANTS.items():
            block = cases.model_config(entry, variant)
            try:
                cfg = ModelConfig.model_validate(block)
                out[(key, vname)] = compile_models(inputs, {key: cfg}).plans[key]
            except (InputError, ValueError) as exc:
                out[(key, vname)] = exc
    return out


def capplan_result(plan: Any, variant: dict[str, Any], conversation: dict[str, Any]) -> dict[str, Any]:
    """What capplan does with one case: the kwargs it builds, or the error that refused it."""
    from capplan.executor.client import Client
    from capplan.core.errors import UserError
    from capplan.executor.transport import redact

    if isinstance(plan, Exception):
        return {"error": {"type": type(plan).__name__, "message": str(plan)}}
    try:
        kwargs = Client(plan, env=dict(CREDENTIALS)).build_request({**conversation, **variant["call"]})
    except Exception as exc:  # noqa: BLE001 - only user-facing refusals are results; others re-raise
        if not isinstance(exc, (UserError, ValueError)):
            raise
        return {"error": {"type": type(exc).__name__, "message": str(exc)}}
    return {"kwargs": json.loads(json.dumps(redact(kwargs)))}


def compare(tmp: Path) -> Comparison:
    """Build every recorded case with capplan and diff it against the fixture."""
    fixtures = upstream_fixtures()
    plans = _plans(tmp)
    result = Comparison()
    for key, entry in catalogue().items():
        recorded = fixtures.get(key)
        if recorded is None:
            raise AssertionError(f"golden/upstream/{key}.json is missing; regenerate: {REGENERATE}")
        for vname, variant in cases.VARIANTS.items():
            for cname, conversation in cases.CONVERSATIONS.items():
                if not cases.applies(variant, conversation, entry["provider"]):
                    continue
                case = f"{vname}/{cname}"
                upstream = recorded.get(case)
                digest = cases.case_digest(conversation, variant, cases.model_config(entry, variant))
                if upstream is None or upstream.get("case_digest") != digest:
                    raise AssertionError(f"golden/upstream/{key}.json has no current record of {case}; "
                                         f"regenerate: {REGENERATE}")
                mine = capplan_result(plans[(key, vname)], variant, conversation)
                found = diff_results(key, case, upstream, mine)
                result.compared += 1
                result.equal += not found
                result.differences += found
    return result


def diff_results(model: str, case: str, upstream: dict[str, Any], mine: dict[str, Any]) -> list[Difference]:
    """Both refused: equal (the messages are each engine's own); one refused: a difference at ``error``."""
    if "error" in upstream or "error" in mine:
        if "error" in upstream and "error" in mine:
            return []
        return [Difference(model, case, "error", upstream.get("error"), mine.get("error"))]
    return diff_values(model, case, "", upstream["kwargs"], mine["kwargs"])


_MISSING = object()


def diff_values(model: str, case: str, path: str, a: Any, b: Any) -> list[Difference]:
    """Differences between two JSON values, at the most specific path where they part."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            sub = f"{path}.{key}" if path else key
            va, vb = a.get(key, _MISSING), b.get(key, _MISSING)
            # a subtree only one side has is compared leaf by leaf against an empty one, so a
            # listed leaf (extra_body.provider.data_collection) cannot hide an unlisted sibling
            if va is _MISSING and isinstance(vb, dict) and vb:
                va = {}
            elif vb is _MISSING and isinstance(va, dict) and va:
                vb = {}
            if va is _MISSING or vb is _MISSING:
                out.append(Difference(model, case, sub, None if va is _MISSING else va,
                                      None if vb is _MISSING else vb))
            else:
                out += diff_values(model, case, sub, va, vb)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (va, vb) in enumerate(zip(a, b)):
            out += diff_values(model, case, f"{path}[{i}]", va, vb)
        return out
    if a == b and type(a) is type(b):
        return []
    return [Difference(model, case, path, a, b)]


_ENTRY = re.compile(r"^## (D\d+)\s+(.+)$")
_LIST_FIELD = re.compile(r"^- \*\*(fields|models|cases|why)\*\*:\s*(.*)$")


def load_deviations(text: str) -> list[Deviation]:
    """Parse docs/deviations.md: ``## Dn title`` then ``- **fields**: `a`, `b` `` style lines."""
    out: list[Deviation] = []
    current: dict[str, Any] | None = None

    def flush() -> None:
        if current is None:
            return
        missing = [k for k in ("fields", "models", "why") if not current.get(k)]
        if missing:
            raise ValueError(f"docs/deviations.md: {current['ident']} lacks {', '.join(missing)}")
        out.append(Deviation(current["ident"], current["title"], tuple(current["fields"]), tuple(current["models"]),
                             tuple(current.get("cases") or ["*"]), current["why"]))

    last: str | None = None
    for line in text.splitlines():
        head = _ENTRY.match(line)
        if head:
            flush()
            current, last = {"ident": head.group(1), "title": head.group(2).strip()}, None
            continue
        item = _LIST_FIELD.match(line)
        if item and current is not None:
            name, value = item.groups()
            current[name] = value.strip() if name == "why" else re.findall(r"`([^`]+)`", value)
            last = name
        elif current is not None and last == "why" and line.startswith("  ") and line.strip():
            current["why"] += " " + line.strip()  # a list item's continuation lines
    flush()
    return out


def match_deviations(diffs: list[Difference], deviations: list[Deviation]
                     ) -> tuple[list[Difference], dict[str, list[Difference]], list[str]]:
    """(unlisted differences, differences per deviation, listed models / entries that no longer occur)."""
    unlisted: list[Difference] = []
    hits: dict[str, list[Difference]] = {d.ident: [] for d in deviations}
    for diff in diffs:
        owner = next((d for d in deviations if d.covers(diff)), None)
        if owner is None:
            unlisted.append(diff)
        else:
            hits[owner.ident].append(diff)
    stale = []
    for dev in deviations:
        seen = {h.model for h in hits[dev.ident]}
        if not seen:
            stale.append(f"{dev.ident} ({dev.title}): no longer occurs")
        elif "*" not in dev.models:
            stale += [f"{dev.ident} ({dev.title}): no longer occurs for {m}" for m in dev.models if m not in seen]
    return unlisted, hits, stale


def summary(diffs: list[Difference]) -> str:
    """Differences grouped by path (list indices folded to ``[*]``), with models and one example."""
    groups: dict[str, list[Difference]] = defaultdict(list)
    for d in diffs:
        groups[re.sub(r"\[\d+\]", "[*]", d.path)].append(d)
    lines = []
    for path, items in sorted(groups.items()):
        models = sorted({d.model for d in items})
        first = items[0]
        lines.append(f"{path}: {len(items)} in {len({(d.model, d.case) for d in items})} builds; models: {', '.join(models)}")
        lines.append(f"    e.g. {first.model} {first.case}: upstream={_short(first.upstream)} capplan={_short(first.capplan)}")
    return "\n".join(lines)


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def main() -> int:
    import logging
    import tempfile

    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        result = compare(Path(tmp))
    print(summary(result.differences))
    deviations = load_deviations(DEVIATIONS.read_text(encoding="utf-8")) if DEVIATIONS.exists() else []
    unlisted, hits, stale = match_deviations(result.differences, deviations)
    builds_with_listed = {(d.model, d.case) for ds in hits.values() for d in ds}
    by_build: dict[tuple[str, str], set[str]] = defaultdict(set)
    for ident, ds in hits.items():
        for d in ds:
            by_build[(d.model, d.case)].add(ident)
    first = deviations[0].ident if deviations else None
    only_first = sum(1 for ids in by_build.values() if ids == {first})
    print(f"\nbuilds compared: {result.compared}; equal: {result.equal}; "
          f"equal but for {first} alone: {only_first}; "
          f"differing only by listed deviations: {len(builds_with_listed - {(d.model, d.case) for d in unlisted})}; "
          f"listed deviations: {len(deviations)}; unlisted differences: {len(unlisted)}; stale entries: {len(stale)}")
    for dev in deviations:
        print(f"  {dev.ident}: {len({(d.model, d.case) for d in hits[dev.ident]})} builds — {dev.title}")
    for line in stale:
        print(f"  stale: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
