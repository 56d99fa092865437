"""How a trial ended: a typed termination reason and the status it implies.

Rate limits, timeouts, infrastructure failures and configuration errors (a refused key, an
unknown model: the run stops at the first) end a trial as ``ABORTED``: they say
nothing about the model, so they are excluded from every pass rate. So does ``RUN_STOPPED``: a
trial of a healthy plan that another plan's configuration error stopped. A harness defect (a
refused user reply, an environment that cannot be built) is ``ERROR``: our fault, counted,
never the agent's. Everything the model did itself is ``COMPLETED`` or ``FAILED``.

Whether a graded trial can pass is one rule, :func:`unaccepted_end` (its text is :data:`PASS_RULE`):
a trial passes only if its conversation reached an end the task accepts *and* every grader passed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class TerminationReason(str, Enum):
    """Why the conversation stopped."""

    USER_STOP = "user_stop"  # the user sent the stop signal or ran out of scripted turns
    # the simulated user sent a stop signal of the task's own (``user.stop_signals``): τ²-bench's
    # ###TRANSFER### (the agent handed the user over) and ###OUT-OF-SCOPE### (the scenario ran out)
    USER_TRANSFER = "user_transfer"
    USER_OUT_OF_SCOPE = "user_out_of_scope"
    MAX_TURNS = "max_turns"
    # the agent passed the task's max_steps_per_turn within one user turn: the turn was force-quit and the
    # conversation ended there; graded as it stands, as BFCL grades such an entry
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
    TerminationReason.USER_TRANSFER: TrialStatus.COMPLETED,
    TerminationReason.USER_OUT_OF_SCOPE: TrialStatus.COMPLETED,
    # the turn budget ran out before the conversation ended: the agent's failure, as the step limit is
    TerminationReason.MAX_TURNS: TrialStatus.FAILED,
    # BFCL's force-quit ends the entry and grades it: the graders judge the turns played (a force-quit
    # before the last user turn leaves turns unplayed, which they fail)
    TerminationReason.MAX_STEPS_PER_TURN: TrialStatus.COMPLETED,
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


#: the ends the user chose: its stop signal (or the script's end), or one of the task's own stop signals
USER_ENDS = frozenset({TerminationReason.USER_STOP, TerminationReason.USER_TRANSFER,
                       TerminationReason.USER_OUT_OF_SCOPE})


def status_for(reason: TerminationReason) -> TrialStatus:
    """The status a termination reason implies (one table, so the two never disagree)."""
    return _STATUS[reason]


def counts_against_model(status: TrialStatus) -> bool:
    """Whether the trial is in the denominator of the model's pass rate."""
    return status in (TrialStatus.COMPLETED, TrialStatus.FAILED, TrialStatus.ERROR)


def is_finished(status: TrialStatus) -> bool:
    """Whether a resumed run skips the trial (an interrupted one runs again)."""
    return status is not TrialStatus.INTERRUPTED


#: The pass rule as the summary, ``trial report`` and ``trial view`` state it (docs/trials.md says it at length).
PASS_RULE = ("A trial is passed only if its conversation reached an end the task accepts (the LLM user simulator "
             "stopped, the agent's final answer is non-blank text, not cut at the output limit or by a content "
             "filter, or a turn was force-quit at max_steps_per_turn, as BFCL grades it) and every grader passed; "
             "a trial that ended on the agent's failure (empty completions, the turn limit, the context window, "
             "a provider error) is not passed whatever its graders said, and their verdicts are still recorded.")

#: finish reasons that say the provider cut the answer short: such text is not a final answer
CUT_FINISH_REASONS = frozenset({"length", "content_filter"})


@dataclass(frozen=True)
class FinalAnswer:
    """The agent's last completion, when it answered in text (no tool calls): what a scripted user's end follows."""

    text: str
    finish_reason: str | None


def unaccepted_end(reason: TerminationReason, *, final_answer: FinalAnswer | None,
                   simulator_stopped: bool) -> str | None:
    """Why a graded trial is not passed whatever its graders say; None when its conversation reached an accepted end.

    The accepted ends: the LLM user simulator sent its stop (it read the agent's answer and ended the
    conversation), or the user stopped after the agent's non-blank, uncut final answer. A script's end is
    no judgement of the answer, so after a scripted user the final answer must be one. Every other end
    (empty completions, the turn limit, the context window, a provider error) is the agent's failure, except
    a force-quit at ``max_steps_per_turn``, which BFCL grades as it stands.
    """
    if reason is TerminationReason.MAX_STEPS_PER_TURN:
        return None  # BFCL's force-quit: the entry is graded as it stands, with no final answer to read
    if reason not in USER_ENDS:
        return _FAILED_ENDS.get(reason, f"the trial ended {reason.value}")
    if simulator_stopped:
        return None
    if final_answer is None:
        return "the agent gave no final answer"
    if not final_answer.text.strip():
        return "the agent's final answer is blank"
    if final_answer.finish_reason in CUT_FINISH_REASONS:
        return f"the agent's final answer was cut short (finish_reason {final_answer.finish_reason})"
    return None


_FAILED_ENDS = {
    TerminationReason.MAX_TURNS: "the turn budget ran out before the conversation ended",
    TerminationReason.EMPTY_COMPLETION: "the agent's completions were empty (the resamples ran out)",
    TerminationReason.CONTEXT_WINDOW_EXCEEDED: "the conversation outgrew the context window",
    TerminationReason.API_ERROR: "a provider error ended the conversation",
}
