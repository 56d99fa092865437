"""thinkingmachines/inkling: dict-map hints that also reach ``$ref`` values and nested maps.

The model emits dict-map calls well in the plain shape but, on harder-worded variants,
sometimes answers in prose and leaves the call out: the lapse the ``dict_map_hints`` nudge is
for. The plain hints never fired on those variants, because their maps' value schemas are
``$ref``s (no fields to describe) or the map sits inside an object parameter (not at the
root). This variant adds exactly that reach.
"""

from __future__ import annotations

from typing import Any, ClassVar

from capplan.executor.policies.dict_maps import (
    DictMapParam,
    dict_map_hints_text,
    find_additional_properties,
    resolve_local_ref,
    tool_defs,
)
from capplan.executor.policies.prompt_policy import DictMapHints

__all__ = ["RefResolvingDictMapHints"]


class RefResolvingDictMapHints(DictMapHints):
    """``dict_map_hints`` that resolves ``$ref`` value schemas and looks one level into objects.

    A ``$ref`` (on a map's values or on an object parameter) is followed one hop through the
    tool's ``$defs``. A map inside an object parameter is hinted as ``<param>.<field>``, with an
    example nested the same way. Deeper levels are not searched: one level is what the evidence
    covers. A map the plain hints already describe gets the same paragraph here.
    """

    name: ClassVar[str] = "dict_map_hints_ref"

    def build_hints(self, tools: list[dict[str, Any]]) -> str:
        """Hints for root maps and maps one level inside object parameters, refs resolved."""
        return dict_map_hints_text(self.collect_dict_maps(tools))

    def collect_dict_maps(self, tools: list[dict[str, Any]]) -> list[DictMapParam]:
        """Every dict-map this policy describes, in tool and property order."""
        found: list[DictMapParam] = []
        for tool in tools:
            function = tool.get("function") if isinstance(tool, dict) else None
            params = function.get("parameters") if isinstance(function, dict) else None
            if not isinstance(function, dict) or not isinstance(params, dict):
                continue
            tool_name = str(function.get("name", ""))
            defs = tool_defs(params)
            props = params.get("properties")
            for prop, schema in props.items() if isinstance(props, dict) else ():
                if not isinstance(schema, dict):
                    continue
                param = self.dict_map_param(tool_name, (prop,), schema, defs)
                if param is not None:
                    found.append(param)
                    continue
                resolved = resolve_local_ref(schema, defs)
                nested = resolved.get("properties") if resolved.get("type") == "object" else None
                for field, sub in nested.items() if isinstance(nested, dict) else ():
                    sub_param = self.dict_map_param(tool_name, (prop, field), sub, defs)
                    if sub_param is not None:
                        found.append(sub_param)
        return found

    def dict_map_param(
        self, tool_name: str, path: tuple[str, ...], schema: Any, defs: dict[str, Any]
    ) -> DictMapParam | None:
        """The ``DictMapParam`` for ``schema`` if it declares a map, its value ``$ref`` resolved."""
        if not isinstance(schema, dict):
            return None
        declared = find_additional_properties(schema)
        if declared is None or declared is False:
            return None
        value = resolve_local_ref(declared, defs) if isinstance(declared, dict) else None
        return DictMapParam(
            tool_name=tool_name,
            path=path,
            value_schema=value,
            description=str(schema.get("description") or ""),
        )
