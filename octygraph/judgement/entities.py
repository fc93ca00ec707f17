"""Entity extraction without an LLM: a gazetteer of known names plus capitalisation rules."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from octygraph.models import EntityMention, normalize_kind
from octygraph.safety.secrets import is_secret_name
from octygraph.text.lexicon import (
    COMMON_NOUNS,
    COMMON_VERBS,
    FIRST_NAMES,
    KIND_BY_NEXT_WORD,
    NOT_NAMES,
    PERSON_VERBS,
    STOPWORDS,
    TOOL_NAME_ENDINGS,
    TOOLS,
)
from octygraph.text.words import WORD, strip_possessive

_TITLES: Final = frozenset({"mr", "mrs", "ms", "dr", "prof", "sir", "madam", "miss"})
_CONNECTORS: Final = frozenset({"of", "&", "de", "van", "von", "la", "le", "du"})
_NOUN_SUFFIXES: Final = (
    "ing", "ed", "ly", "tion", "tions", "ment", "ments", "ness", "ity", "ance", "ence", "ful",
    "less", "ous", "ive", "able", "ible", "ize", "ise", "ism", "ics",
)  # fmt: skip
_MAX_GAZETTEER_WORDS: Final = 6


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    low: str  # lowercased, possessive removed
    start: int
    end: int

    @property
    def capitalised(self) -> bool:
        first = self.text[:1]
        if not first.isalpha():
            return False
        return first.isupper() or any(ch.isupper() for ch in self.text[1:])

    @property
    def acronym(self) -> bool:
        core = strip_possessive(self.text)
        if core.endswith("s") and core[:-1].isupper():
            core = core[:-1]  # "PRs", "APIs"
        return len(core) >= 2 and core.isupper() and any(ch.isalpha() for ch in core)


def _tokens(text: str) -> list[_Token]:
    return [
        _Token(m.group(), strip_possessive(m.group().replace("’", "'")).lower(), m.start(), m.end())
        for m in WORD.finditer(text)
    ]


def _key(name: str) -> tuple[str, ...]:
    return tuple(strip_possessive(w.replace("’", "'")).lower() for w in WORD.findall(name))


class Gazetteer:
    """Known entity names (from the database), matched case-insensitively as whole words.

    Matching walks the prompt's word n-grams (longest first) and looks each up in a dict, so the
    cost depends on the prompt's length, not on how many names the database holds.
    """

    def __init__(self, names: Iterable[str] | Mapping[str, str] = ()) -> None:
        self._index: dict[tuple[str, ...], tuple[str, str | None, bool]] = {}
        items: Iterable[tuple[str, str | None]]
        if isinstance(names, Mapping):
            items = ((str(k), str(v) if v else None) for k, v in names.items())
        else:
            items = ((str(n), None) for n in names)
        for name, kind in items:
            key = _key(name)
            if not key or len(key) > _MAX_GAZETTEER_WORDS:
                continue
            if len(key) == 1 and (len(key[0]) < 2 or key[0] in STOPWORDS):
                continue  # a one-word name like "it" or "a" would match everywhere
            kind = normalize_kind(kind) if kind else None
            if key in self._index:
                known_name, known_kind, _ = self._index[key]
                ambiguous = kind is not None and known_kind is not None and kind != known_kind
                self._index[key] = (known_name, known_kind or kind, ambiguous)
            else:
                self._index[key] = (name.strip(), kind, False)
        self._longest = max((len(k) for k in self._index), default=0)
        self._derived: dict[frozenset[tuple[str, str]], Gazetteer] = {}

    def with_names(self, names: Iterable[str] | Mapping[str, str]) -> Gazetteer:
        """A gazetteer with these names added (existing entries keep their spelling).

        Results are memoised per set of names, so the several steps that handle one prompt share
        one gazetteer object (and so the cached sentence analyses keyed on it).
        """
        pairs = (
            frozenset((str(k), str(v or "")) for k, v in names.items())
            if isinstance(names, Mapping)
            else frozenset((str(n), "") for n in names)
        )
        cached = self._derived.get(pairs)
        if cached is not None:
            return cached
        if len(self._derived) > 64:
            self._derived.clear()
        extra = Gazetteer(names)
        merged = Gazetteer()
        merged._index = dict(self._index)
        for key, (name, kind, ambiguous) in extra._index.items():
            known = merged._index.get(key)
            if known is None:
                merged._index[key] = (name, kind, ambiguous)
            elif known[1] is None and kind is not None:
                merged._index[key] = (known[0], kind, known[2])
        merged._longest = max(self._longest, extra._longest)
        self._derived[pairs] = merged
        return merged

    def __len__(self) -> int:
        return len(self._index)

    @classmethod
    def coerce(cls, value: Gazetteer | Iterable[str] | Mapping[str, str] | None) -> Gazetteer:
        """Return `value` if it is a Gazetteer, else build one from names (or name -> kind)."""
        if isinstance(value, Gazetteer):
            return value
        if not value:
            return EMPTY_GAZETTEER
        return cls(value)

    def match(
        self, tokens: list[_Token], start: int, text: str
    ) -> tuple[int, str, str | None, bool] | None:
        """Longest known name starting at token `start`: (token count, name, kind, ambiguous)."""
        if not self._longest:
            return None
        top = min(self._longest, len(tokens) - start)
        for n in range(top, 0, -1):
            window = tokens[start : start + n]
            # A name's words must be adjacent: "Peter, Lisa" is not "Peter Lisa".
            if any(text[a.end : b.start].strip() for a, b in zip(window, window[1:], strict=False)):
                continue
            hit = self._index.get(tuple(t.low for t in window))
            if hit:
                return (n, *hit)
        return None


EMPTY_GAZETTEER: Final = Gazetteer()
"""Shared empty gazetteer (shared so that derived gazetteers and cached analyses are too)."""


def prompt_gazetteer(
    known: Gazetteer | Iterable[str] | Mapping[str, str] | None,
    found: Iterable[EntityMention] = (),
) -> Gazetteer:
    """The database's names plus the entities Layer 1 found (guessed kinds left open)."""
    return Gazetteer.coerce(known).with_names(
        {m.name: ("" if m.ambiguous else m.kind) for m in found}
    )


def _looks_like_name_at_start(tokens: list[_Token], i: int) -> bool:
    """Whether a capitalised first word is a name rather than a capitalised ordinary word."""
    token = tokens[i]
    low = token.low
    nxt = tokens[i + 1].low if i + 1 < len(tokens) else ""
    if low in COMMON_VERBS and low in FIRST_NAMES:
        # "Bill Acme quarterly" is a command, "Bill handles payroll" a person.
        return nxt in PERSON_VERBS or nxt in ("is", "was", "will", "has")
    if low in FIRST_NAMES or low in TOOLS or token.acronym or token.text != token.text.capitalize():
        return True
    if low in COMMON_VERBS or low in COMMON_NOUNS or low in STOPWORDS:
        return False
    if token.text.endswith(("'s", "’s")):
        return True
    if i + 1 < len(tokens) and tokens[i + 1].capitalised and tokens[i + 1].low not in NOT_NAMES:
        return True
    if low.endswith(_NOUN_SUFFIXES):
        return False
    # A capitalised plural at the start ("Tests are failing") is a common noun.
    return not (low.endswith("s") and not low.endswith(("ss", "us", "is")))


def _is_candidate(tokens: list[_Token], i: int, sentence_start: int, text: str) -> bool:
    token = tokens[i]
    if token.low in NOT_NAMES or len(token.low) < 2 or token.low[0].isdigit():
        return False
    if token.start > 0 and text[token.start - 1] == "@":
        return True
    if token.low in TOOLS:
        return True
    if not token.capitalised:
        return False
    if i == sentence_start:
        return _looks_like_name_at_start(tokens, i)
    return True


def _guess_kind(
    name_tokens: list[_Token], before: _Token | None, after: _Token | None, text: str
) -> tuple[str, bool]:
    """Kind for a new name and whether the guess is weak (then the mention is ambiguous)."""
    lows = [t.low for t in name_tokens]
    if any(low in TOOLS for low in lows) or (len(lows) > 1 and lows[-1] in TOOL_NAME_ENDINGS):
        return "tool", False
    if len(lows) > 1 and lows[-1] in KIND_BY_NEXT_WORD:
        return KIND_BY_NEXT_WORD[lows[-1]], False
    if (
        after is not None
        and after.low in KIND_BY_NEXT_WORD
        and not text[name_tokens[-1].end : after.start].strip()
    ):
        return KIND_BY_NEXT_WORD[after.low], False
    first = name_tokens[0]
    if lows[0] in FIRST_NAMES:
        return "person", False
    if (before is not None and before.low in _TITLES) or (
        first.start > 0 and text[first.start - 1] == "@"
    ):
        return "person", False
    if len(name_tokens) == 1 and after is not None and after.low in PERSON_VERBS:
        return "person", True
    if all(t.acronym for t in name_tokens):
        return "concept", True
    return "org", True


def extract_entities(
    sentence: str, gazetteer: Gazetteer | None = None, *, sentence_start: int = 0
) -> list[EntityMention]:
    """Find entity mentions in one sentence.

    Known names (the gazetteer) come first and keep the database's spelling and kind. Other
    names are capitalised words or runs of them ("Bank of America", "Peter Smith"), camel-case
    and all-caps words ("GitHub", "API"), @mentions and well-known tools written in lowercase.
    A capitalised first word counts only when it looks like a name, so "Deploy the API" yields
    just "API".

    Args:
        sentence: One sentence.
        gazetteer: Known entity names; None for none.
        sentence_start: Index of the first word that starts the sentence proper (after
            discourse markers), where capitalisation proves nothing.

    Returns:
        Mentions in order of appearance, deduplicated by case-insensitive name.
    """
    tokens = _tokens(sentence)
    found: list[EntityMention] = []
    seen: set[str] = set()

    def add(name: str, kind: str, ambiguous: bool) -> None:
        name = name.strip(" -'’.")
        if is_secret_name(name):
            return  # a redacted or secret token is never an entity
        if name and name.casefold() not in seen:
            seen.add(name.casefold())
            found.append(EntityMention(name=name, kind=kind, ambiguous=ambiguous))  # type: ignore[arg-type]

    i = 0
    while i < len(tokens):
        hit = gazetteer.match(tokens, i, sentence) if gazetteer is not None else None
        if hit is not None:
            n, name, kind, ambiguous = hit
            if kind is None:
                kind, weak = _guess_kind(
                    tokens[i : i + n],
                    tokens[i - 1] if i else None,
                    tokens[i + n] if i + n < len(tokens) else None,
                    sentence,
                )
                ambiguous = ambiguous or weak
            add(name, kind, ambiguous)
            i += n
            continue
        if not _is_candidate(tokens, i, sentence_start, sentence):
            i += 1
            continue
        j = i + 1
        if tokens[i].capitalised:
            while j < len(tokens) and not sentence[tokens[j - 1].end : tokens[j].start].strip():
                nxt = tokens[j]
                if (
                    nxt.capitalised
                    and nxt.low not in NOT_NAMES
                    and not tokens[j - 1].text.endswith(("'s", "’s"))
                ):
                    j += 1
                elif (
                    nxt.low in _CONNECTORS
                    and j + 1 < len(tokens)
                    and tokens[j + 1].capitalised
                    and tokens[j + 1].low not in NOT_NAMES
                    and not sentence[nxt.end : tokens[j + 1].start].strip()
                ):
                    j += 2
                else:
                    break
        span = tokens[i:j]
        name = sentence[span[0].start : span[-1].end]
        name = strip_possessive(name.replace("’", "'"))
        kind, weak = _guess_kind(
            span, tokens[i - 1] if i else None, tokens[j] if j < len(tokens) else None, sentence
        )
        add(name, kind, weak)
        i = j
    return found


def first_word_index(sentence: str, body_offset: int) -> int:
    """Index of the first token at or after character `body_offset` (where the body starts)."""
    for index, m in enumerate(WORD.finditer(sentence)):
        if m.start() >= body_offset:
            return index
    return 0


def mentions(text: str, name: str) -> bool:
    """Whether `name` occurs in `text` as whole words, ignoring case."""
    pattern = r"(?<![\w])" + r"\s+".join(re.escape(part) for part in name.split()) + r"(?![\w])"
    return re.search(pattern, text, re.IGNORECASE) is not None
