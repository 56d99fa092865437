"""Suite-wide pytest options and fixtures every test folder may use.

``--reference`` runs the tests in capplan's reference mode (``CAPPLAN_REFERENCE=1``,
:mod:`capplan.core.reference_mode`): every speed-only path off. The option sets the variable in
``pytest_configure``, before any test is collected or any capplan object made; capplan reads it
on the first question, never at import. The report header says which mode a run ran in.

A test marked ``fast_side`` checks how a seam's fast side does its work (that a memo is hit, a
helper process started, a connection kept), which the reference side does not do by design: under
``--reference`` it runs in the fast mode all the same, its subprocesses too, so that every other
test's outcome in the reference mode says whether the two sides agree.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from capplan.core import reference_mode
from tests import reference_run
from tests.fake_provider import FakeProvider

# ``trial run`` defaults to one worker process per core, and a worker process does not see what a
# test patched in this one (fake senders, clocks). Tests run the trials in the test's own process
# unless they ask for workers (``--workers 2``: tests/trials/test_worker_processes.py); the command
# lines a test starts as subprocesses inherit the same default.
os.environ.setdefault("CAPPLAN_WORKERS", "1")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--reference", action="store_true", default=False,
        help="run in capplan's reference mode (sets CAPPLAN_REFERENCE=1: every speed-only path off)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("--reference"):
        return
    if reference_mode.decided() and not reference_mode.reference_mode():
        raise pytest.UsageError(
            "--reference: capplan decided its mode (fast) before the option was read; "
            f"set {reference_mode.VARIABLE}=1 in the environment instead")
    os.environ[reference_mode.VARIABLE] = "1"  # subprocesses the tests start inherit it too


@pytest.fixture(autouse=True)
def _fast_side_stays_fast(request: pytest.FixtureRequest) -> Iterator[None]:
    """Runs a ``fast_side`` test in the fast mode under ``--reference`` (see the module docstring)."""
    if request.node.get_closest_marker("fast_side") is None or not reference_mode.reference_mode():
        yield
        return
    from tests.mode_switch import mode

    patch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
    patch.setenv(reference_mode.VARIABLE, "0")  # the command lines it starts too
    with mode(False):
        yield


def pytest_report_header(config: pytest.Config) -> str:
    try:
        mode = reference_mode.mode_name()
    except reference_mode.ReferenceModeError as exc:
        raise pytest.UsageError(exc.render()) from None
    return f"capplan mode: {mode} ({reference_mode.VARIABLE}={os.environ.get(reference_mode.VARIABLE, '')!r})"


def pytest_collection_finish(session: pytest.Session) -> None:
    """Starts the suite's two slow, self-contained setups now if their tests are selected, so they run
    beside the other tests: the reference-mode subprocess (:mod:`tests.reference_run`) and the wheel's
    build and install (``tests/wheel/test_wheel_install.py``).

    Not on a pytest-xdist worker (every worker collects every test; each test starts its own setup
    there), nor for ``--collect-only``. The reference run not when this run is in the reference mode
    already (its test skips).
    """
    config = session.config
    if config.option.collectonly or hasattr(config, "workerinput"):
        return
    reference_test = reference_run.REPO / "tests" / "test_reference_mode.py"
    wheel_tests = reference_run.REPO / "tests" / "wheel" / "test_wheel_install.py"
    wheel_module = next((item.module for item in session.items
                         if isinstance(item, pytest.Function) and item.path.resolve() == wheel_tests), None)
    if wheel_module is not None:
        wheel_module.start_early(config)
    if reference_mode.reference_mode():
        return
    if any(item.path.resolve() == reference_test and item.name == reference_run.TEST_NAME for item in session.items):
        config.stash[reference_run.REFERENCE_RUN] = reference_run.start()


#: test files that share an expensive session fixture (a Ray cluster, a LiteLLM proxy, the hostile runs) and
#: must stay on one pytest-xdist worker so it starts once; every other file is a group of its own, so its
#: module-scoped fixtures are built once too
_SHARED_SESSION_FIXTURES = {
    "ray": ("tests/cluster/", "tests/hostile/test_secret_canaries.py"),  # the latter starts clusters of its own
    "litellm-proxy": ("tests/gateway/", "tests/probes/test_probe_proxy.py"),
    "hostile-runs": ("tests/trials/results/",),
    # one process imports τ² once, and its files run in their collected order (the agreement run must come
    # before the import tests in a process: τ²'s pipeline raises after them)
    "tau2": ("tests/trials/tau2/",),
}


#: the groups that take longest (minutes on a 2-core machine), handed out first so that no worker starts one
#: while the others have nothing left (longest first keeps the run's end close to its total work ÷ workers);
#: on a worker the reference run and the wheel's build start with their test, not at collection
_LONGEST_FIRST = ("tests/test_reference_mode.py", "ray", "litellm-proxy", "hostile-runs", "tau2",
                  "tests/test_help_examples.py", "tests/wheel/test_wheel_install.py", "tests/test_typing.py",
                  "tests/diff/test_diff_base.py", "tests/trials/test_resume_process.py",
                  "tests/trials/test_task_code_contained.py")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook turns the group marks into node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``pytest -n N --dist loadgroup`` (the README's test command): one worker per test file, or per
    shared session fixture (:data:`_SHARED_SESSION_FIXTURES`); the longest groups first, each group's tests
    in their collected order (every worker collects, and orders, the same way)."""
    if not config.pluginmanager.hasplugin("xdist") or not getattr(config.option, "dist", "no") == "loadgroup":
        return
    groups: dict[int, str] = {}
    for item in items:
        path = item.path.resolve().relative_to(reference_run.REPO).as_posix()
        group = next((name for name, prefixes in _SHARED_SESSION_FIXTURES.items()
                      if any(path.startswith(prefix) for prefix in prefixes)), path)
        item.add_marker(pytest.mark.xdist_group(group))
        groups[id(item)] = group
    rank = {group: i for i, group in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(groups[id(item)], len(rank)))  # stable: the rest keep their order


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stops the reference-mode subprocess if the suite ended before its test waited for it (``-x``, Ctrl-C)."""
    run = config.stash.get(reference_run.REFERENCE_RUN, None)
    if run is not None:
        run.stop()


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A :class:`~tests.fake_provider.FakeProvider` with the default answers, stopped after the test."""
    with FakeProvider() as fake:
        yield fake
