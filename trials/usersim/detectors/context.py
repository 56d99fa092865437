"""What the words just before a fourth-wall frame say about who is speaking.

A frame the customer reports (``they think I'm a bot``) or quotes (``your screen says "I am an
AI assistant"``) is the customer in frame, not the simulator stepping out of it, and so is one
who asks (``This is a simulation, right?``). These checks read a short window before or
after the match, in folded (lower-cased) text, with plain string operations where a regex
searched over the window would try every start position in it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

WINDOW = 60
"""How many characters before (or after) a frame the checks read."""

ContextCheck = Callable[[str], bool]
"""Takes the folded text before a frame, or after it, at most ``WINDOW`` characters."""

_OPEN_QUOTES = "\"\u201c'\u2018"
_REPORT_VERBS = frozenset(
    """
    say says said saying think thinks thought thinking believe believes believed claim claims
    claimed claiming assume assumes assumed assuming decide decides decided suspect suspects
    suspected mean means meant insist insists insisted accuse accuses accused accusing imply
    implies implied implying suggest suggests suggested suggesting reply replies replied write
    writes wrote tell tells telling told read reads show shows showed display displays displayed
    respond responds responded answer answers answered ask asks asked goes went flagged prove
    proves proved proving
    """.split()
)
_TELL = frozenset({"tell", "tells", "telling", "told"})
# Words that subordinate the clause after them: "like I'm a bot", "if I'm a bot".
_SUBORDINATORS = frozenset({"like", "if", "whether", "that", "sure", "convinced", "though"})
_SENTENCE_BREAKS = frozenset('.!?\u2026;:\n\r\u2028\u2029"\u201c(>*\u2013\u2014')
_SENTENCE_OPENERS = frozenset(
    """
    but and so well look honestly sorry however unfortunately again remember because also
    though oh ok okay yes no
    """.split()
)


def _last_words(text: str, count: int) -> list[str]:
    return text.rsplit(None, count)[-count:]


def _report_verb_ends(words: list[str]) -> bool:
    """``words`` (the last two of a text) end with a report verb, or "tell(s) me"."""
    if not words:
        return False
    last = words[-1]
    if last in _REPORT_VERBS:
        return True
    return last == "me" and len(words) == 2 and words[0] in _TELL


def quoted(before: str) -> bool:
    """The frame opens a quotation introduced by a report verb or a colon."""
    text = before.rstrip()
    if not text or text[-1] not in _OPEN_QUOTES:
        return False
    text = text[:-1].rstrip()
    if text.endswith(":"):
        return True
    if text.endswith(","):
        text = text[:-1]
    return _report_verb_ends(_last_words(text, 2))


def reported(before: str) -> bool:
    """The first-person frame is reported or subordinate speech, or quoted."""
    text = before.rstrip()
    if not text:
        return False
    if text[-1] in _OPEN_QUOTES:
        text = text[:-1].rstrip()
        if text.endswith(":"):
            return True
    if text.endswith((",", ":")):
        text = text[:-1]
    words = _last_words(text, 2)
    return bool(words) and (words[-1] in _SUBORDINATORS or _report_verb_ends(words))


def not_sentence_start(before: str) -> bool:
    """The frame sits mid-sentence (``I use it as an AI, I mean ...``)."""
    text = before.rstrip()
    if not text or text[-1] in _SENTENCE_BREAKS:
        return False
    if text.endswith(","):
        text = text[:-1]
    words = _last_words(text, 1)
    return not (words and words[0] in _SENTENCE_OPENERS)


_SENTENCE_END = re.compile("[.!?\u2026\n\r\u2028\u2029]")


def question_follows(after: str) -> bool:
    """The sentence the frame sits in is a question (``This is a simulation, right?``).

    Reads the text after the frame: a customer asking whether something is a simulation is
    in frame, and a simulator stepping out of it states rather than asks.
    """
    end = _SENTENCE_END.search(after)
    return end is not None and end.group() == "?"
