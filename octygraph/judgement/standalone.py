"""Make a kept segment read right next week: who "I" was, which project "this repo" is.

Only the words that would be ambiguous later are replaced; everything else stays the speaker's own
words (the grounding check treats "user", "assistant" and the project id as framing, not invention).
"""

from __future__ import annotations

import re
from typing import Final

from octygraph.judgement.forms import TOLD_LEAD
from octygraph.text.words import QUOTED, strip_leading_markers

_IRREGULAR: Final = {
    "am": "is",
    "have": "has",
    "do": "does",
    "go": "goes",
    "was": "was",
    "'m": "is",
    "don't": "doesn't",
    "dont": "doesn't",
    "haven't": "hasn't",
    "havent": "hasn't",
}
_NOT_VERBS: Final = frozenset(
    "always never also just really usually still only already didn't didnt can can't cant could "
    "couldn't couldnt would wouldn't wouldnt will won't wont should shouldn't shouldnt must might may "
    "wasn't wasnt need think".split()
)
_IRREGULAR_PAST: Final = frozenset(
    "laid said made got had did went told wrote written took taken left built found ran saw seen "
    "knew known thought brought bought sent spent kept felt meant lost paid heard held led stood "
    "understood began begun broke broken chose chosen drove forgot forgotten gave given grew came "
    "became fell sold spoke spoken threw won wore".split()
)
"""Past forms that take no third-person "s" ("I laid out" -> "the user laid out")."""
_ADVERBS: Final = (
    "always|never|also|usually|just|only|still|already|really|actually|mostly|generally"
)


def _pronoun(word: str) -> re.Pattern[str]:
    """The word on its own, not inside a name: "my-app", "me-first", "src/my/"."""
    return re.compile(rf"(?i)(?<![-/'’])\b{word}\b(?![-/'’])")


_MY: Final = _pronoun("my")
_ME: Final = _pronoun("me")
_MYSELF: Final = _pronoun("myself")
_MID_I: Final = re.compile(
    r"(?<=[\s,;])(?:I|i)(?:(['’]m|m|\s+am)|(['’]ve|\s+have)"
    rf"|\s+((?:{_ADVERBS})\s+)?([a-z]+(?:['’][a-z]+)?)|(['’]d)|(['’]ll))\b"
)
_SETS_UP: Final = re.compile(
    r"(?i)^(?:(?:please|so|ok|okay|now|let'?s|can\s+you|could\s+you)[,\s]+)*"
    r"(?:initiali[sz]e|init|create|scaffold|bootstrap|set\s+up|start|kick\s+off|spin\s+up|make)\s+"
    r"(?P<article>an?)\s+(?:new\s+|fresh\s+)?(?P<what>.*\b(?:project|app|application|repo|monorepo|"
    r"workspace|crate|module|package|library|site|service|cli|api|extension|skeleton|worker|gem)\b.*)$"
)
"""A request that sets the project up, and so says what it is ("initialize a rust crate called X")."""
_EVERY: Final = re.compile(r"(?i)\b(?:every|each|all|any|whenever)\b")
"""... unless it is a rule about such things ("create a new service for every bounded context")."""
_THAT_CLAUSE: Final = re.compile(
    r"(?i)^that\s+(?=(?:i|i'm|i've|i'll|i'd|we|we're|we've|we'll|you|you're|they|they're|he|she|"
    r"it's|there|the|a|an|our|my|your|their|this|these)\b)"
)
"""The "that" of "fyi that I'm ...": it opens a clause when a subject follows, not when a noun does
("fyi that endpoint is deprecated" keeps it)."""
_QUOTED: Final = re.compile(f"({QUOTED.pattern})")
"""`QUOTED` as a group, so that splitting on it keeps the quoted parts."""
_THIS_PROJECT: Final = re.compile(
    r"(?i)\b(?:this|our|the\s+current)\s+(repo|repository|project|codebase|app)\b"
)


def _third_person(verb: str) -> str:
    verb = verb.replace("’", "'")
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    already = verb.endswith("s") and not verb.endswith("ss")
    if (
        verb in _NOT_VERBS
        or verb in _IRREGULAR_PAST
        or "'" in verb
        or already
        or verb.endswith(("ed", "ll"))
    ):
        return verb
    if verb.endswith(("sh", "ch", "ss", "x", "o", "z")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 2 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _subject(who: str, m: re.Match[str]) -> str:
    """ "I'm" -> "<who> is", "I've" -> "<who> has", "I'd" -> "<who> would", "I'll" -> "<who> will",
    "I (always) use" -> "<who> (always) uses"."""
    if m.group(1):
        return f"{who} is"
    if m.group(2):
        return f"{who} has"
    if m.group(5):
        return f"{who} would"
    if m.group(6):
        return f"{who} will"
    return f"{who} {m.group(3) or ''}{_third_person(m.group(4))}"


def project_statement(text: str) -> str | None:
    """ "Scaffold an astro site for the docs" -> "The project is an astro site for the docs"; else None.

    The guideline counts a request that establishes the stack as stating it; kept as a request, it
    would read next week as a task still to do.
    """
    m = _SETS_UP.match(" ".join(text.split()).strip(" .!"))
    if m is None or _EVERY.search(m.group("what")):
        return None
    return f"The project is {m.group('article').lower()} {m.group('what')}"


def standalone(text: str, *, speaker: str = "user", project: str | None = None) -> str:
    """The segment as a memory: markers ("fyi", "btw") dropped, "I"/"my" and "this repo" resolved.

    Args:
        text: The kept segment, in the speaker's words.
        speaker: "user" for prompts, "assistant" for the Stop hook's reports.
        project: The project id, used for "this repo" / "this project".
    """
    body, markers = strip_leading_markers(" ".join(text.split()).strip(" -–—:;,"))
    # Not one of the leading markers: the form that keeps such sentences must still see it.
    if (told := TOLD_LEAD.match(body)) is not None:
        body = body[told.end() :]
    if markers:
        body = _THAT_CLAUSE.sub("", body, count=1)
    who = "The assistant" if speaker == "assistant" else "The user"
    whose = who.lower() + "'s"
    if (m := _MID_I.match(" " + body, 1)) is not None:
        body = _subject(who, m) + body[m.end() - 1 :]
    if body[:3].lower() == "my ":
        body = whose[0].upper() + whose[1:] + body[2:]

    def resolve(part: str) -> str:
        part = _MY.sub(whose, part)
        part = _ME.sub(who.lower(), part)
        part = _MYSELF.sub("itself" if speaker == "assistant" else "themselves", part)
        part = _MID_I.sub(lambda m: _subject(who.lower(), m), part)
        if project:
            part = _THIS_PROJECT.sub(lambda m: f"the {project} {m.group(1)}", part)
        return part

    # Quoted words and code are left as they are ('never ask "Shall I go on?"', `my-app`).
    body = "".join(part if i % 2 else resolve(part) for i, part in enumerate(_QUOTED.split(body)))
    body = body.rstrip(" ,;:")
    return body[:1].upper() + body[1:] if body else body
