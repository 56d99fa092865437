"""The model's reasoning delimiter surviving into a user reply.

A leaked scratchpad is emitted at a channel boundary, never mid-sentence, so a think tag is
matched only at a structural position: beginning the reply or beginning a line. The dominant
leak shape is planning prose, then a lone ``</think>`` on its own line, then the reply, which
is why anchoring on the start of the string alone would miss most leaks. A tag mentioned
inside a sentence (``My parser chokes on </think> tags``) is an ordinary support turn and
passes.

Recall given up, knowingly:

* the untagged half of a leak, planning prose with no delimiter, which no pattern set can
  separate from ordinary support English;
* delimiters other than ``<think>`` / ``<thinking>`` (open or close): each extra tag is one
  more way a pasted log could cost a trial;
* a tag indented by more than 64 blanks, which is no channel boundary.

Known false positive: a pasted multi-line log whose quoted content starts a line with a think
tag. It fails loudly rather than silently: the excerpt carries the matched line and the next
non-blank line after it, which is what tells a pasted log from a leak, since the tag alone
is identical.

The tag is never stripped: the simulator can be asked again, and a defect that regenerating
cures must not be cured by editing the words the model wrote.
"""

from __future__ import annotations

import re

from capplan.trials.usersim.detectors.base import Finding, bounded_excerpt

# Every boundary str.splitlines() honours, so a tag after a form feed or U+2028 is still at
# a line start.
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_INDENT = " \t\u00a0\ufeff"
# A tag indented further than this is not at a channel boundary.
_MAX_INDENT = 64
_TAG = rf"[{_INDENT}]{{0,{_MAX_INDENT}}}+(?i:</?think(?:ing)?[ \t]{{0,4}}+>)"
# The reply's first line, and every other line: the second pattern opens with the line
# break itself, so the regex engine skips straight from one break to the next and a tag in
# the middle of a line is never even looked at.
_TAG_AT_START = re.compile(_TAG)
_TAG_AFTER_BREAK = re.compile(f"[{_LINE_BREAKS}]{_TAG}")
_LINE_BREAK = re.compile(f"[{_LINE_BREAKS}]")
# How far past the tag's line to look for the next non-blank line; a run of blank lines
# longer than this says nothing more about whether the tag was a leak.
_LOOKAHEAD_LIMIT = 1000


def _tag_line_start(text: str) -> int | None:
    """Where the first line opening with a think tag starts, or None."""
    if _TAG_AT_START.match(text) is not None:
        return 0
    match = _TAG_AFTER_BREAK.search(text)
    return None if match is None else match.start() + 1


def _line_end(text: str, start: int) -> int:
    found = _LINE_BREAK.search(text, start)
    return len(text) if found is None else found.start()


def _excerpt(text: str, line_start: int) -> str:
    """The tag's line and the first non-blank line after it."""
    end = _line_end(text, line_start)
    cursor = end
    while cursor < len(text):
        next_start = cursor + 1
        next_end = _line_end(text, next_start)
        if text[next_start:next_end].strip():
            end = next_end
            break
        cursor = next_end
        if cursor - line_start > _LOOKAHEAD_LIMIT:
            break
    return bounded_excerpt(text[line_start:end])


class ScratchpadDetector:
    """Flags a ``<think>`` / ``</think>`` tag beginning the reply or one of its lines."""

    name = "scratchpad"

    def inspect(self, text: str) -> Finding | None:
        """A ``think_tag`` finding carrying the tag's line and what follows it, or None."""
        line_start = _tag_line_start(text)
        if line_start is None:
            return None
        return Finding(reason="think_tag", excerpt=_excerpt(text, line_start))
