"""Writes through kept folder descriptors (seam *open folders*, ``OpenFolders`` in ``core/confined_write.py``).

A run keeps the descriptor of each folder holding trial folders (``trials/<plan>/<task>``) instead of
walking from the root for every trial. What may change is only how often the path is walked: the same
files, the same refusals of links and misplaced files, nothing written outside, nothing kept open
once the writer closes, and the reference mode keeps nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.mode_switch import mode
from capplan.core import confined_write
from capplan.core.confined_write import ConfinedPathError, OpenFolders, write_atomic_many

FILES = (("trajectory.yaml", b"turns: []\n"), ("metrics.yaml", b"cost: 0\n"))


def open_descriptors() -> set[str]:
    """The targets of this process's open descriptors that are folders (what a kept descriptor is)."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the listing's own descriptor, gone by now
        if os.path.isdir(target):
            found.add(target)
    return found


needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc/self/fd")


def new_root(tmp_path: Path) -> tuple[Path, set[str]]:
    """An empty run folder, and the folder descriptors this process holds before any writer opens one."""
    root = tmp_path / "run"
    root.mkdir()
    return root, open_descriptors()


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_files_are_those_a_walk_writes_and_no_temporary_file_is_left(tmp_path: Path) -> None:
    walked, kept = tmp_path / "walked", tmp_path / "kept"
    walked.mkdir()
    kept.mkdir()
    folders = OpenFolders(kept)
    for index in range(3):
        for task in ("count", "greet"):
            folder = ("trials", "plan", task, str(index))
            write_atomic_many(walked, folder, FILES)
            folders.write_atomic_many(folder, FILES)
    folders.write_atomic_many(("trials", "plan", "count", "0"), (("metrics.yaml", b"cost: 1\n"),))  # replaced
    write_atomic_many(walked, ("trials", "plan", "count", "0"), (("metrics.yaml", b"cost: 1\n"),))
    folders.close()
    assert tree(kept) == tree(walked)
    assert len(tree(kept)) == 12
    assert (kept / "trials" / "plan" / "count" / "0" / "metrics.yaml").stat().st_mode & 0o777 == 0o600


def test_a_link_planted_as_a_trial_folder_after_its_parent_was_kept_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "run", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    folders = OpenFolders(root)
    folders.write_atomic_many(("trials", "plan", "count", "0"), FILES)  # the parent is kept from here on
    (root / "trials" / "plan" / "count" / "1").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ConfinedPathError) as caught:
        folders.write_atomic_many(("trials", "plan", "count", "1"), FILES)
    assert caught.value.code == "run-folder-symlink"
    assert caught.value.path == str(root / "trials" / "plan" / "count" / "1")
    assert list(outside.iterdir()) == []
    folders.close()


@mode(False)  # the reference mode keeps nothing: it walks, and refuses the link
def test_a_link_planted_above_a_kept_folder_is_never_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "run", tmp_path / "outside"
    (outside / "count").mkdir(parents=True)
    root.mkdir()
    folders = OpenFolders(root)
    folders.write_atomic_many(("trials", "plan", "count", "0"), FILES)
    # the real folder moves away and a link to a folder outside takes its name
    os.rename(root / "trials" / "plan", root / "trials" / "moved")
    (root / "trials" / "plan").symlink_to(outside, target_is_directory=True)
    folders.write_atomic_many(("trials", "plan", "count", "1"), FILES)  # into the real folder it holds
    assert list((outside / "count").iterdir()) == []
    assert sorted(p.name for p in (root / "trials" / "moved" / "count").iterdir()) == ["0", "1"]
    folders.close()
    # walked again after close: the link is refused, as a write without kept folders refuses it
    with pytest.raises(ConfinedPathError) as caught:
        folders.write_atomic_many(("trials", "plan", "count", "2"), FILES)
    assert caught.value.code in ("run-folder-symlink", "path-escapes")
    assert list((outside / "count").iterdir()) == []


def test_a_refusal_reads_as_the_walk_words_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    messages = []
    for name in ("walked", "kept"):
        root = tmp_path / name
        (root / "trials" / "plan" / "count").mkdir(parents=True)
        (root / "trials" / "plan" / "count" / "0").symlink_to(outside, target_is_directory=True)
        (root / "trials" / "plan" / "greet").write_text("a file where a folder belongs")
        refusals = []
        for task in ("count", "greet"):
            with pytest.raises(ConfinedPathError) as caught:
                if name == "walked":
                    write_atomic_many(root, ("trials", "plan", task, "0"), FILES)
                else:
                    OpenFolders(root).write_atomic_many(("trials", "plan", task, "0"), FILES)
            refusals.append(str(caught.value).replace(str(root), "ROOT"))
        messages.append(refusals)
    assert messages[0] == messages[1]
    assert "leads out of the run folder" in messages[0][0]
    assert list(outside.iterdir()) == []


@pytest.mark.fast_side
def test_a_trial_folder_the_write_made_is_not_looked_into_and_one_that_was_there_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    looked: list[str] = []
    look = confined_write._refuse_unless_regular

    def counted(dir_fd: int, name: str, shown: Path) -> bool:
        looked.append(name)
        return look(dir_fd, name, shown)

    monkeypatch.setattr(confined_write, "_refuse_unless_regular", counted)
    root = tmp_path / "run"
    root.mkdir()
    folders = OpenFolders(root)
    folders.write_atomic_many(("trials", "plan", "count", "0"), FILES)  # made by this write: nothing to look at
    assert looked == []
    assert tree(root) == {f"trials/plan/count/0/{name}": data for name, data in FILES}
    folders.write_atomic_many(("trials", "plan", "count", "0"), FILES)  # there already: each name looked at
    assert looked == ["trajectory.yaml", "metrics.yaml"]
    outside = tmp_path / "outside.yaml"
    outside.write_text("kept")
    (root / "trials" / "plan" / "count" / "0" / "metrics.yaml").unlink()
    (root / "trials" / "plan" / "count" / "0" / "metrics.yaml").symlink_to(outside)
    with pytest.raises(ConfinedPathError) as caught:
        folders.write_atomic_many(("trials", "plan", "count", "0"), FILES)
    assert caught.value.code == "run-folder-symlink"
    assert outside.read_text() == "kept"
    assert not [p for p in (root / "trials").rglob("*.tmp")]
    folders.close()


def test_a_folder_removed_while_kept_is_walked_again_and_made_anew(tmp_path: Path) -> None:
    root = tmp_path / "run"
    root.mkdir()
    folders = OpenFolders(root)
    folders.write_atomic_many(("trials", "plan", "count", "0"), FILES)
    for path in sorted((root / "trials").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    (root / "trials").rmdir()
    folders.write_atomic_many(("trials", "plan", "count", "1"), FILES)
    assert tree(root) == {f"trials/plan/count/1/{name}": data for name, data in FILES}
    folders.close()


@needs_proc
@mode(False)
def test_at_most_limit_descriptors_are_kept_and_close_closes_them(tmp_path: Path) -> None:
    root, before = new_root(tmp_path)
    folders = OpenFolders(root, limit=2)
    for task in ("a", "b", "c", "a", "d"):
        folders.write_atomic_many(("trials", "plan", task, "0"), FILES)
    kept = open_descriptors() - before
    assert kept == {str((root / "trials" / "plan" / task).resolve()) for task in ("a", "d")}  # the two used last
    folders.close()
    assert open_descriptors() - before == set()
    assert sorted(tree(root)) == sorted(f"trials/plan/{t}/0/{n}" for t in "abcd" for n, _ in FILES)


@needs_proc
def test_the_reference_mode_keeps_nothing(tmp_path: Path) -> None:
    root, before = new_root(tmp_path)
    folders = OpenFolders(root)
    with mode(True):
        folders.write_atomic_many(("trials", "plan", "count", "0"), FILES)
        assert open_descriptors() - before == set()
    with mode(False):
        folders.write_atomic_many(("trials", "plan", "count", "1"), FILES)
        assert open_descriptors() - before == {str((root / "trials" / "plan" / "count").resolve())}
    folders.close()
    assert sorted(tree(root)) == sorted(f"trials/plan/count/{i}/{n}" for i in "01" for n, _ in FILES)


@needs_proc
@mode(False)
def test_a_writer_dropped_without_close_leaves_no_descriptor(tmp_path: Path) -> None:
    import gc

    root, before = new_root(tmp_path)
    folders = OpenFolders(root)
    folders.write_atomic_many(("trials", "plan", "count", "0"), FILES)
    assert open_descriptors() - before  # kept while the writer lives
    del folders
    gc.collect()
    assert open_descriptors() - before == set()


@needs_proc
def test_a_run_folder_dropped_without_release_closes_its_runs_file(tmp_path: Path) -> None:
    import gc

    from capplan.trials.run_folder.folder import RUNS_FILE, RunFolder

    root, _ = new_root(tmp_path)
    runs = str((root / RUNS_FILE).resolve())

    def held() -> bool:
        return any(os.path.realpath(f"/proc/self/fd/{fd}") == runs for fd in os.listdir("/proc/self/fd"))

    folder = RunFolder(root)
    folder._append_run_line(b"{}\n")  # the one append seam; a Python API caller writes through it without drive()
    assert held()
    del folder
    gc.collect()
    assert not held()
    assert (root / RUNS_FILE).read_bytes() == b"{}\n"
