"""The one-pass entry-point scan (seam *entry points*) finds what importlib.metadata finds, in its
order, or hands the question to it; and pydantic is told it has no plugins only when it has none."""

from __future__ import annotations

import importlib.machinery
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capplan.core import entry_points as scan

REPO = Path(__file__).resolve().parents[2]
GROUPS = frozenset({"capplan.policies", "pydantic", "console_scripts", "pytest11", "acme"})


def _importlib_view(groups: frozenset[str]) -> dict[str, list[tuple[str, str, str]]]:
    from importlib.metadata import entry_points

    out = {}
    for group in sorted(groups):
        found = [(ep.name, ep.value, ep.group) for ep in entry_points(group=group)]
        if found:
            out[group] = found
    return out


def _fast_view(groups: frozenset[str]) -> dict[str, list[tuple[str, str, str]]]:
    return {group: [(f.name, f.value, f.group) for f in found] for group, found in scan._scan(groups).items()}


def _dist(site: Path, folder: str, text: str | None, name: str | None = None) -> Path:
    info = site / folder
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name or folder.split('-')[0]}\nVersion: 1.0\n",
                                   encoding="utf-8")
    if text is not None:
        (info / "entry_points.txt").write_text(text, encoding="utf-8")
    return info


@pytest.fixture(autouse=True)
def only_the_path_finder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both sides read under the standard library's finders, as a capplan command starts.

    A package imported earlier in this test process may have changed them: the ``importlib_metadata``
    backport, once imported, adds a finder of its own to ``sys.meta_path`` and takes the standard
    path finder's ``find_distributions`` away. The pass then hands every question to importlib
    (``test_the_importlib_metadata_backport_hands_the_question_to_importlib``); here the standard
    arrangement is put back for the test.
    """
    from importlib.metadata import MetadataPathFinder

    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path if f is importlib.machinery.PathFinder
                                           or getattr(f, "find_distributions", None) is None])
    if getattr(importlib.machinery.PathFinder, "find_distributions", None) is None:
        monkeypatch.setattr(importlib.machinery.PathFinder, "find_distributions",
                            staticmethod(MetadataPathFinder.find_distributions), raising=False)


@pytest.fixture
def sites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """Two folders of distributions, first and last on sys.path."""
    first, last = tmp_path / "first", tmp_path / "last"
    first.mkdir()
    last.mkdir()
    monkeypatch.setattr(sys, "path", [str(first), *sys.path, str(last)])
    yield first, last


def test_this_environment_reads_the_same_both_ways() -> None:
    assert _fast_view(GROUPS) == _importlib_view(GROUPS)
    assert "console_scripts" in _fast_view(GROUPS)  # pytest's own, at least: the comparison is not of two empties


def test_names_shadowing_order_and_file_syntax_match_importlib(sites: tuple[Path, Path],
                                                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, last = sites
    _dist(first, "acme_tools-2.0.dist-info",
          "# a comment\n\nstray = before:any_group\n[acme]\n  b =  mod:B  \na=mod:A\n; not a comment = to importlib\n"
          "[console_scripts]\nacme = acme.cli:main\n[acme]\nc = x = y\n")
    _dist(last, "Acme.Tools-1.0.dist-info", "[acme]\nshadowed = old:Old\n")  # same normalized name: shadowed
    _dist(first, "zeta-1.0.dist-info", "[acme]\nz = zeta:Z\n")
    _dist(first, "zeta-0.9.dist-info", "[acme]\nolder = zeta:Older\n")  # same folder, same name
    _dist(first, "plain.dist-info", "[acme]\nplain = plain:P\n")
    _dist(first, "legacy-1.0.egg-info", "[acme]\nlegacy = legacy:L\n")
    _dist(first, "nofile-1.0.dist-info", None)
    (_dist(first, "windows-1.0.dist-info", None) / "entry_points.txt").write_bytes(b"[acme]\r\ncrlf = w:W\r\n")
    (_dist(first, "oldmac-1.0.dist-info", None) / "entry_points.txt").write_bytes(b"[acme]\rcr = m:M\r")
    (first / "folder-1.0.dist-info" / "entry_points.txt").mkdir(parents=True)  # not a file: no entry points
    (first / "oldstyle-1.0.egg-info").write_text("Metadata-Version: 1.0\nName: oldstyle\n", encoding="utf-8")
    (first / "not_metadata").mkdir()
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path / "absent"), "__a_path_hook_marker__"])
    fast, reference = _fast_view(GROUPS), _importlib_view(GROUPS)
    assert fast == reference
    names = [name for name, _, _ in fast["acme"]]
    assert "shadowed" not in names and {"a", "b", "c", "plain", "legacy", "crlf", "cr"} <= set(names)
    assert ("z" in names) != ("older" in names)  # one zeta: the first the folder lists
    assert ("c", "x = y", "acme") in fast["acme"]


def test_the_current_folder_is_read_for_an_empty_path_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _dist(tmp_path, "here-1.0.dist-info", "[acme]\nhere = here:H\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    assert _fast_view(GROUPS) == _importlib_view(GROUPS)
    assert ("here", "here:H", "acme") in _fast_view(GROUPS)["acme"]


@pytest.mark.parametrize("case", ["zip", "egg", "suffix-case", "finder"])
def test_what_the_pass_does_not_model_is_handed_to_importlib(case: str, sites: tuple[Path, Path], tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = sites
    _dist(first, "ok-1.0.dist-info", "[acme]\nok = ok:Ok\n")
    if case == "zip":
        import zipfile

        archive = tmp_path / "dists.zip"
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped\nVersion: 1.0\n")
            zf.writestr("zipped-1.0.dist-info/entry_points.txt", "[acme]\nzipped = z:Z\n")
        monkeypatch.setattr(sys, "path", [str(archive), *sys.path])
    elif case == "egg":
        egg = tmp_path / "thing-1.0.egg"
        _dist(egg, "EGG-INFO", "[acme]\negg = egg:E\n", name="thing")
        monkeypatch.setattr(sys, "path", [str(egg), *sys.path])
    elif case == "suffix-case":
        _dist(first, "Loud-1.0.DIST-INFO", "[acme]\nloud = loud:L\n", name="loud")
    else:
        monkeypatch.setattr(sys, "meta_path", [_Finder(tmp_path), *sys.meta_path])
    with pytest.raises(scan._Unmodelled):
        scan._scan(GROUPS)
    via_seam = {g: [(f.name, f.value, f.group) for f in found] for g, found in scan.found_groups(GROUPS).items()}
    assert via_seam == _importlib_view(GROUPS)
    assert len(via_seam["acme"]) == 2  # ok, and the one only importlib reads


@pytest.mark.parametrize(("text", "line", "what"), [
    (b"[console_scripts]\nok = a:b\njust a word\n", 3, "'just a word' under [console_scripts] is not 'name = value'"),
    (b"[acme]\nok = a:b\nn\xe9 = x:Y\n", 3, "the file is not UTF-8 text (its first bad byte is on this line)"),
    (b"[console_scripts]\nok = a:b\n[acm", 3, "'[acm' under [console_scripts] is not 'name = value'"),  # cut short
])
@pytest.mark.parametrize("reference", [False, True])
def test_a_file_importlib_cannot_read_is_named_with_its_line_in_both_modes(
        text: bytes, line: int, what: str, reference: bool, sites: tuple[Path, Path],
        monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = sites
    _dist(first, "ok-1.0.dist-info", "[acme]\nok = ok:Ok\n")
    path = _dist(first, "broken-1.0.dist-info", None) / "entry_points.txt"
    path.write_bytes(text)
    with pytest.raises((TypeError, ValueError)):  # what importlib itself says: no file, no line
        _importlib_view(GROUPS)
    monkeypatch.setattr(scan, "reference_mode", lambda: reference)
    with pytest.raises(scan.EntryPointsUnreadable) as raised:
        scan.found_groups(frozenset({"acme"}))
    assert raised.value.location == f"{path}:{line}"
    assert raised.value.message.startswith(what + ": importlib.metadata cannot read")
    assert raised.value.hint == f"reinstall or remove the distribution installed as {path.parent}"


def test_a_broken_file_shadowed_by_an_earlier_distribution_of_its_name_is_never_read(
        sites: tuple[Path, Path]) -> None:
    first, last = sites
    _dist(first, "acme_tools-2.0.dist-info", "[acme]\na = mod:A\n")
    _dist(last, "acme_tools-1.0.dist-info", "[acme]\njust a word\n")
    assert _fast_view(GROUPS) == _importlib_view(GROUPS)


class _Finder:
    """A meta-path finder that also finds distributions (as some installers' finders do)."""

    def __init__(self, folder: Path) -> None:
        self.info = _dist(folder / "elsewhere", "found_by_finder-1.0.dist-info", "[acme]\nfinder = f:F\n")

    def find_spec(self, *args: Any) -> None:
        return None

    def find_distributions(self, context: Any = None) -> Iterator[Any]:
        from importlib.metadata import PathDistribution

        yield PathDistribution(self.info)


def test_the_origin_of_an_entry_is_its_distribution_name(sites: tuple[Path, Path]) -> None:
    first, _ = sites
    _dist(first, "acme_tools-2.0.dist-info", "[acme]\na = mod:A\n", name="Acme-Tools")
    (found,) = scan._scan(frozenset({"acme"}))["acme"]
    assert found.distribution() == "Acme-Tools"
    (by_importlib,) = scan._by_importlib(frozenset({"acme"}))["acme"]
    assert by_importlib.distribution() == "Acme-Tools"


def test_the_reference_mode_asks_importlib(sites: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = sites
    _dist(first, "acme_tools-2.0.dist-info", "[acme]\na = mod:A\n")
    monkeypatch.setattr(scan, "reference_mode", lambda: True)
    monkeypatch.setattr(scan, "_scan", _must_not_run)
    assert [f.name for f in scan.entry_points_in("acme")] == ["a"]


def _must_not_run(*args: Any) -> Any:
    raise AssertionError("the one-pass scan ran in the reference mode")


def test_only_the_path_finder_is_trusted_to_find_distributions() -> None:
    assert any(f is importlib.machinery.PathFinder for f in sys.meta_path)


PLUGIN = '''
calls = []


class Plugin:
    def new_schema_validator(self, schema, schema_type, schema_type_path, schema_kind, config, plugin_settings):
        calls.append(schema_type_path)
        return None, None, None


plugin = Plugin()
'''

PROBE = textwrap.dedent('''
    import json, os, sys
    from capplan.core.pydantic_plugins import answer_pydantic_plugin_lookup
    import importlib.metadata as metadata
    answer_pydantic_plugin_lookup()
    import pydantic.plugin._loader as loader
    answered = loader._plugins
    real = metadata.entry_points
    asked = []
    metadata.entry_points = lambda **kw: asked.append(kw) or real(**kw)
    loader.entry_points = metadata.entry_points
    from pydantic import BaseModel
    class One(BaseModel):
        name: str
    One.model_validate({"name": "x"})
    calls = sys.modules["probe_plugin"].calls if "probe_plugin" in sys.modules else None
    print(json.dumps({"answered": None if answered is None else sorted(answered), "pydantic_looked": bool(asked),
                      "plugin_calls": calls}))
''')


def _probe(tmp_path: Path, *, plugin: bool, env: dict[str, str] | None = None) -> dict[str, Any]:
    import json

    site = tmp_path / "site"
    site.mkdir()
    if plugin:
        (site / "probe_plugin.py").write_text(PLUGIN, encoding="utf-8")
        _dist(site, "probe_plugin-1.0.dist-info", "[pydantic]\nprobe = probe_plugin:plugin\n")
    base = {k: v for k, v in os.environ.items() if k not in ("PYDANTIC_DISABLE_PLUGINS", "CAPPLAN_REFERENCE")}
    run = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**base, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]), **(env or {})})
    assert run.returncode == 0, run.stderr
    result: dict[str, Any] = json.loads(run.stdout)
    return result


def test_pydantic_is_told_it_has_no_plugins_when_none_is_installed(tmp_path: Path) -> None:
    assert _probe(tmp_path, plugin=False) == {"answered": [], "pydantic_looked": False, "plugin_calls": None}


def test_an_installed_pydantic_plugin_is_still_found_and_called(tmp_path: Path) -> None:
    result = _probe(tmp_path, plugin=True)
    assert result["answered"] is None and result["pydantic_looked"] is True
    assert result["plugin_calls"] and any("One" in path for path in result["plugin_calls"])


@pytest.mark.parametrize("env", [{"PYDANTIC_DISABLE_PLUGINS": "probe"}, {"CAPPLAN_REFERENCE": "1"}])
def test_a_users_plugin_switch_and_the_reference_mode_leave_pydantic_to_look(tmp_path: Path,
                                                                             env: dict[str, str]) -> None:
    result = _probe(tmp_path, plugin=False, env=env)
    assert result["answered"] is None


def test_the_cli_runs_an_installed_pydantic_plugin(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "probe_plugin.py").write_text(PLUGIN.replace("calls.append(schema_type_path)",
                                                         "calls.append(schema_type_path)\n"
                                                         "        open(__file__ + '.called', 'a').close()"),
                                          encoding="utf-8")
    _dist(site, "probe_plugin-1.0.dist-info", "[pydantic]\nprobe = probe_plugin:plugin\n")
    overlay = site / "overlay.yaml"
    overlay.write_text('presets:\n  acme:\n    match: ["acme-*"]\n', encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if k not in ("PYDANTIC_DISABLE_PLUGINS", "CAPPLAN_REFERENCE")}
    run = subprocess.run([sys.executable, "-m", "capplan.cli", "lint", str(overlay)], cwd=site, capture_output=True,
                         text=True, timeout=120, env={**base, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])})
    assert run.returncode == 0, run.stderr
    assert (site / "probe_plugin.py.called").exists()


def test_the_importlib_metadata_backport_hands_the_question_to_importlib(tmp_path: Path) -> None:
    import json

    probe = textwrap.dedent("""
        import json, sys
        import importlib_metadata  # installs its finder, takes the standard path finder's away
        from capplan.core import entry_points as scan
        try:
            scan._scan(frozenset({"console_scripts"}))
            handed = False
        except scan._Unmodelled:
            handed = True
        found = [(f.name, f.value) for f in scan.entry_points_in("console_scripts")]
        import importlib.metadata as metadata
        print(json.dumps({"handed": handed, "same": found == [(e.name, e.value) for e in
                          metadata.entry_points(group="console_scripts")], "some": bool(found)}))
    """)
    import importlib.util

    if importlib.util.find_spec("importlib_metadata") is None:  # not imported here: it would change this process
        pytest.skip("the importlib_metadata backport is not installed")
    env = {k: v for k, v in os.environ.items() if k != "CAPPLAN_REFERENCE"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          env={**env, "PYTHONPATH": str(REPO)}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"handed": True, "same": True, "some": True}


@pytest.mark.parametrize("env", [{}, {"CAPPLAN_REFERENCE": "1"}, {"PYDANTIC_DISABLE_PLUGINS": "1"}])
def test_the_cli_names_a_broken_installed_file_instead_of_a_traceback(tmp_path: Path, env: dict[str, str]) -> None:
    site = tmp_path / "site"
    site.mkdir()
    broken = _dist(site, "broken-1.0.dist-info", "[console_scripts]\njust a word\n") / "entry_points.txt"
    overlay = site / "overlay.yaml"
    overlay.write_text('presets:\n  acme:\n    match: ["acme-*"]\n', encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if k not in ("PYDANTIC_DISABLE_PLUGINS", "CAPPLAN_REFERENCE")}
    run = subprocess.run([sys.executable, "-m", "capplan.cli", "lint", str(overlay)], cwd=site, capture_output=True,
                         text=True, timeout=120,
                         env={**base, **env, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])})
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.startswith(f"{broken}:2: error[ENTRY_POINTS]: 'just a word' under [console_scripts] is not "
                                 "'name = value'"), run.stderr
    out = tmp_path / "plans"
    compiled = subprocess.run([sys.executable, "-m", "capplan.cli", "compile", "--out", str(out)], cwd=site,
                              capture_output=True, text=True, timeout=120,
                              env={**base, **env, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])})
    assert compiled.returncode == 2 and "Traceback" not in compiled.stderr, compiled.stderr
    assert f"{broken}:2: error[ENTRY_POINTS]" in compiled.stderr and not out.exists()  # nothing written


def _counting_scans(monkeypatch: pytest.MonkeyPatch) -> list[frozenset[str]]:
    scans: list[frozenset[str]] = []
    real = scan._scan

    def counted(groups: frozenset[str]) -> dict[str, tuple[scan.Found, ...]]:
        scans.append(groups)
        return real(groups)

    monkeypatch.setattr(scan, "_scan", counted)
    return scans


@pytest.mark.fast_side
def test_a_block_reads_its_groups_in_one_pass_and_answers_each_lookup_from_it(
        sites: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = sites
    _dist(first, "acme_tools-2.0.dist-info", "[acme]\na = mod:A\n[pydantic]\np = plug:P\n")
    fresh = {group: scan.found_groups(frozenset({group})) for group in ("acme", "pydantic", "console_scripts")}
    scans = _counting_scans(monkeypatch)
    with scan.one_pass_for(frozenset({"acme", "pydantic"})):
        assert scan.found_groups(frozenset({"pydantic"})) == fresh["pydantic"]
        assert scan.found_groups(frozenset({"acme"})) == fresh["acme"]
        assert scan.entry_points_in("acme") == fresh["acme"]["acme"]
        assert scans == [frozenset({"acme", "pydantic"})]
        assert scan.found_groups(frozenset({"console_scripts"})) == fresh["console_scripts"]  # not covered: read
        assert len(scans) == 2
    scan.found_groups(frozenset({"acme"}))  # after the block: read afresh
    assert len(scans) == 3


@pytest.mark.fast_side
def test_outside_a_block_and_in_the_reference_mode_every_lookup_reads_afresh(
        sites: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = sites
    _dist(first, "acme_tools-2.0.dist-info", "[acme]\na = mod:A\n")
    scans = _counting_scans(monkeypatch)
    scan.found_groups(frozenset({"acme"}))
    scan.found_groups(frozenset({"acme"}))
    assert len(scans) == 2
    monkeypatch.setattr(scan, "reference_mode", lambda: True)
    asked: list[frozenset[str]] = []
    real = scan._by_importlib
    monkeypatch.setattr(scan, "_by_importlib", lambda groups: asked.append(groups) or real(groups))
    with scan.one_pass_for(frozenset({"acme"})):
        assert [f.name for f in scan.entry_points_in("acme")] == ["a"]
        assert [f.name for f in scan.entry_points_in("acme")] == ["a"]
    assert len(asked) == 2 and len(scans) == 2


def test_a_broken_file_found_in_a_block_is_reported_on_every_lookup(sites: tuple[Path, Path]) -> None:
    first, _ = sites
    _dist(first, "broken-1.0.dist-info", "[acme]\njust a word\n")
    with scan.one_pass_for(frozenset({"acme", "pydantic"})):
        for group in ("pydantic", "acme"):
            with pytest.raises(scan.EntryPointsUnreadable):
                scan.found_groups(frozenset({group}))


def test_a_command_reads_what_is_installed_once(tmp_path: Path) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text('presets:\n  acme:\n    match: ["acme-*"]\n    reasoning_codec: openai\n', encoding="utf-8")
    probe = textwrap.dedent(f'''
        import sys
        from capplan.core import entry_points
        scans = []
        real = entry_points._scan
        entry_points._scan = lambda groups: scans.append(sorted(groups)) or real(groups)
        from capplan.cli import main
        sys.argv = ["capplan", "lint", {str(overlay)!r}]
        try:
            main()
        except SystemExit as done:
            print(done.code, scans, file=sys.stderr)
    ''')
    base = {k: v for k, v in os.environ.items() if k not in ("PYDANTIC_DISABLE_PLUGINS", "CAPPLAN_REFERENCE")}
    run = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**base, "PYTHONPATH": str(REPO)})
    assert run.stderr.strip().splitlines()[-1] == "0 [['capplan.policies', 'pydantic']]", run.stderr


@pytest.mark.fast_side
def test_a_block_is_its_own_threads_and_ends_with_it(sites: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    first, _ = sites
    _dist(first, "acme_tools-2.0.dist-info", "[acme]\na = mod:A\n")
    scans = _counting_scans(monkeypatch)
    inside, leave = threading.Event(), threading.Event()
    seen: list[int] = []

    def other_command() -> None:  # a second command on another thread, ending after this one's block
        with scan.one_pass_for(frozenset({"acme"})):
            scan.found_groups(frozenset({"acme"}))
            inside.set()
            assert leave.wait(30)
            seen.append(len(scans))

    worker = threading.Thread(target=other_command)
    with scan.one_pass_for(frozenset({"acme"})):
        worker.start()
        assert inside.wait(30)
        scan.found_groups(frozenset({"acme"}))
        scan.found_groups(frozenset({"acme"}))
        assert len(scans) == 2  # one pass for each thread's block, none shared
    leave.set()
    worker.join(30)
    assert not worker.is_alive() and seen == [2]
    scan.found_groups(frozenset({"acme"}))  # both blocks over: no memo left behind, read afresh
    assert len(scans) == 3
