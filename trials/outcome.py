"""How a trial ended: a typed termination reason and the status it implies.

Rate limits, timeouts, infrastructure failures and configuration errors (a refused key, an
unknown model: the run stops at the first) end a trial as ``ABORTED``: they say
nothing about the model, so they are excluded from every pass rate. So does ``RUN_STOPPED``: a
trial of a healthy plan that another plan's configuration error stopped. A harness defect (a
refused user reply, an environment that cannot be built) is ``ERROR``: our fault, counted,
never the agent's. Everything the model did itself is ``COMPLETED`` or ``FAILED``.
"""

from __future__ import annotations

from enum import Enum


class TerminationReason(str, Enum):
    """Why the conversation stopped."""

    USER_STOP = "user_stop"  # the user sent the stop signal or ran out of scripted turns
    MAX_TURNS = "max_turns"
    # the agent passed the task's max_steps_per_turn within one user turn (BFCL's force-quit): the model's failure
    MAX_STEPS_PER_TURN = "max_steps_per_turn"
    EMPTY_COMPLETION = "empty_completion"
    CONTEXT_WINDOW_EXCEEDED = "context_window_exceeded"
    API_ERROR = "api_error"
    RATE_LIMIT = "rate_limit"
    API_TIMEOUT = "api_timeout"
    INFRA_ERROR = "infra_error"  # connection refused, DNS, a lost worker: nothing reached the model
    # a credential, gateway key, endpoint or model the provider refused; it stops the whole run
    CONFIGURATION_ERROR = "configuration_error"
    # another plan's configuration error stopped the run before this trial could finish: nothing about this plan
    RUN_STOPPED = "run_stopped"
    ERROR = "error"  # harness defect: refused user reply, broken environment, internal bug
    INTERRUPTED = "interrupted"


class TrialStatus(str, Enum):
    """What the trial counts as."""

    COMPLETED = "completed"
    FAILED = "failed"
    ERROR = "error"
    ABORTED = "aborted"
    INTERRUPTED = "interrupted"


_STATUS = {
    TerminationReason.USER_STOP: TrialStatus.COMPLETED,
    TerminationReason.MAX_TURNS: TrialStatus.COMPLETED,
    TerminationReason.MAX_STEPS_PER_TURN: TrialStatus.FAILED,
    TerminationReason.EMPTY_COMPLETION: TrialStatus.FAILED,
    TerminationReason.CONTEXT_WINDOW_EXCEEDED: TrialStatus.FAILED,
    TerminationReason.API_ERROR: TrialStatus.FAILED,
    TerminationReason.RATE_LIMIT: TrialStatus.ABORTED,
    TerminationReason.API_TIMEOUT: TrialStatus.ABORTED,
    TerminationReason.INFRA_ERROR: TrialStatus.ABORTED,
    TerminationReason.CONFIGURATION_ERROR: TrialStatus.ABORTED,
    TerminationReason.RUN_STOPPED: TrialStatus.ABORTED,
    TerminationReason.ERROR: TrialStatus.ERROR,
    TerminationReason.INTERRUPTED: TrialStatus.INTERRUPTED,
}


def status_for(reason: TerminationReason) -> TrialStatus:
    """The status a termination reason implies (one table, so the two never disagree)."""
    return _STATUS[reason]


def counts_against_model(status: TrialStatus) -> bool:
    """Whether the trial is in the denominator of the model's pass rate."""
    return status in (TrialStatus.COMPLETED, TrialStatus.FAILED, TrialStatus.ERROR)


def is_finished(status: TrialStatus) -> bool:
    """Whether a resumed run skips the trial (an interrupted one runs again)."""
    return status is not TrialStatus.INTERRUPTED
