"""The LLM user simulator: request building, prompt body, and the reply guard.

The simulator speaks from the customer's seat of a trial. Its model call is injected as a
``generate(system_prompt, messages)`` callable, so the executor's client drives it in a trial
and a scripted callable drives it in a test.

May import: nothing of capplan outside itself: the simulator is a component the loop drives
(``loop.users``) through a ``generate`` callable, not a part of it.
"""

from capplan.trials.usersim.contract import GenerateFn, GenerationLike, Message
from capplan.trials.usersim.guard import (
    DEFAULT_REPLY_DETECTORS,
    LOGGER_NAME,
    USER_REPLY_MAX_ATTEMPTS,
    GuardedGeneration,
    GuardEvent,
    ReplyDefect,
    UserReplyGuard,
    UserReplyRefused,
    reason_codes,
)
from capplan.trials.usersim.prompt import SIMULATOR_SCHEMA_VERSION, STOP_SIGNAL, render_system_prompt
from capplan.trials.usersim.request import (
    SIMULATOR_GREETING,
    UnanswerableTranscript,
    build_request,
    flip_transcript,
    opening_request,
)
from capplan.trials.usersim.simulator import UserReply, UserSimulator
from capplan.trials.usersim.tool_loop import RunTool, UserTools, UserToolStepsExceeded

__all__ = [
    "DEFAULT_REPLY_DETECTORS",
    "LOGGER_NAME",
    "SIMULATOR_GREETING",
    "SIMULATOR_SCHEMA_VERSION",
    "STOP_SIGNAL",
    "USER_REPLY_MAX_ATTEMPTS",
    "GenerateFn",
    "GenerationLike",
    "GuardEvent",
    "GuardedGeneration",
    "Message",
    "ReplyDefect",
    "RunTool",
    "UnanswerableTranscript",
    "UserReply",
    "UserReplyGuard",
    "UserReplyRefused",
    "UserSimulator",
    "UserToolStepsExceeded",
    "UserTools",
    "build_request",
    "flip_transcript",
    "opening_request",
    "reason_codes",
    "render_system_prompt",
]
