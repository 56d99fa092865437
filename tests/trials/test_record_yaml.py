"""The records' YAML dumper writes exactly the bytes PyYAML's safe dumper writes."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
import yaml

from capplan.trials.run_folder.record_yaml import dump_records_yaml

_BASE = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _reference(data: Any) -> bytes:
    text: str = yaml.dump(data, Dumper=_BASE, sort_keys=False, allow_unicode=True, width=120)
    return text.encode("utf-8")


# scalars whose tag resolution matters: each looks like another type and must come out quoted
_TRICKY = ["", "null", "~", "Null", "true", "False", "yes", "on", "off", "1", "-1", "0x1F", "0o7", "1_000", "1.5",
           ".inf", "-.inf", ".nan", "1e3", "2024-01-01", "2024-01-01T10:00:00Z", "12:30:45", "<<", "=", "a: b",
           "- x", "#c", "@x", "`x", "'q'", '"dq"', "tab\there", "line\nbreak", "trailing ", " leading", "ünïcødé",
           "\u2028", "emoji 🙂", "x" * 200, "word " * 40, "{a: 1}", "[1, 2]", "*alias", "&anchor", "!tag", "%", "?",
           "|", ">", "...", "---"]
_SCALARS: list[Any] = [None, True, False, 0, 1, -7, 10**20, 0.0, -0.0, 1.5, 1e17, 1e-7, 3.14159, float("inf"),
                       -float("inf"), math.nan, *_TRICKY]


def _tree(rng: random.Random, depth: int) -> Any:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(_SCALARS)
    if rng.random() < 0.5:
        return [_tree(rng, depth - 1) for _ in range(rng.randrange(0, 5))]
    return {rng.choice(_TRICKY + ["role", "content", "tool_calls", "n"]): _tree(rng, depth - 1)
            for _ in range(rng.randrange(0, 5))}


@pytest.mark.parametrize("seed", range(40))
def test_random_trees_are_byte_identical(seed: int) -> None:
    data = _tree(random.Random(seed), 6)
    assert dump_records_yaml(data) == _reference(data)


def test_a_container_seen_twice_is_an_alias_as_pyyaml_writes_it() -> None:
    shared = {"a": [1, 2]}
    data = {"x": shared, "y": shared, "z": [shared["a"], shared["a"]]}
    out = dump_records_yaml(data)
    assert out == _reference(data)
    assert b"&id" in out and b"*id" in out


def test_other_types_go_through_pyyaml_unchanged() -> None:
    data = {"t": (1, "a"), "s": {3}, "b": b"\x00\xff", "k": {(1, 2): "tuple key", 5: "int key", None: "null key"}}
    assert dump_records_yaml(data) == _reference(data)

    class Tagged(str):
        pass

    with pytest.raises(yaml.representer.RepresenterError):
        dump_records_yaml({"x": Tagged("v")})
    with pytest.raises(yaml.representer.RepresenterError):
        _reference({"x": Tagged("v")})


def test_a_trajectory_shaped_record_is_byte_identical() -> None:
    trajectory = {"messages": [{"role": "user", "content": "add one"},
                               {"role": "assistant", "content": None, "tool_calls": [
                                   {"id": "call_1", "name": "add", "arguments": {"amount": 1}}]},
                               {"role": "tool", "tool_call_id": "call_1", "content": "1"}],
                  "usage": {"input_tokens": 12, "output_tokens": 3, "cost_usd": 1.2e-05}}
    assert dump_records_yaml(trajectory) == _reference(trajectory)

