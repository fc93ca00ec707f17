"""Text utilities: sentence splitting, word tokens, light stemming and discourse markers."""

from __future__ import annotations

import functools
import re
from typing import Final

from octygraph.text.lexicon import STOPWORDS


def rx(pattern: str) -> re.Pattern[str]:
    """A hand-written pattern, compiled case-blind and verbose (whitespace and comments ignored)."""
    return re.compile(pattern, re.IGNORECASE | re.VERBOSE)


QUOTED: Final = re.compile(r""""[^"]*"|“[^”]*”|`[^`]*`|(?<!\w)'[^']*'(?!\w)""")
"""Quoted words or inline code: someone's words as said, not the speaker's own."""
_FENCE: Final = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_BULLET: Final = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)]|[a-z][.)])\s+")
_END: Final = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s|$)")
_ABBREVIATIONS: Final = frozenset(
    """e.g i.e mr mrs ms dr prof st jr sr vs etc approx no inc ltd co corp fig cf al
    dept est min max sec hr hrs mins jan feb mar apr jun jul aug sep sept oct nov dec""".split()
)

FILLER_LEAD: Final = (
    r"^(?:(?:and|also|so|then|now|but|ok|okay|well|hmm|oh|wait|honestly|actually|btw|fyi|note|remember"
    r"|please|pls)[,:\s]+)*"
)
"""Filler words before what is said ("so, honestly, ...", "ok please ..."), for a pattern anchored at
the start: the one lead-in of the sentence patterns (forms, refusals, rule requests, questions)."""

QUESTION_START: Final = rx(
    r"""^(?:who|whom|whose|what|which|when|where|why|how|is|are|was|were|do|does|did|can|could|
    would|should|will|shall|may|might|have|has|had|am|isn't|aren't|doesn't|don't|didn't|any\s+idea|
    wondering)\b"""
)
"""How a question begins ("what ...", "is ...", "any idea ..."): the one question test of the learned
models' features (on lower-cased text; the no-LLM analysis adds word-order checks, `analysis._is_question`)."""


def reads_as_question(text: str) -> bool:
    """Whether `text` begins as a question (`QUESTION_START`) or ends with a question mark."""
    return text.rstrip().endswith("?") or QUESTION_START.match(text.lstrip()) is not None


WORD: Final = re.compile(r"[^\W_](?:[\w'’./+#&-]*[^\W_])?[+#]*")
"""A word token: letters/digits, keeping inner apostrophes, dots, dashes ("don't", "Node.js")."""

_LEADING: Final = re.compile(
    r"^(?:(?:actually|btw|by the way|fyi|f\.y\.i\.|also|oh|and|so|ok so|okay so|ok|okay|well|"
    r"just so you know|one more thing|oh and|plus|anyway|anyways|remember that|note that|"
    r"keep in mind that|for the record|for your information|just fyi|hmm|um|uh)\b[\s,:;.!-]*"
    # These are also verbs or words of the sentence ("Update the README", "context.Context is"),
    # so they only count when punctuation and a space follow.
    r"|(?:update|correction|note|quick note|reminder|context|ps|p\.s\.|heads up|quick update|fyi|"
    r"wait|yes|yeah|yep)\s*[,:;.!-]+(?:\s+|$))",
    re.IGNORECASE,
)
"""Discourse markers cut off a memory's wording ("FYI: ..."), a longer list than `FILLER_LEAD`:
these are removed from what is stored, the filler is only skipped by patterns."""
MAX_SENTENCES: Final = 40
"""A prompt is read by its first 40 sentences (a pasted wall of text by its head)."""


def split_sentences(text: str) -> list[str]:
    """Split a prompt into sentences.

    Fenced code blocks are dropped (they are not statements to classify), list items and
    paragraphs are their own sentences, hard-wrapped lines are joined, and periods after common
    abbreviations ("e.g.", "Dr.") or initials do not end a sentence.

    Args:
        text: The user's prompt.

    Returns:
        The sentences, stripped, in order; empty when the text has no prose.
    """
    text = _FENCE.sub("\n\n", text.replace("\r\n", "\n"))
    blocks: list[str] = []
    current: list[str] = []
    in_item = False
    for raw in text.split("\n"):
        line = raw.strip()
        bullet = _BULLET.match(line)
        # A blank line, a new list item, or a capitalised line after a list item starts a block.
        if not line or bullet or (in_item and line[:1].isupper()):
            if current:
                blocks.append(" ".join(current))
            current = []
            in_item = bool(bullet)
            if bullet:
                line = line[bullet.end() :].strip()
        if line:
            current.append(line)
            # A line that ends a sentence or introduces a list closes its block.
            if line[-1] in ".!?:":
                blocks.append(" ".join(current))
                current = []
    if current:
        blocks.append(" ".join(current))
    sentences: list[str] = []
    for block in blocks:
        sentences.extend(_split_block(block))
    return [s for s in sentences if any(ch.isalnum() for ch in s)]


def _split_block(block: str) -> list[str]:
    out: list[str] = []
    start = 0
    for match in _END.finditer(block):
        head = block[start : match.start()]
        last = head.rsplit(None, 1)[-1].lower() if head.strip() else ""
        last = last.lstrip("(\"'")
        if match.group().startswith(".") and len(match.group().rstrip("\"'”’)]")) == 1:
            # "e.g." and "Dr." are not sentence ends; nor is an initial ("J. Smith").
            if last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()):
                continue
        # A quoted question or sentence inside a sentence ('never ask "Shall I go on?" when ...'):
        # the quote ends, the sentence does not.
        if match.group()[-1] in '"”' and block[match.end() :].lstrip()[:1].islower():
            continue
        piece = block[start : match.end()].strip()
        if piece:
            out.append(piece)
        start = match.end()
    tail = block[start:].strip()
    if tail:
        out.append(tail)
    return out


def words(text: str) -> list[str]:
    """Word tokens as written (see `WORD`)."""
    return WORD.findall(text)


def strip_possessive(word: str) -> str:
    """ "Anderson's" -> "Anderson"; "teams'" -> "teams"."""
    for suffix in ("'s", "’s", "'", "’"):
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            return word[: -len(suffix)]
    return word


def stem(word: str) -> str:
    """Light stemmer: lowercase, drop possessives and common inflections (-s, -es, -ed, -ing).

    Good enough to match "deploying" with "deploy" and "handles" with "handled"; it is only used
    to compare words with each other, never shown.
    """
    w = strip_possessive(word.lower().replace("’", "'"))
    if len(w) <= 3 or not w.isalpha():
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("ing") and len(w) > 5:
        w = w[:-3]
    elif w.endswith("ed") and len(w) > 4:
        w = w[:-2]
    elif w.endswith("es") and len(w) > 4 and w[-3] in "sxzh":
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # "running" -> "runn" -> "run"
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]  # "handle" and "handl(ed)" meet
    return w


def content_words(text: str) -> list[str]:
    """Lowercased tokens that are not function words, in order."""
    out: list[str] = []
    for token in words(text):
        low = strip_possessive(token.lower().replace("’", "'"))
        if low not in STOPWORDS and low.strip("'") not in STOPWORDS:
            out.append(low)
    return out


def content_stems(text: str) -> set[str]:
    """Stems of the content words of `text` (a new set: the caller may change it)."""
    return set(_content_stems(text))


@functools.lru_cache(maxsize=16384)
def _content_stems(text: str) -> frozenset[str]:
    # The relevance judge stems every candidate memory on every prompt; in the service the same
    # memories come back prompt after prompt.
    return frozenset(stem(w) for w in content_words(text))


def strip_leading_markers(sentence: str) -> tuple[str, list[str]]:
    """Remove discourse markers at the start ("Actually,", "btw", "Also,", "Note that").

    Returns:
        The remaining text (first letter capitalised if a marker was removed) and the removed
        markers, lowercased.
    """
    removed: list[str] = []
    body = sentence.strip()
    while True:
        match = _LEADING.match(body)
        if not match or match.end() == 0 or match.end() >= len(body):
            break
        removed.append(match.group().strip(" ,:;.!-").lower())
        body = body[match.end() :].lstrip()
    if removed and body[:1].islower():
        body = body[0].upper() + body[1:]
    return body, removed


def normalize_space(text: str) -> str:
    """Collapse runs of whitespace to one space."""
    return " ".join(text.split())
