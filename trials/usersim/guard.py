"""The user-reply guard: a generated user turn is delivered as written, or not at all.

Every generation of a simulated user turn passes through :class:`UserReplyGuard`, which runs
the registered detectors over the reply text in order. A flagged reply is discarded whole and
regenerated; no text is ever edited, excised, truncated or substituted, so nothing reaches the
agent that the model did not write. Each discarded attempt is logged at WARNING under the
guard's own logger with the trial id that paid for it, and rides back on the result. When
every attempt is flagged the guard raises :class:`UserReplyRefused`, a harness error that
quotes none of the reply.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from capplan.trials.usersim.contract import GenerationLike
from capplan.trials.usersim.detectors.assistant_voice import AssistantVoiceDetector
from capplan.trials.usersim.detectors.base import Finding, ReplyDetector, bounded_excerpt
from capplan.trials.usersim.detectors.fourth_wall import FourthWallDetector
from capplan.trials.usersim.detectors.scratchpad import ScratchpadDetector

LOGGER_NAME = "capplan.user_reply_guard"
"""The guard logs under its own name, so its lines can be routed and kept on their own."""

logger = logging.getLogger(LOGGER_NAME)

USER_REPLY_MAX_ATTEMPTS = 3
"""Generations one user turn may take before the guard refuses it."""

DEFAULT_REPLY_DETECTORS: tuple[ReplyDetector, ...] = (FourthWallDetector(), ScratchpadDetector(),
                                                      AssistantVoiceDetector())
"""The detectors every guard runs unless built with others.

Tuple order is inspection order and the first detector to flag a reply owns it, so a detector
appended here cannot move the reason code recorded for a reply an earlier one already claims.
"""

#: ``delivered``: a later attempt passed; ``refused``: every attempt was flagged; ``provider_failed``:
#: the simulator's call failed after one or more attempts had been discarded
Outcome = Literal["delivered", "refused", "provider_failed"]
G = TypeVar("G", bound=GenerationLike)


@dataclass(frozen=True, slots=True)
class ReplyDefect:
    """One discarded attempt: the registered detector that flagged it, why, and the evidence."""

    detector: str
    reason: str
    excerpt: str

    @property
    def code(self) -> str:
        """``detector:reason``: how the defect is named anywhere its text must not go."""
        return f"{self.detector}:{self.reason}"

    def to_record(self) -> dict[str, str]:
        """The ``{detector, reason, excerpt}`` entry of a trajectory event."""
        return {"detector": self.detector, "reason": self.reason, "excerpt": self.excerpt}


@dataclass(frozen=True, slots=True)
class GuardEvent:
    """What the trajectory records for a user turn not accepted on its first generation.

    ``message_index`` is the position in the shared messages the turn was dispatched at;
    ``rejections`` holds one defect per discarded attempt, in attempt order.
    """

    message_index: int
    outcome: Outcome
    rejections: tuple[ReplyDefect, ...]

    def to_record(self) -> dict[str, Any]:
        """Plain data for ``user_reply_guard_events`` in the trajectory."""
        return {
            "message_index": self.message_index,
            "outcome": self.outcome,
            "rejections": [defect.to_record() for defect in self.rejections],
        }


@dataclass(frozen=True, slots=True)
class GuardedGeneration(Generic[G]):
    """A generation the guard accepted, with the attempts discarded before it.

    ``event`` is None when the first generation was accepted: only turns that needed
    regeneration are recorded.
    """

    generation: G
    rejections: tuple[ReplyDefect, ...]
    event: GuardEvent | None


def reason_codes(defects: Sequence[ReplyDefect]) -> list[str]:
    """The defects as ``detector:reason`` codes, never their text.

    Everything the guard surfaces outside its WARNING lines is built from these, so no
    discarded reply can reach a consumer that classifies errors by their prose.
    """
    return [defect.code for defect in defects]


class UserReplyRefused(RuntimeError):
    """Every generation of one user turn was flagged; the turn is refused, not delivered.

    A harness error (ours, counted in the denominator), never the agent's. The message names
    the detectors, the reason codes and the attempt count and quotes none of the reply: an
    error classifier reads exception prose, and a quoted reply that mentioned a provider
    would re-attribute the failure. The evidence is in the guard's WARNING lines and
    ``event``.
    """

    def __init__(self, rejections: tuple[ReplyDefect, ...], event: GuardEvent) -> None:
        self.rejections = rejections
        self.event = event
        self.attempts = len(rejections)
        detectors = sorted({defect.detector for defect in rejections})
        super().__init__(
            f"user simulator reply refused: all {self.attempts} generation attempts were "
            f"flagged by the reply guard (detectors: {', '.join(detectors)}; reasons: "
            f"{', '.join(reason_codes(rejections))}); the discarded text is in the guard's "
            "WARNING log lines, not in this message"
        )


class UserReplyGuard:
    """Runs the detectors over each generated reply and regenerates on a hit."""

    def __init__(
        self,
        detectors: Sequence[ReplyDetector] = DEFAULT_REPLY_DETECTORS,
        *,
        max_attempts: int = USER_REPLY_MAX_ATTEMPTS,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(
                f"max_attempts must be at least 1, got {max_attempts}: a guard that never "
                "generates would refuse every user turn"
            )
        names = [detector.name for detector in detectors]
        if any(not name for name in names):
            raise ValueError("every reply detector needs a non-empty name to record defects under")
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"duplicate reply detector name(s): {', '.join(duplicates)}")
        self.detectors: tuple[ReplyDetector, ...] = tuple(detectors)
        self.max_attempts = max_attempts

    def inspect(self, text: str) -> ReplyDefect | None:
        """The first detector's finding, in registration order, or None for a clean reply.

        The defect is recorded under the detector's registered name.
        """
        if not isinstance(text, str):
            raise TypeError(f"reply text must be str, got {type(text).__name__}")
        for detector in self.detectors:
            finding: Finding | None = detector.inspect(text)
            if finding is not None:
                return ReplyDefect(
                    detector=detector.name,
                    reason=finding.reason,
                    excerpt=bounded_excerpt(finding.excerpt),
                )
        return None

    def enforce(
        self,
        generate: Callable[[], G],
        *,
        trial_id: str,
        message_index: int,
        record_event: Callable[[GuardEvent], None] | None = None,
    ) -> GuardedGeneration[G]:
        """The first clean generation, with the defects discarded before it.

        Calls ``generate`` up to ``max_attempts`` times. A ``generate`` failure after one or
        more discards re-raises with the discarded reason codes attached as a note (which the trial's
        termination detail carries, see :class:`~capplan.trials.terminal.Terminal`) after giving
        ``record_event`` the ``provider_failed`` event, so the discarded attempts are in the
        trajectory. When every
        attempt is flagged, ``record_event`` (if given) receives the refused event before
        :class:`UserReplyRefused` is raised, so a trial that dies here still carries the
        evidence; it also receives the delivered event of any turn that needed regeneration.
        """
        rejected: list[ReplyDefect] = []
        for attempt in range(1, self.max_attempts + 1):
            try:
                generation = generate()
            except Exception as exc:
                if rejected:
                    exc.add_note(
                        f"user reply guard: {len(rejected)} generation attempt(s) were discarded "
                        f"before this error: {', '.join(reason_codes(rejected))}"
                    )
                    if record_event is not None:
                        record_event(GuardEvent(message_index, "provider_failed", tuple(rejected)))
                raise
            defect = self.inspect(generation.text)
            if defect is None:
                event = (
                    GuardEvent(message_index, "delivered", tuple(rejected)) if rejected else None
                )
                if event is not None and record_event is not None:
                    record_event(event)
                return GuardedGeneration(generation, tuple(rejected), event)
            rejected.append(defect)
            logger.warning(
                "user reply discarded whole: trial_id=%s message_index=%d attempt=%d/%d "
                "detector=%s reason=%s excerpt=%r",
                trial_id,
                message_index,
                attempt,
                self.max_attempts,
                defect.detector,
                defect.reason,
                defect.excerpt,
                extra={
                    "trial_id": trial_id,
                    "message_index": message_index,
                    "attempt": attempt,
                    "detector": defect.detector,
                    "reason": defect.reason,
                    "excerpt": defect.excerpt,
                },
            )
        rejections = tuple(rejected)
        refused = GuardEvent(message_index, "refused", rejections)
        logger.error(
            "user reply refused after %d attempts: trial_id=%s message_index=%d reasons=%s",
            self.max_attempts,
            trial_id,
            message_index,
            ",".join(reason_codes(rejections)),
            extra={"trial_id": trial_id, "message_index": message_index},
        )
        if record_event is not None:
            record_event(refused)
        raise UserReplyRefused(rejections, refused)
