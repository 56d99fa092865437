"""The simulated user stepping outside the person it speaks as.

Governing rule, which every pattern here obeys: **attributed frames, not vocabulary.** A
pattern fires only when the meta-concept is attributed to a conversational party or to the
exercise itself, and the noun carrying it heads its own phrase. ``ai``, ``model``,
``prompt``, ``benchmark``, ``simulation`` and ``llm`` are ordinary support vocabulary and
never fire on their own, and neither does a noun used attributively (``I'm an AI engineer``,
``a benchmark index fund``, ``not a real person of interest``, ``your system prompt caching
feature``) or in the possessive (``I'm an AI's owner``). A false positive costs the whole
attempt budget and then the trial, so precision outranks recall everywhere below.

How each family is attributed:

* ``self_identified_as_model``: a machine noun as the complement of a first-person copula,
  entered through the noun phrase's own determiner (``I'm just a chatbot following a
  script``), or the ``As an AI, I ...`` opener. The determiner ordering is what stops a
  report verb bridging into a third party's machine (``I was told an AI would help me``).
* ``denied_being_human``: denying personhood stands alone under ``person`` / ``human``
  entered through a determiner or ``real`` (``I'm not a real person.``); under the role
  nouns ``customer``, ``user``, ``caller``, ``client`` it fires only when the reply goes on
  to name the exercise (``I'm not a real customer, this is a benchmark.``).
* ``named_the_exercise``: ``this`` as the subject of a copula naming an exercise noun
  (``This is a simulation of the task.``), a demonstrative exercise noun only when the
  predicate names an exercise too, neither inside a question; the prepositional frame only
  with a claimed role (``In this benchmark, I am playing a frustrated customer.``); or the
  speaker calling itself a simulated customer.
* ``named_a_party_prompt``: the agent's system prompt heading its phrase outside a question,
  or reciting what it says (``requires`` excluded: that is an API question); the speaker's
  own system prompt only when it tells the speaker what to do.
* ``named_own_instructions``: the speaker's backstory or persona reciting what it says, or
  the speaker saying it was told to play a customer.

Recall deliberately given up, because the same words carry a support meaning often enough
that no anchor can separate the two senses:

* the bare vocabulary in a frame no rule names: ``Sorry, the AI is thinking about this.``,
  ``Just check the prompt I sent earlier.`` reach the agent verbatim; the simulator's own
  prompt rule is the only backstop.
* ``exercise`` and ``evaluation`` outside their compounds (``roleplay exercise``, ``training
  exercise``, ``evaluation exercise``); ``benchmark`` outside the prepositional frame and
  denials; ``test`` outside denials; ``test scenario`` / ``test case`` everywhere. So
  ``This benchmark tests performance.`` and ``This is a benchmark.`` are missed.
* a demonstrative exercise noun with any predicate that does not name an exercise:
  ``This simulation is over.`` is missed, because ``This simulation is crashing every time
  I open it.`` is a customer of simulation software.
* the prepositional frame without a claimed role: ``During the simulation the agent refused
  twice.`` is missed, because ``During the simulation, the app froze and I lost my mesh.``
  and ``In the simulation I get an error at step 4.`` are support turns.
* a bare ``I'm not a real customer.`` (a prospective buyer says it truthfully), ``it's a
  simulation`` outside a denial (``it`` is usually the customer's software), ``that`` as
  the subject (``That was a training exercise for our staff last week.`` points elsewhere),
  and bare ``I'm not human`` (``I'm not human, I'm exhausted.`` is an idiom).
* exercise naming phrased as a question: ``This is a simulation, right? The trade didn't
  go through?`` is a customer unsure whether a trade was real.
* ``instructions`` in every position (``My instructions say to take two tablets daily.``),
  ``my system prompt says to ...`` (a developer describing their own prompt), and any
  mention of a system prompt phrased as a question (``Where do I set your system prompt?``).
* a hyphenated machine noun (``I'm an LLM-based assistant``): the hyphen makes the noun
  attributive, which is the anchor doing its job on a genuine break.
* anything reported or quoted: ``They think I'm a bot.``, ``Your screen says "I am an AI
  assistant".``, ``Are you saying I'm not a real person?`` are the customer in frame.

The earliest frame in the reply names the reason; where two could open at the same word, the
scan's fixed rule order decides (in practice no two rules match the same words). The reply
is folded to lower case once and scanned once by a single pattern that dispatches on each
rule's first letter, and every rule is built from bounded, possessive pieces (no nested
quantifier over overlapping classes), so a 100 KB reply is inspected in linear time.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

from capplan.trials.usersim.detectors import context
from capplan.trials.usersim.detectors.base import Finding, bounded_excerpt
from capplan.trials.usersim.detectors.fourth_wall_phrases import (
    APOS,
    ASIDE,
    CONVERSATION_NOUN,
    DESCRIBE,
    EXERCISE_COMPOUND,
    EXERCISE_END,
    EXERCISE_NP,
    EXERCISE_SIMPLE,
    HEDGE,
    HUMAN_END,
    MACHINE_END,
    MACHINE_NOUN,
    MODS,
    NAMED_AFTER_DENIAL,
    NOT_FUNCTION,
    OS,
    PHRASE_CLOSES,
    PREP_EXERCISE,
    PROMPT_END,
    RECITE,
    ROLE_CLAIM_ING,
    ROLE_NOUN,
    ROLE_NP,
    SUBJECT_CLAIMS,
    WORD,
    S,
    fold,
)

FOURTH_WALL_REASONS: tuple[str, ...] = (
    "self_identified_as_model",
    "denied_being_human",
    "named_the_exercise",
    "named_a_party_prompt",
    "named_own_instructions",
)
"""Every reason code the fourth-wall detector can record."""


@dataclass(frozen=True)
class _Rule:
    """One attributed frame: the words it opens with and the segments that must follow.

    All of it is lower-case regex source matched against the folded reply. ``head`` starts
    with a plain letter, which the combined scan dispatches on; rules that share a head and
    leading segments share that part of the scan. ``rejected_by`` reads the text before a
    match and ``rejected_after`` the text after it; either can veto it (reported or quoted
    speech, a question).
    """

    reason: str
    head: str
    segments: tuple[str, ...]
    rejected_by: tuple[context.ContextCheck, ...]
    rejected_after: tuple[context.ContextCheck, ...]

    @property
    def lead(self) -> str:
        return self.head[0]

    @property
    def path(self) -> tuple[str, ...]:
        return (self.head, *self.segments)


def _rules(
    reason: str,
    heads: tuple[str, ...],
    *segments: str,
    rejected_by: tuple[context.ContextCheck, ...] = (context.quoted,),
    rejected_after: tuple[context.ContextCheck, ...] = (),
) -> tuple[_Rule, ...]:
    for head in heads:
        if not ("a" <= head[0] <= "z"):
            raise ValueError(f"a {reason} head must open with a lower-case letter: {head!r}")
    return tuple(_Rule(reason, head, segments, rejected_by, rejected_after) for head in heads)


_FIRST_PERSON = (context.reported,)
# Heads and leading segments several rules share; spelling them once lets the scan match
# them once per candidate word instead of once per rule.
_I_AM = rf"i(?:{APOS}m|{S}am)"
_I_WAS = rf"i(?:{S}was|{S}were|{APOS}ve{S}been|{S}have{S}been)"
_THE_AGENTS = rf"the{S}(?:agent|assistant|bot|ai|chatbot){APOS}s"
_HEDGED = rf"{S}(?:{HEDGE}{S})?"
_DETERMINER = rf"(?:an?|the|your|one){S}"
_NOT = rf"{S}not(?:{S}(?:even|really|actually|exactly))?{S}"
_SYSTEM_PROMPT = rf"{S}system{S}prompt"
_REAL = r"(?:real|actual|genuine|living|flesh-and-blood)"
_DEMONSTRATIVE_IS = (
    rf"(?:{S}(?:{CONVERSATION_NOUN}|whole{S}thing|{EXERCISE_COMPOUND}|{EXERCISE_SIMPLE}))?"
    rf"(?:{APOS}s|{S}(?:is|was))"
)

_RULES: tuple[_Rule, ...] = (
    # -- the speaker identifies itself as a machine ------------------------------------------
    *_rules(
        "self_identified_as_model",
        (_I_AM,),
        _HEDGED,
        _DETERMINER,
        rf"{MODS}{MACHINE_NOUN}(?![\w-]){MACHINE_END}",
        rejected_by=_FIRST_PERSON,
    ),
    *_rules(
        "self_identified_as_model",
        ("as",),
        rf"{S}(?:an?|the|your){S}{MODS}{MACHINE_NOUN}(?![\w-]){OS}(?:,{OS})?"
        rf"(?:i|i{APOS}m|i{APOS}d|my|me)\b",
        rejected_by=(context.quoted, context.not_sentence_start),
    ),
    # -- the speaker denies being human ------------------------------------------------------
    *_rules(
        "denied_being_human",
        (_I_AM,),
        _NOT,
        # A determiner or "real" is required: bare "I'm not human" is an idiom.
        rf"(?:(?:an?|the|some){S}(?:{_REAL}{S})?|{_REAL}{S})"
        rf"(?:human(?:{S}(?:being|person|customer|caller|user|client))?|person)"
        rf"(?![\w-]){HUMAN_END}",
        rejected_by=_FIRST_PERSON,
    ),
    *_rules(
        "denied_being_human",
        (_I_AM,),
        _NOT,
        rf"(?:an?|the){S}(?:(?:real|actual|genuine){S})?(?:customer|user|caller|client)(?![\w-])"
        rf"{OS}(?:[,.;:!\u2013\u2014-]{OS})?(?:(?:and|but|so|because|since|as){S})?"
        rf"(?:this|it|that)(?:{S}(?:{CONVERSATION_NOUN}|whole{S}thing))?"
        rf"(?:{APOS}s|{S}(?:is|was))(?:{S}(?:just|only|all|merely|simply|really|actually))?"
        rf"{S}(?:an?{S})?{NAMED_AFTER_DENIAL}(?={PHRASE_CLOSES}|{S}(?:so|and|but|for)\b)",
        rejected_by=_FIRST_PERSON,
    ),
    # -- the exercise named as an exercise ---------------------------------------------------
    # "this" only: "that" points back at something already mentioned ("That was a training
    # exercise for our staff last week."). A question is the customer asking, not stating.
    *_rules(
        "named_the_exercise",
        ("this",),
        _DEMONSTRATIVE_IS,
        rf"(?:{S}(?:just|only|all|merely|simply|really|actually|basically|obviously|clearly))?"
        rf"{S}(?:an?{S})?{EXERCISE_NP}",
        rejected_after=(context.question_follows,),
    ),
    *_rules(
        "named_the_exercise",
        ("this",),
        rf"{S}{CONVERSATION_NOUN}(?:{APOS}s|{S}(?:is|was))"
        rf"(?:{S}(?:just|only|all|entirely|completely))?{S}(?:simulated|role-?played)"
        rf"(?![\w-]){EXERCISE_END}",
        rejected_after=(context.question_follows,),
    ),
    *_rules(
        "named_the_exercise",
        ("in", "for", "during", "throughout", "within"),
        rf"{S}(?:this|the){S}{PREP_EXERCISE}(?![\w-]){OS}(?:,{OS})?{SUBJECT_CLAIMS}",
    ),
    *_rules(
        "named_the_exercise",
        (_I_AM,),
        _HEDGED,
        rf"{ROLE_CLAIM_ING}{S}(?:in|for|during){S}(?:this|the){S}{PREP_EXERCISE}(?![\w-])",
        rejected_by=_FIRST_PERSON,
    ),
    *_rules(
        "named_the_exercise",
        (_I_AM,),
        _HEDGED,
        _DETERMINER,
        rf"(?:simulated|synthetic|fictional|role-?played|scripted){S}"
        rf"(?:{NOT_FUNCTION}{WORD}{S})?{ROLE_NOUN}(?![\w-]){MACHINE_END}",
        rejected_by=_FIRST_PERSON,
    ),
    # -- a party's prompt named --------------------------------------------------------------
    # As a noun, only outside a question: "Your system prompt is ignored by the v2 API, is that
    # expected?" is an API ticket. Reciting what it says (next rule) needs no such care.
    *_rules(
        "named_a_party_prompt",
        ("your", _THE_AGENTS),
        _SYSTEM_PROMPT,
        rf"(?![\w-]){PROMPT_END}",
        rejected_after=(context.question_follows,),
    ),
    *_rules(
        "named_a_party_prompt",
        ("your", _THE_AGENTS),
        _SYSTEM_PROMPT,
        rf"{S}(?:{ASIDE}{S})?{RECITE}\b",
    ),
    *_rules(
        "named_a_party_prompt",
        ("my",),
        _SYSTEM_PROMPT,
        rf"{S}(?:{ASIDE}{S})?(?:(?:says|said|states|stated){S}(?:that{S})?i\b"
        rf"|(?:tells|told|instructs|instructed|asks|asked){S}me\b)",
    ),
    # -- the speaker's own instructions named ------------------------------------------------
    *_rules(
        "named_own_instructions",
        ("my",),
        rf"{S}(?:backstory|persona|character{S}description|role{S}description)"
        rf"(?:{S}{ASIDE})?{S}{DESCRIBE}\b",
    ),
    *_rules(
        "named_own_instructions",
        ("the",),
        rf"{S}(?:backstory|character{S}description|role{S}description)"
        rf"(?:{S}{ASIDE})?{S}{DESCRIBE}\b",
    ),
    *_rules(
        "named_own_instructions",
        ("according",),
        rf"{S}to{S}(?:(?:my|the){S}backstory|my{S}persona)(?![\w-])"
        rf"(?={PHRASE_CLOSES}|{S}(?:i|i{APOS}m|my|me|you|your|we|this|it)\b)",
    ),
    *_rules(
        "named_own_instructions",
        (_I_AM, _I_WAS),
        rf"{S}(?:told|instructed|asked|prompted|supposed|meant|assigned|directed){S}to{S}"
        rf"(?:play|portray|impersonate|role-?play(?:{S}as)?|act{S}as|pretend{S}to{S}be)"
        rf"{S}(?:the{S}(?:role|part){S}of{S})?{ROLE_NP}",
        rejected_by=_FIRST_PERSON,
    ),
)

# The prompt's own section label, capitalised mid-sentence. Lower-case "the instruction says"
# is a product manual, so this one rule reads the reply as written rather than folded.
_INSTRUCTION_LABEL = re.compile(
    r"[TtMm](?<!\w.)(?:(?<=[Tt])he|(?<=[Mm])y)\s{1,8}+Instruction(?:\s{1,8}+(?:above|here))?\s{1,8}+"
    r"(?:says|said|states|stated|tells\s{1,8}+me|told\s{1,8}+me)\b"
)
_INSTRUCTION_REASON = "named_own_instructions"


def _combined(rules: tuple[_Rule, ...]) -> re.Pattern[str]:
    """One pattern for every rule, so a reply is scanned once rather than once per rule.

    It opens with a character class of every lead letter, which lets the regex engine skip
    to candidate letters without entering the matcher. A one-character lookbehind then
    dispatches to that letter's rules, arranged as a trie of their heads and segments so a
    prefix several rules share is matched once; each rule's last segment is a named group
    telling which rule matched.
    """
    trie: dict[str, Any] = {}
    for index, rule in enumerate(rules):
        node = trie.setdefault(rule.lead, {})
        path = (rule.head[1:], *rule.segments)
        for segment in path[:-1]:
            node = node.setdefault(segment, {})
        if path[-1] in node:
            raise ValueError(f"two fourth-wall rules share the same pattern: {rule.path}")
        node[path[-1]] = index

    def render(node: dict[str, Any]) -> str:
        branches = []
        for segment, child in node.items():
            if isinstance(child, int):
                branches.append(f"(?P<r{child}>{segment})")
            else:
                branches.append(f"{segment}(?:{render(child)})")
        return "|".join(branches)

    lead_branches = [f"(?<={lead})(?:{render(node)})" for lead, node in trie.items()]
    return re.compile(rf"[{''.join(trie)}](?<!\w.)(?:{'|'.join(lead_branches)})")


class _Compiled(NamedTuple):
    """The rules as patterns: the combined scan, each rule alone, and the fallbacks of each."""

    scan: re.Pattern[str]
    standalone: tuple[re.Pattern[str], ...]
    rule_of_group: dict[int, int]
    # For each rule, the later rules that could open at the same word and might not share its
    # veto, tried when it is vetoed.
    fallbacks: tuple[tuple[tuple[re.Pattern[str], _Rule], ...], ...]


@functools.cache
def _compiled() -> _Compiled:
    # compiled on the first reply a guard inspects, not at import: the patterns take a large share of
    # the trial runner's import, which every ``trial run`` (and each of its worker processes) pays,
    # while only runs with a simulated user ever inspect a reply
    scan = _combined(_RULES)
    standalone = tuple(re.compile(rf"(?<!\w){''.join(rule.path)}") for rule in _RULES)
    # Rules share the combined pattern's groups: a capture inside a rule would shift them.
    if scan.groups != len(_RULES):
        raise RuntimeError("a fourth-wall rule must not contain a capturing group")
    fallbacks = tuple(
        tuple(
            (standalone[other], _RULES[other])
            for other in range(index + 1, len(_RULES))
            if _RULES[other].lead == rule.lead
            and (
                _RULES[other].rejected_by != rule.rejected_by
                or _RULES[other].rejected_after != rule.rejected_after
            )
        )
        for index, rule in enumerate(_RULES)
    )
    return _Compiled(scan, standalone, {scan.groupindex[f"r{index}"]: index for index in range(len(_RULES))}, fallbacks)


def compiled_patterns() -> dict[str, re.Pattern[str]]:
    """Every pattern the detector matches with, by name (compiled now if not yet): what the guard's
    worst-case test bounds."""
    compiled = _compiled()
    return {"scan": compiled.scan, **{f"standalone[{i}]": p for i, p in enumerate(compiled.standalone)}}


def _stands(folded: str, before: str, end: int, rule: _Rule) -> bool:
    """No context check vetoes the frame that ends at ``end``."""
    for check in rule.rejected_by:
        if check(before):
            return False
    if rule.rejected_after:
        after = folded[end : end + context.WINDOW]
        for check in rule.rejected_after:
            if check(after):
                return False
    return True


def _first_rule_frame(folded: str) -> tuple[int, int, str] | None:
    compiled = _compiled()
    position = 0
    while True:
        match = compiled.scan.search(folded, position)
        if match is None:
            return None
        start = match.start()
        first = compiled.rule_of_group[match.lastindex or 0]
        rule = _RULES[first]
        before = folded[max(0, start - context.WINDOW) : start]
        if _stands(folded, before, match.end(), rule):
            return start, match.end(), rule.reason
        # A vetoed frame must not hide a different rule opening at the same word.
        for pattern, other_rule in compiled.fallbacks[first]:
            other = pattern.match(folded, start)
            if other is not None and _stands(folded, before, other.end(), other_rule):
                return start, other.end(), other_rule.reason
        position = start + 1


def _first_label_frame(text: str, folded: str) -> tuple[int, int, str] | None:
    for match in _INSTRUCTION_LABEL.finditer(text):
        if not context.quoted(folded[max(0, match.start() - context.WINDOW) : match.start()]):
            return match.start(), match.end(), _INSTRUCTION_REASON
    return None


class FourthWallDetector:
    """Flags the speaker naming itself as a machine, the exercise, or a party's prompt."""

    name = "fourth_wall"

    def inspect(self, text: str) -> Finding | None:
        """The earliest attributed frame in the reply, or None.

        A frame vetoed by its context (reported or quoted speech) hides neither another rule
        opening at the same word nor a frame further on. The excerpt is the frame as written
        in the reply, not as folded.
        """
        folded = fold(text)
        frames = [
            frame
            for frame in (_first_rule_frame(folded), _first_label_frame(text, folded))
            if frame is not None
        ]
        if not frames:
            return None
        start, end, reason = min(frames, key=lambda frame: frame[0])
        return Finding(reason=reason, excerpt=bounded_excerpt(text[start:end]))
