"""The one state encoder: cycles, non-string keys, sets, tuples, dataclasses, enums, pydantic models;
what it cannot encode is a located error; lint never crashes on such state."""

from __future__ import annotations

import dataclasses
import enum
import math
import textwrap
import threading
from pathlib import Path

import pydantic
import pytest

from capplan.trials.tasks.state_encoding import StateEncodingError, encode_attributes, encode_state_value
from capplan.trials.tasks.loading import lint_task


class _Directory:
    """A file-system node with a back-reference to its parent (as BFCL's file system has)."""

    def __init__(self, name: str, parent: _Directory | None) -> None:
        self.name = name
        self.parent = parent
        self.contents: dict[str, object] = {}


class _Colour(enum.Enum):
    RED = "red"
    BLUE = 2


@dataclasses.dataclass
class _Point:
    x: int
    y: tuple[int, int]


class _Model(pydantic.BaseModel):
    name: str
    tags: list[str]


def test_a_back_reference_is_a_marker_naming_where_the_object_first_appeared() -> None:
    root = _Directory("workspace", None)
    docs = _Directory("docs", root)
    root.contents["docs"] = docs
    docs.contents["self"] = docs

    class Env:
        def __init__(self) -> None:
            self.root = root

    state = encode_attributes(Env(), "FileSystem")
    assert state == {"root": {"contents": {"docs": {"contents": {"self": {"$ref": "root.contents['docs']"}},
                                                    "name": "docs", "parent": {"$ref": "root"}}},
                              "name": "workspace", "parent": None}}


def test_non_string_keys_are_their_json_text_and_keys_that_collide_become_pairs() -> None:
    assert encode_state_value({2: "b", 1: "a", False: "f", None: "n"}, "C") == {
        "1": "a", "2": "b", "false": "f", "null": "n"}
    assert encode_state_value({10: "x", 9: "y"}, "C") == {"10": "x", "9": "y"}
    assert encode_state_value({1: "int", "1": "str"}, "C") == {"$pairs": [["1", "str"], [1, "int"]]}
    assert encode_state_value({(1, 2): "t"}, "C") == {"[1,2]": "t"}
    assert encode_state_value({_Colour.RED: 1}, "C") == {"red": 1}


def test_sets_tuples_dataclasses_enums_models_and_special_numbers() -> None:
    value = {"s": {3, 1, 2}, "mixed": {1, "a", (2, 3)}, "t": (1, [2]), "p": _Point(1, (2, 3)), "e": _Colour.BLUE,
             "m": _Model(name="n", tags=["x"]), "nan": math.nan, "inf": -math.inf}
    encoded = encode_state_value(value, "C")
    assert encoded["s"] == [1, 2, 3]
    assert encoded["mixed"] == ["a", 1, [2, 3]]  # items that do not compare: ordered by their canonical JSON
    assert encoded["t"] == [1, [2]]
    assert encoded["p"] == {"x": 1, "y": [2, 3]}
    assert encoded["e"] == 2
    assert encoded["m"] == {"name": "n", "tags": ["x"]}
    assert encoded["nan"] == {"$float": "nan"} and encoded["inf"] == {"$float": "-inf"}
    # deterministic: the same objects give the same state, whatever the set's iteration order
    assert encode_state_value(value, "C") == encoded


def test_what_cannot_be_encoded_names_component_attribute_and_path() -> None:
    class Env:
        def __init__(self) -> None:
            self.db = {"conn": {"lock": threading.Lock()}}

    with pytest.raises(StateEncodingError) as caught:
        encode_attributes(Env(), "Database")
    assert caught.value.component == "Database" and caught.value.attribute == "db"
    assert str(caught.value).startswith("component 'Database', attribute 'db' at ['conn']['lock']: a lock value")
    with pytest.raises(StateEncodingError, match="attribute 'callback'.*is code, not state"):
        encode_attributes(type("E", (), {"__init__": lambda self: setattr(self, "callback", print)})(), "E")
    with pytest.raises(StateEncodingError, match="bytes value"):
        encode_state_value({"raw": b"\x00"}, "E", "blob")


def _write(folder: Path, env: str, grader: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "env.py").write_text(textwrap.dedent(env))
    task = folder / "task.yaml"
    task.write_text(textwrap.dedent("""\
        id: t
        system_prompt: s
        environment: env:Env
        tools:
          - {name: touch, description: d, parameters: {type: object, properties: {}}}
        user: {mode: scripted, turns: [hi]}
        """) + grader)
    return task


CYCLIC_ENV = """
class Node:
    def __init__(self, name, parent):
        self.name = name
        self.parent = parent
        self.children = []

class Env:
    def __init__(self):
        self.root = Node("root", None)
        self.root.children.append(Node("a", self.root))
        self.index = {1: "one", "two": 2}
        self.tags = {1, "x"}

    def touch(self):
        return "ok"
"""


def test_lint_with_imports_reads_a_cyclic_mixed_key_state_without_a_traceback(tmp_path: Path) -> None:
    # the issue's `Circular reference detected` and `'<' not supported` cases
    task = _write(tmp_path, CYCLIC_ENV, "grader:\n  expected_state: {root: {}, indx: {}}\n")
    diags = lint_task(task, import_environments=True)
    assert [(d.code, d.path) for d in diags] == [("unknown-state-key", "grader.expected_state.indx")]
    assert "did you mean 'index'" in (diags[0].hint or "")


def test_lint_with_imports_reports_unencodable_state_located_at_the_environment(tmp_path: Path) -> None:
    env = "import threading\nclass Env:\n    def __init__(self):\n        self.lock = threading.Lock()\n" \
          "    def touch(self):\n        return 'ok'\n"
    task = _write(tmp_path, env, "grader:\n  expected_state: {lock: 1}\n")
    diags = lint_task(task, import_environments=True)
    assert [(d.code, d.severity, d.line) for d in diags] == [("state-encoding", "error", 3)]
    assert "component 'Env', attribute 'lock'" in diags[0].message
    # without a grader reading the state it is a warning: the trial would record why the state is missing
    task = _write(tmp_path / "ungraded", env)
    assert [(d.code, d.severity) for d in lint_task(task, import_environments=True)] == [("state-encoding", "warning")]
