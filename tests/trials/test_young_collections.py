"""A drive spaces the cyclic collector's young collections, and gives the setting back."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from capplan.core.young_collections import YOUNG_COLLECTION_THRESHOLD, young_collections_spaced
from tests.cli_runner import invoke


@pytest.fixture(autouse=True)
def _threshold_kept() -> Iterator[None]:
    kept = gc.get_threshold()
    yield
    gc.set_threshold(*kept)


@pytest.mark.fast_side
def test_the_threshold_is_raised_for_the_drive_and_restored() -> None:
    gc.set_threshold(700, 10, 10)
    with young_collections_spaced():
        assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_it_is_restored_when_the_drive_raises() -> None:
    gc.set_threshold(700, 10, 10)
    with pytest.raises(KeyboardInterrupt), young_collections_spaced():
        raise KeyboardInterrupt
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("setting", [(0, 10, 10), (50_000, 5, 5)])
def test_a_setting_someone_chose_is_left_alone(setting: tuple[int, int, int]) -> None:
    gc.set_threshold(*setting)
    with young_collections_spaced():
        assert gc.get_threshold() == setting
    assert gc.get_threshold() == setting


def test_a_change_made_during_the_drive_is_not_undone() -> None:
    gc.set_threshold(700, 10, 10)
    with young_collections_spaced():
        gc.set_threshold(2_000, 10, 10)
    assert gc.get_threshold() == (2_000, 10, 10)


@pytest.mark.fast_side
def test_a_trial_run_spaces_them_while_trials_run_and_leaves_the_threshold_as_it_found_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.trials.helpers import write_task
    from tests.trials.test_cli_offline import MOCK_PLAN

    from capplan.trials.run_folder.folder import RunFolder

    seen: list[int] = []
    write = RunFolder.write

    def spy(self: RunFolder, *args: object, **kwargs: object) -> None:
        seen.append(gc.get_threshold()[0])  # a trial has just finished: the drive is under way
        write(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(RunFolder, "write", spy)
    gc.set_threshold(700, 10, 10)
    task = write_task(tmp_path / "pack")
    done = invoke("trial", "run", str(task), "--plan", str(MOCK_PLAN), "--out", str(tmp_path / "run"))
    assert done.exit_code == 0, done.output
    assert seen == [YOUNG_COLLECTION_THRESHOLD]
    assert gc.get_threshold() == (700, 10, 10)
