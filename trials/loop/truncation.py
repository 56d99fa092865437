"""Tool-output truncation: what the model sees of a tool's output on the next prompt.

The effective cap is the tighter of the plan's per-model cap and the task's per-tool cap (None
when neither is set, and the output passes verbatim). Over the cap, the middle is elided:
head + ``\\n...[{N} chars omitted]...\\n`` + tail, head and tail ``cap // 2`` chars each, so the
first and the last error of a long output both survive. The recorder keeps the untruncated
output; only the prompt copy is capped, ``Error: ...`` results included.
"""

from __future__ import annotations

MARKER = "\n...[{n} chars omitted]...\n"


def effective_cap(*caps: int | None) -> int | None:
    """The tightest of the caps that are set; None when none is."""
    set_caps = [c for c in caps if c is not None]
    return min(set_caps) if set_caps else None


def keep_head_and_tail(text: str, cap: int | None) -> str:
    """``text`` unchanged when within ``cap``, else its head and tail around the omission marker."""
    if cap is None or len(text) <= cap:
        return text
    half = cap // 2
    omitted = len(text) - 2 * half
    return text[:half] + MARKER.format(n=omitted) + (text[-half:] if half else "")
