"""Reply detectors: each flags one way a generated user reply can break frame."""

from capplan.trials.usersim.detectors.base import EXCERPT_LIMIT, Finding, ReplyDetector, bounded_excerpt
from capplan.trials.usersim.detectors.fourth_wall import FOURTH_WALL_REASONS, FourthWallDetector
from capplan.trials.usersim.detectors.scratchpad import ScratchpadDetector

__all__ = [
    "EXCERPT_LIMIT",
    "FOURTH_WALL_REASONS",
    "Finding",
    "FourthWallDetector",
    "ReplyDetector",
    "ScratchpadDetector",
    "bounded_excerpt",
]
