"""The content words of a search query, as both backends' keyword search takes them."""

from __future__ import annotations

import re

MAX_QUERY_WORDS = 32

_STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does doing for from had has have he her hers him
    his how i if in into is it its me my of on or our ours she should so than that the their them then there
    these they this those to too us was we were what when where which who whom why will with would you your
    yours about any all am just also very please tell know""".split()
)
_WORD = re.compile(r"[\w][\w'-]*", re.UNICODE)


def query_words(text: str) -> list[str]:
    """The query's distinct words without stopwords (all its words when only stopwords), lower case."""
    words = [w.lower().strip("'-") for w in _WORD.findall(text)]
    terms = [w for w in dict.fromkeys(words) if w and w not in _STOPWORDS and len(w) > 1]
    if not terms:
        terms = [w for w in dict.fromkeys(words) if w]
    return terms[:MAX_QUERY_WORDS]
