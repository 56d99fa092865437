"""PyYAML imported with its patterns compiled on first use (seam *yaml import*): lint never compiles
them, and whatever uses yaml later gets the answers a plain import gives, to the byte."""

from __future__ import annotations

import copy
import json
import os
import pickle
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from capplan.core.yaml_import import LazyPattern, deferring_for_yaml, import_yaml

REPO = Path(__file__).resolve().parents[2]

#: documents that reach every deferred pattern: the pure-Python reader's printable test, each implicit
#: type of the resolver, the constructor's timestamp, and a dump whose scalars the resolver must quote
USE_EVERY_PATTERN = textwrap.dedent('''
    import json, sys
    DOCS = ["a: 2020-01-01\\nb: 2001-12-14t21:59:43.10-05:00\\nc: yes\\nd: 1.5e+3\\ne: 0x1f\\nf: ~\\ng: 1_000\\n"
            "h: .inf\\ni: 190:20:30\\nj: <<\\nk: =\\nl: -.5\\nm: 0o17\\nn: Off\\n",
            "x: \\x07", "- [1, 2.5, null, true, 'yes', '2020-01-01', '0x10']\\n"]
    out = []
    for doc in DOCS:
        for loader in (yaml.SafeLoader, yaml.CSafeLoader):
            try:
                out.append(repr(yaml.load(doc, Loader=loader)))
            except yaml.YAMLError as exc:
                out.append(f"{type(exc).__name__}: {exc}")
    for data in ({"a": "yes", "b": "1.5", "c": "2020-01-01", "d": "~", "e": "0x1f", "f": "=", "g": [1, 2.5, None]},):
        out.append(yaml.safe_dump(data, allow_unicode=True))
        out.append(yaml.dump(data, Dumper=yaml.CSafeDumper))
    print(json.dumps(out))
''')


def _run(code: str, reference: bool = False) -> Any:
    env = {k: v for k, v in os.environ.items() if k != "CAPPLAN_REFERENCE"}
    env["PYTHONPATH"] = str(REPO)
    if reference:
        env["CAPPLAN_REFERENCE"] = "1"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def test_lint_compiles_none_of_yamls_patterns(tmp_path: Path) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text('presets:\n  acme:\n    match: ["acme-*"]\n', encoding="utf-8")
    found = _run(textwrap.dedent(f'''
        import json, os, sys
        real_exit = os._exit
        def report(code):
            import yaml
            from capplan.core.yaml_import import LazyPattern
            deferred = [p for p in (yaml.reader.Reader.NON_PRINTABLE, yaml.constructor.SafeConstructor.timestamp_regexp,
                                    *(r for rs in yaml.resolver.Resolver.yaml_implicit_resolvers.values() for _, r in rs))]
            print(json.dumps([code, [type(p).__name__ for p in deferred], any(p.compiled for p in deferred
                  if isinstance(p, LazyPattern)), re_is_real()]))
            sys.stdout.flush()
            real_exit(0)
        def re_is_real():
            import re
            return re.compile.__module__ == "re"
        os._exit = report
        sys.argv = ["capplan", "lint", {str(overlay)!r}]
        from capplan.cli import main
        try:
            main()
        except SystemExit as done:
            report(done.code)
    '''))
    code, kinds, any_compiled, re_restored = found
    assert code in (0, None)
    assert len(kinds) > 10 and set(kinds) == {"LazyPattern"}
    assert not any_compiled  # libyaml's event stream needs none of them
    assert re_restored


def test_every_answer_is_a_plain_imports() -> None:
    deferred = _run("from capplan.core.yaml_import import import_yaml\nyaml = import_yaml()\n" + USE_EVERY_PATTERN)
    plain = _run("import yaml\n" + USE_EVERY_PATTERN)
    assert deferred == plain
    assert any("ReaderError" in answer and "special characters" in answer for answer in plain)  # the reader's test ran


def test_the_reference_mode_imports_yaml_plainly() -> None:
    kind = _run("from capplan.core.yaml_import import import_yaml\nimport json\n"
                "print(json.dumps(type(import_yaml().reader.Reader.NON_PRINTABLE).__name__))", reference=True)
    assert kind == "Pattern"


def test_an_imported_yaml_is_returned_as_it_is() -> None:
    import yaml

    assert import_yaml() is yaml


def test_only_yamls_own_modules_are_deferred() -> None:
    compile = deferring_for_yaml(re.compile)
    assert isinstance(compile(r"a+"), re.Pattern)
    for module in ("yaml", "yaml.resolver"):
        space: dict[str, Any] = {"__name__": module, "compile": compile}
        exec("made = compile(r'b+', re_flags)", {**space, "re_flags": re.I}, space)  # noqa: S102 - a module's frame
        assert isinstance(space["made"], LazyPattern), module
    space = {"__name__": "yamlish", "compile": compile}
    exec("made = compile(r'b+')", space)  # noqa: S102
    assert isinstance(space["made"], re.Pattern)


def test_a_lazy_pattern_answers_as_its_pattern() -> None:
    lazy = LazyPattern(re.compile, r"(?P<word>b+)", re.I)
    assert not lazy.compiled
    assert copy.copy(lazy) is lazy and copy.deepcopy(lazy) is lazy and not lazy.compiled
    assert lazy.match("BBc").group("word") == "BB"
    assert lazy.compiled and lazy.search("aab").span() == (2, 3)
    assert lazy.flags & re.I and lazy.groupindex == {"word": 1} and lazy.pattern == r"(?P<word>b+)"
    assert lazy.sub("x", "abba") == "axa" and repr(lazy) == repr(re.compile(r"(?P<word>b+)", re.I))
    assert pickle.loads(pickle.dumps(lazy)) == re.compile(r"(?P<word>b+)", re.I)
    with pytest.raises(AttributeError):
        lazy.no_such_name  # noqa: B018
    bad = LazyPattern(re.compile, "(", 0)
    with pytest.raises(re.error):
        bad.search("x")  # a pattern that does not compile says so where it is used
