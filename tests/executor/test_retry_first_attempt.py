"""The first attempt made before the retry controller is stepped (seam *first attempt*) is the controller's loop.

Scripted attempts (a success, transient failures then a success, failures past the controller's
limit, a refused request, a probe's rate limits) go through ``controlled`` in the fast mode (the
default controller made before the call, or only once the first attempt failed) and through
tenacity's own ``for step in controller: with step:`` loop (the reference mode); the result or the
exception raised, every wait slept and every ``before_sleep`` log line must be the same.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import pytest

from tests.mode_switch import mode
from capplan.executor.errors import ProviderHTTPError, ProviderRateLimitError
from capplan.executor.probe import RateLimitProbeConfig
from capplan.executor.retrying import RetryContext, controlled, default_retrying, probe_retrying




def _server_error() -> Exception:
    return ProviderHTTPError("upstream fell over", status_code=503)


def _refused() -> Exception:
    return ProviderHTTPError("bad request", status_code=400)


def _rate_limited() -> Exception:
    return ProviderRateLimitError("slow down", status_code=429)


#: each script: what attempts 1, 2, … do (raise the exception, or return the value)
SCRIPTS: dict[str, list[Callable[[], Exception] | str]] = {
    "answered at once": ["ok"],
    "two 503s then an answer": [_server_error, _server_error, "ok"],
    "503s past the limit": [_server_error] * 6,
    "refused": [_refused, "never sent"],
    "rate limited then answered": [_rate_limited, _rate_limited, "ok"],
    "an interrupt": [KeyboardInterrupt, "never sent"],  # type: ignore[list-item]
}


def _run(script: list[Any], reference: bool, kind: str, caplog: pytest.LogCaptureFixture) -> tuple[Any, ...]:
    slept: list[float] = []
    clock = iter(float(i) for i in range(1000))
    context = RetryContext(sleep=slept.append, clock=lambda: next(clock))
    controller: Any
    if kind == "probe":
        controller = probe_retrying(RateLimitProbeConfig(enabled=True, per_call_budget_s=100.0), context, rng_seed=7)
    elif kind == "default":
        controller = default_retrying(slept.append, context)
    else:  # made only when the first attempt fails, as the client passes it
        controller = functools.partial(default_retrying, slept.append, context)
    made: list[int] = []

    def attempt() -> str:
        made.append(len(made))
        step = script[len(made) - 1]
        if isinstance(step, str):
            return step
        raise step()

    caplog.clear()
    with mode(reference), caplog.at_level(logging.WARNING, logger="capplan.executor.retrying"):
        try:
            outcome: Any = controlled(controller, attempt)
        except BaseException as exc:  # noqa: BLE001 - what the caller would see, interrupts included
            outcome = (type(exc).__name__, str(exc))
    return outcome, len(made), slept, [r.getMessage() for r in caplog.records]


@pytest.mark.parametrize("kind", ["default", "default made on failure", "probe"])
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_the_first_attempt_runs_as_the_controllers_loop_runs_it(name: str, kind: str,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    fast = _run(SCRIPTS[name], False, kind, caplog)
    reference = _run(SCRIPTS[name], True, "probe" if kind == "probe" else "default", caplog)
    assert fast == reference
    if name == "two 503s then an answer":
        assert fast[:2] == ("ok", 3) and len(fast[2]) == 2 and len(fast[3]) == 2  # the script really retried
