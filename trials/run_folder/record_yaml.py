"""The YAML of a trial's records (``trajectory.yaml``, ``metrics.yaml``), built with less Python per node.

PyYAML's C dumper emits in C but still represents every value in Python, through a generic
dispatch (type MRO lookup, alias bookkeeping for every str and int) and resolves every scalar
twice against the implicit-tag regexes. A trial's records are a few hundred plain nodes, written
once per trial on a thread that shares the GIL with every other running trial, so that per-node
cost is a visible share of a run's CPU. :class:`RecordDumper` takes a direct path for the exact
builtin types (``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``) that builds the
very nodes the generic representer builds (same tags, styles, aliases for a container seen twice),
and remembers the resolution of short scalars; anything else goes through PyYAML unchanged. The
bytes written are identical to ``yaml.dump(..., Dumper=CSafeDumper)`` (tests/trials/test_record_yaml.py).
A record of plain data skips the nodes altogether: :mod:`.record_emitter` writes it straight.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from capplan.core.reference_mode import reference_mode, speed_memo
from capplan.trials.run_folder.record_emitter import emit_records_yaml

try:
    _Base: type[yaml.SafeDumper] = yaml.CSafeDumper
except AttributeError:  # PyYAML built without libyaml
    _Base = yaml.SafeDumper

_STR, _INT, _FLOAT, _BOOL, _NULL = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null"))
_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
#: scalars longer than this are resolved each time (a message's text is rarely repeated; keys and enums are)
_CACHED_SCALAR_LEN = 64


@speed_memo(maxsize=8192)  # keys and enums repeat across records; the resolver is pure
def _resolve_scalar(value: str, implicit: tuple[bool, bool]) -> Any:
    return yaml.SafeDumper.resolve(_RESOLVER, ScalarNode, value, implicit)


class RecordDumper(_Base):  # type: ignore[misc]
    """``CSafeDumper`` with a direct representation of plain data (see the module's docstring)."""

    def represent_data(self, data: Any) -> Node:
        kind = type(data)
        style = self.default_style
        if kind is str:
            return ScalarNode(_STR, data, style=style)
        if kind is bool:
            return ScalarNode(_BOOL, "true" if data else "false", style=style)
        if kind is int:
            return ScalarNode(_INT, str(data), style=style)
        if data is None:
            return ScalarNode(_NULL, "null", style=style)
        if kind is float:
            return super().represent_data(data)  # nan, inf and exponent spelling: PyYAML's own rules
        if kind is dict or kind is list:
            key = id(data)
            seen = self.represented_objects.get(key)
            if seen is not None:
                return seen  # the same container twice: an alias, as PyYAML writes it
            self.object_keeper.append(data)
            return self._mapping(data, key) if kind is dict else self._sequence(data, key)
        return super().represent_data(data)

    def _mapping(self, data: dict[Any, Any], key: int) -> MappingNode:
        value: list[tuple[Node, Node]] = []
        node = MappingNode(_MAP, value, flow_style=None)
        self.represented_objects[key] = node
        best = True
        items = list(data.items())
        if self.sort_keys:
            try:
                items = sorted(items)
            except TypeError:
                pass
        for item_key, item_value in items:
            node_key = self.represent_data(item_key)
            node_value = self.represent_data(item_value)
            if not (isinstance(node_key, ScalarNode) and not node_key.style):
                best = False
            if not (isinstance(node_value, ScalarNode) and not node_value.style):
                best = False
            value.append((node_key, node_value))
        node.flow_style = self.default_flow_style if self.default_flow_style is not None else best
        return node

    def _sequence(self, data: list[Any], key: int) -> SequenceNode:
        value: list[Node] = []
        node = SequenceNode(_SEQ, value, flow_style=None)
        self.represented_objects[key] = node
        best = True
        for item in data:
            node_item = self.represent_data(item)
            if not (isinstance(node_item, ScalarNode) and not node_item.style):
                best = False
            value.append(node_item)
        node.flow_style = self.default_flow_style if self.default_flow_style is not None else best
        return node

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        # the safe resolver has no path resolvers: a scalar's tag depends on its text and `implicit` only
        if kind is ScalarNode and type(value) is str:
            # the emitter asks twice per scalar; PyYAML's resolver answers the default tag without a
            # regex when the scalar is not to be read as plain, or when no implicit resolver is filed
            # under its first character (and none under every character)
            resolvers = self.yaml_implicit_resolvers
            if not implicit[0] or (value[:1] not in resolvers and None not in resolvers):
                return self.DEFAULT_SCALAR_TAG
            if len(value) <= _CACHED_SCALAR_LEN:
                return _resolve_scalar(value, implicit if type(implicit) is tuple else tuple(implicit))
        return super().resolve(kind, value, implicit)

    # without path resolvers PyYAML's own versions return at once; the emitter calls them for every node
    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        return None

    def ascend_resolver(self) -> None:
        return None


#: resolution is a pure function of the class's resolver tables; one instance serves the cache
_RESOLVER = yaml.SafeDumper(None)
assert not yaml.SafeDumper.yaml_path_resolvers, "path resolvers would make a scalar's tag depend on its place"


def dump_records_yaml(data: Any) -> bytes:
    """``data`` as the YAML of a trial record: block style, keys in order, UTF-8, lines up to 120."""
    # seam "record dumper": plain data is written straight (record_emitter), anything else with less Python
    # per node; the reference mode uses PyYAML's own representer (the same bytes, tests hold it)
    if reference_mode():
        dumper = _Base
    else:
        direct = emit_records_yaml(data)
        if direct is not None:
            return direct.encode("utf-8")
        dumper = RecordDumper
    text: str = yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, width=120)
    return text.encode("utf-8")
