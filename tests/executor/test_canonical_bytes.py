"""canonical_bytes writes exactly what json.dumps(sort_keys, indent=2, ensure_ascii=False) writes."""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.core.canonical import canonical_bytes


def reference(data: Any) -> bytes:
    return (json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


scalars = (st.none() | st.booleans() | st.integers(min_value=-10**30, max_value=10**30)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text())
documents = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5)
                         | st.dictionaries(st.text(max_size=8), inner, max_size=5), max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(documents)
def test_plain_documents_are_written_byte_for_byte_as_json_writes_them(data: Any) -> None:
    assert canonical_bytes(data) == reference(data)


class Text(str):
    pass


@pytest.mark.parametrize("data", [
    {"t": (1, 2)}, {1: "int keys", 2: "only"}, {"s": Text("sub")}, OrderedDict(b=1, a=2), {"f": 1.5, "True": True},
    [{"deep": [[], {}, "é\u2028\"\\\n"]}], {"big": 2**70, "neg": -0.0, "tiny": 5e-324},
])
def test_everything_else_reads_as_json_writes_it(data: Any) -> None:
    assert canonical_bytes(data) == reference(data)


@pytest.mark.parametrize("data", [{"x": float("nan")}, {"x": [float("inf")]}, {"x": object()}, {None: 1, "a": 2},
                                  {1: "int key", "b": 2}])
def test_what_json_refuses_is_refused_the_same_way(data: Any) -> None:
    with pytest.raises(Exception) as ours:
        canonical_bytes(data)
    with pytest.raises(Exception) as theirs:
        reference(data)
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)
