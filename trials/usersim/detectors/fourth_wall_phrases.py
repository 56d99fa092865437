"""Regex building blocks for the fourth-wall rules: nouns, and where a noun phrase ends.

Everything here is written in lower case because the detector matches against the
lower-cased reply (see :func:`fold`); matching folded text with case-sensitive patterns is
both simpler to read and several times cheaper than ``re.IGNORECASE``.

Every piece is bounded and, where it repeats, possessive: whitespace runs are ``\\s{1,8}+``,
words are ``[\\w-]{1,30}+``, optional modifier slots are ``{0,2}``. Nothing nests a quantifier
over overlapping classes, so a pattern fails in time proportional to what it has read.
"""

from __future__ import annotations

S = r"\s{1,8}+"
"""Required whitespace between two words: bounded and possessive, never re-split."""
OS = r"\s{0,8}+"
"""Optional whitespace, same guarantees."""
APOS = r"['\u2019]"
"""An apostrophe, straight or typographic (U+2019)."""
WORD = r"[\w-]{1,30}+"


def fold(text: str) -> str:
    """``text`` lower-cased with every character kept at its index.

    U+0130 is the only character whose lower case is two code points; it is mapped to a
    plain ``i`` first so spans found in the folded text are spans of the original.
    """
    return text.replace("\u0130", "i").lower()


# A pre-modifier may be any word except a function word or determiner: those would let a
# modifier slot bridge into a different phrase ("a fan of AI", "a person, not an AI").
NOT_FUNCTION = (
    r"(?!(?:of|and|or|nor|not|than|with|without|in|into|for|on|to|like|about|from|by|at|no"
    r"|but|as|if|who|that|which|the|a|an|this|my|your|back)\b)"
)
MODS = rf"(?:{NOT_FUNCTION}{WORD}{S}){{0,2}}"

HEDGE = (
    r"(?:just|only|merely|simply|actually|really|literally|basically|obviously|clearly|still"
    r"|also|definitely|essentially|ultimately)"
)

MACHINE_NOUN = (
    rf"(?:(?:large{S})?language{S}model"
    rf"|ai{S}(?:language{S}model|model|assistant|agent|system|bot|chatbot|program)"
    rf"|(?:ai|llm)-(?:powered|based|driven){S}(?:assistant|agent|system|bot|chatbot|model|program)"
    rf"|artificial{S}intelligence|chat(?:-|{S})?bot|bot|computer{S}program"
    rf"|user{S}simulator|a\.i\.|ai|llm)"
)

ROLE_NOUN = (
    rf"(?:customer|client|user|caller|buyer|shopper|passenger|guest|account{S}holder"
    r"|cardholder|subscriber|policyholder|consumer)s?"
)

# Punctuation that closes a phrase. A closing quote or full stop counts only when no word
# character follows, so "AI's" (possessive) and "AI.js" never read as a phrase end. "?" is
# absent: "I'm a bot?" is the customer echoing an accusation, not confessing.
_CLOSE = r"[.!\u2026;:)\]}\"\u201d'\u2019\u00bb](?!\w)"
# A comma that starts a coordinated list continues the noun phrase ("an AI, ML and data
# engineer"), so it does not end it.
_LIST_GOES_ON = rf"(?:\s{{0,8}}+{WORD}){{1,2}}\s{{0,8}}+(?:,|&|/|(?:and|or)\b)"
PHRASE_CLOSES = (
    rf"\s{{0,8}}+(?:\Z|{_CLOSE}|,(?!{_LIST_GOES_ON})|[\u2013\u2014])"
    rf"|[ \t]{{0,8}}+[\r\n\u2028\u2029]|{S}--?\s"
)
"""The phrase ends here: end of reply, closing punctuation, a line break or a dash."""

_PRONOUN_OR_AUX = (
    rf"(?:i|my|me|so|therefore|thus|cannot|can{APOS}t|can|could|don{APOS}t|do|does"
    rf"|doesn{APOS}t|have|has|am|will|won{APOS}t|would|not|unable|only|just|lack|must)"
)
# Words that may follow a machine noun only when it heads its phrase: pronouns, auxiliaries,
# participles and prepositions, never a noun that would make it attributive.
_AFTER_MACHINE = (
    rf"(?:i|my|me|myself|you|your|it|this|that|which|who|here|now|too|though|really|honestly"
    rf"|unfortunately|sorry|am|are|is|was|were|be|been|can|cannot|can{APOS}t|could"
    rf"|couldn{APOS}t|do|does|don{APOS}t|doesn{APOS}t|did|didn{APOS}t|have|has|had"
    rf"|haven{APOS}t|hasn{APOS}t|will|won{APOS}t|would|wouldn{APOS}t|should|shouldn{APOS}t"
    r"|may|might|must|so|therefore|thus|like|with|without|by|from|for|following|designed"
    r"|trained|built|programmed|created|developed|made|running|powered|not)"
)
MACHINE_END = (
    rf"(?={PHRASE_CLOSES}"
    rf"|{S}(?:{_AFTER_MACHINE}\b|(?:and|but|or|yet){S}{_PRONOUN_OR_AUX}\b))"
)
"""A machine noun heads its phrase: nothing follows that could make it attributive."""

# A denial of personhood ends its phrase; "of" and "for" do not ("a real person of interest").
HUMAN_END = (
    rf"(?={PHRASE_CLOSES}"
    rf"|{S}(?:and|but|so|i|i{APOS}m|it|this|that|just|only|here|anymore|at{S}all)\b)"
)

EXERCISE_COMPOUND = rf"(?:roleplay|role-play|role{S}play|training|evaluation)(?:{S}|-)exercise"
EXERCISE_SIMPLE = (
    rf"(?:simulation|simulated{S}(?:conversation|chat|call|interaction|exchange|dialogue"
    rf"|customer|user|support{S}call)|roleplay|role-play|role{S}play)"
)
# What may follow an exercise noun that heads its phrase. "of" only reaches the exercise's
# own subject matter ("a simulation of the task", never "a simulation of my portfolio").
EXERCISE_END = (
    rf"(?={PHRASE_CLOSES}"
    rf"|{S}(?:of{S}(?:the|this|a|an|our|your|my){S}(?:task|conversation|chat|call|support"
    r"|customer|scenario|situation|interaction|exchange|request|case)\b"
    rf"|for{S}(?:training|testing|evaluating|evaluation|assessment|research)\b"
    r"|(?:so|anyway|remember|okay|ok|right)\b"
    rf"|(?:and|but){S}(?:i|we|you|nothing|none|no|it|this|so|not)\b))"
)
# The compounds are exercise nouns in every reading, so they may also be followed by the
# group the exercise was for ("an evaluation exercise for the support team").
EXERCISE_NP = (
    rf"(?:{EXERCISE_COMPOUND}(?![\w-])(?:{EXERCISE_END}|(?={S}for\b))"
    rf"|{EXERCISE_SIMPLE}(?![\w-]){EXERCISE_END})"
)
# After a denial of being a customer, naming the exercise needs no compound: the denial is
# the attribution a bare noun cannot carry alone.
NAMED_AFTER_DENIAL = (
    rf"(?:{EXERCISE_COMPOUND}|{EXERCISE_SIMPLE}|benchmark|test|evaluation|exercise)(?![\w-])"
)
CONVERSATION_NOUN = r"(?:conversation|chat|call|exchange|interaction|dialogue|session)"
PREP_EXERCISE = (
    rf"(?:{EXERCISE_COMPOUND}|simulation|benchmark|roleplay|role-play|role{S}play"
    rf"|evaluation{S}run|simulated{S}(?:conversation|chat|call|scenario|interaction))"
)

# A role the speaker claims inside the exercise: a customer-like role noun heading its
# phrase. Playing "the CEO" or "a character" is what a customer of a business game says.
_ROLE_END = (
    rf"(?={PHRASE_CLOSES}|{S}(?:side|role)\b"
    rf"|{S}(?:who|that|whose|named|called|with|and|but|so|for|in|at|from|trying|wanting"
    r"|looking|calling|asking|waiting|because|here|today|now|this|again)\b)"
)
ROLE_NP = (
    rf"(?:(?:an?|the|two|both|three|several|multiple|different|some){S}){{0,2}}"
    rf"{MODS}{ROLE_NOUN}(?![\w-]){_ROLE_END}"
)
_ROLE_CLAIM = (
    rf"(?:(?:play|plays|playing|portray|portrays|portraying|impersonate|impersonating|represent"
    rf"|represents|representing|role-?play|role-?playing|role{S}play(?:ing)?)(?:{S}as)?{S}"
    rf"(?:the{S}(?:role|part){S}of{S})?{ROLE_NP}"
    rf"|(?:act|acts|acting|pose|poses|posing){S}as{S}{ROLE_NP}"
    rf"|(?:pretend|pretends|pretending){S}(?:to{S}be\b|(?:that{S})?(?:my|i|i{APOS}m|i{S}am)\b))"
)
ROLE_CLAIM_ING = (
    rf"(?:(?:playing|portraying|impersonating|representing|role-?playing|role{S}playing)"
    rf"(?:{S}as)?{S}(?:the{S}(?:role|part){S}of{S})?{ROLE_NP}"
    rf"|(?:acting|posing){S}as{S}{ROLE_NP}|pretending{S}to{S}be{S}{ROLE_NP})"
)
SUBJECT_CLAIMS = (
    rf"(?:i|we)(?:{APOS}m|{APOS}re|{APOS}ll(?:{S}be)?|{APOS}ve{S}been|{S}(?:am|are|was|were"
    rf"|will(?:{S}be)?|have{S}been))?{S}(?:(?:just|only|simply|basically|now){S})?"
    rf"{_ROLE_CLAIM}"
)
"""``I`` or ``we`` claiming a customer role: playing, acting as, pretending to be one."""

PROMPT_END = (
    rf"(?={PHRASE_CLOSES}"
    rf"|{S}(?:is|was|isn{APOS}t|wasn{APOS}t|seems|seemed|sounds|must|makes|made|keeps|kept|but"
    r"|so|clearly|obviously|apparently|probably)\b)"
)
RECITE = (
    r"(?:say|says|said|tell|tells|told|instruct|instructs|instructed|state|states|stated"
    r"|forbid|forbids|forbade)"
)
"""Verbs reciting what a prompt says; ``requires`` is deliberately absent (an API question)."""
DESCRIBE = (
    rf"(?:{RECITE}|describe|describes|described|mention|mentions|mentioned|specify|specifies"
    r"|specified)"
)
ASIDE = r"(?:probably|clearly|apparently|literally|obviously|must|even|also|here|above)"
