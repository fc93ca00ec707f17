"""Cheap, named shape features of one segment: the signals a reader uses before reading for meaning.

Is it addressed to the assistant as a command, is it a question, does it look like code or a log, does
it speak for the team ("we", "our", "always"), does it carry a date or a version? The storage gate
combines these with the sentence vector; each is a number in [0, 1] so the learned weights stay
readable (`python training/train_gate.py --explain` prints them).
"""

from __future__ import annotations

import math
import re
from typing import Final

import numpy as np

from octygraph.text.lexicon import COMMON_VERBS
from octygraph.text.words import QUESTION_START, rx

_WORD: Final = re.compile(r"[A-Za-z][A-Za-z'’]*|\d+(?:\.\d+)*")
_ASK_ASSISTANT: Final = rx(
    r"""\b(?:can|could|would|will)\s+you\b|\bplease\b|\bpls\b|\bplz\b|\bi\s+(?:want|need|'d\s+like|
    would\s+like)\s+(?:you\s+)?to\b|\blet'?s\b|\bhelp\s+me\b|\bmake\s+it\b|\btry\s+(?:again|to)\b"""
)
_RULE_MARKERS: Final = rx(
    r"""\b(?:always|never|from\s+now\s+on|going\s+forward|by\s+default|as\s+a\s+rule|every\s+time|
    whenever|must|mustn't|should|shouldn't|don't\s+ever|do\s+not\s+ever|make\s+sure\s+(?:to\s+)?always|
    our\s+(?:rule|convention|policy|standard)|the\s+rule\s+is|convention|policy)\b"""
)
_PREFERENCE: Final = rx(
    r"""\bi\s+(?:prefer|like|love|hate|dislike|want\s+(?:everything|all|you\s+to\s+always))\b|
    \b(?:rather|preference|preferred)\b|\bkeep\s+(?:your\s+)?(?:answers|responses|replies)\b"""
)
_OPENER: Final = rx(
    r"""^(?:fyi|btw|by\s+the\s+way|heads\s+up|note|reminder|remember|for\s+the\s+record|context|
    for\s+context|just\s+so\s+you\s+know|important|keep\s+in\s+mind|quick\s+note|also\s+note)\b"""
)
_STATE_VERBS: Final = rx(
    r"""\b(?:is|are|uses?|runs?\s+on|lives?\s+in|lives?\s+under|is\s+(?:deployed|hosted|stored|built)|
    are\s+(?:deployed|hosted|stored)|handles?|owns?|manages?|depends\s+on|targets?|belongs?|
    goes|go\s+(?:in|to|through)|sits?\s+(?:in|on|behind)|stays?|has|have|contains?)\b"""
)
_DECIDED: Final = rx(
    r"""\b(?:decided|chose|chosen|picked|settled\s+on|agreed|going\s+with|went\s+with|switched|
    migrated|moved\s+(?:to|from|over)|standardi[sz]ed|adopted|dropped|deprecated|replaced)\b"""
)
_FUTURE: Final = rx(
    r"""\b(?:will|won't|going\s+to|gonna|planned|planning|plan\s+to|scheduled|later|next\s+(?:week|
    month|sprint|quarter|release)|on\s+hold|postponed|deadline|due|launch(?:es|ing)?|freeze)\b"""
)
_DATE: Final = rx(
    r"""\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b|
    \b\d{4}-\d\d-\d\d\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b|\bq[1-4]\b|
    \b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|weekend)\b|
    \b(?:next|this|end\s+of\s+(?:the\s+)?)\s*(?:week|month|quarter|year|sprint)\b"""
)
_VERSION: Final = re.compile(
    r"\bv?\d+\.\d+(?:\.\d+)?\b|\b(?:node|python|java|go|php|ruby)\s*\d+\b", re.I
)
_PATH_URL: Final = re.compile(
    r"https?://|www\.|(?:^|[\s`(])[~.]?/?[\w.-]+/[\w./*<>-]+|\b\w+\.(?:py|ts|tsx|js|jsx|md|mdc|json|ya?ml|toml|rs|go|rb|java|kt|swift|sql|sh|env|css|html)\b"
)
_LOG: Final = rx(
    r"""\b(?:error|exception|traceback|failed|failure|warning|warn|undefined|null|cannot|can't\s+find|
    not\s+found|denied|refused|timeout|timed\s+out|crash(?:ed|es)?|panic|segfault|stack\s+trace|
    status\s+code|exit\s+code|\d{3}\s+(?:error|not|bad|internal))\b|[A-Z]\w+(?:Error|Exception)\b"""
)
_ACK: Final = rx(
    r"""^(?:ok(?:ay)?|k|yes|yep|yeah|yup|no|nope|sure|great|perfect|nice|cool|thanks|thank\s+you|thx|
    ty|lgtm|go\s+ahead|continue|proceed|do\s+it|sounds\s+good|looks\s+good|works|done|good|awesome|
    got\s+it|option\s+\w+|\d+|[a-d]|try\s+again|keep\s+going|next|same|agreed|right|correct|exactly)\b"""
)
_HEDGE: Final = rx(
    r"""\b(?:maybe|perhaps|probably|i\s+think|i\s+guess|not\s+sure|might|seems?|looks\s+like|
    weird|strange|hmm+|huh|idk)\b"""
)
_DEICTIC_START: Final = rx(r"^(?:it|this|that|these|those|here|there|same|still)\b")
_CORRECTION: Final = rx(
    r"""\b(?:you\s+(?:edited|changed|deleted|removed|broke|forgot|missed|used|did|put|added|
    wrote)|wrong|that's\s+not|not\s+what\s+i|i\s+meant|undo|revert\s+that|again\b)"""
)
_NARRATION: Final = rx(
    r"""^(?:let\s+me|i'll|i\s+will|i'm\s+going\s+to|now\s+i|next,?\s+i|first,?\s+i|looking\s+at|
    i\s+see|i\s+can\s+see|i\s+notice|let's\s+(?:check|look|see|run|start)|now\s+let's|great!?|
    perfect!?|you\s+(?:want|asked|'d\s+like|would\s+like)|would\s+you|should\s+i|shall\s+i)\b"""
)
_DONE: Final = rx(
    r"""\b(?:i(?:'ve|\s+have)?\s+(?:deployed|migrated|switched|added|created|set\s+up|configured|
    installed|enabled|moved|replaced|upgraded|pinned|documented)|(?:is|are)\s+now\b|now\s+(?:uses?|
    runs?|lives?|targets?|loads?|requires?)|from\s+now\s+on)\b"""
)
_WE: Final = frozenset({"we", "our", "us", "we're", "we've", "we'll", "ours", "team"})
_I: Final = frozenset({"i", "my", "me", "i'm", "i've", "mine"})
_YOU: Final = frozenset({"you", "your", "you're", "yourself"})
_IMPERATIVE_VERBS: Final = COMMON_VERBS | frozenset(
    """lets let's init initialize setup scaffold wire hook bump tweak rerun refactor rewrite
    implement remove fix add update change make write create build run check show tell explain
    give list put move delete drop clean improve optimize optimise simplify extract inline""".split()
)

FEATURE_NAMES: Final = (
    "length",
    "very_short",
    "imperative_start",
    "asks_assistant",
    "question",
    "question_mark",
    "machine_shape",
    "symbol_density",
    "log_words",
    "path_or_url",
    "first_person_singular",
    "first_person_plural",
    "second_person",
    "rule_marker",
    "preference",
    "opener",
    "state_verb",
    "decided",
    "future",
    "date",
    "version",
    "acknowledgement",
    "hedge",
    "deictic_start",
    "correction",
    "narration",
    "done_report",
    "capitalised_names",
    "digits",
    "from_assistant",
)


def shape_features(text: str, *, machine: bool = False, assistant: bool = False) -> np.ndarray:
    """The named features of one segment, in `FEATURE_NAMES` order, as float32."""
    stripped = text.strip()
    low = stripped.lower()
    words = _WORD.findall(stripped)
    lows = [w.lower() for w in words]
    first = lows[0] if lows else ""
    n = max(1, len(stripped))
    symbols = sum(1 for ch in stripped if not ch.isalnum() and not ch.isspace())
    names = sum(1 for i, w in enumerate(words) if i > 0 and w[:1].isupper() and w[1:].islower())
    values = {
        "length": min(1.0, math.log1p(len(words)) / math.log1p(60)),
        "very_short": 1.0 if len(words) <= 3 else 0.0,
        "imperative_start": 1.0 if first in _IMPERATIVE_VERBS else 0.0,
        "asks_assistant": 1.0 if _ASK_ASSISTANT.search(low) else 0.0,
        "question": 1.0 if QUESTION_START.match(low) else 0.0,
        "question_mark": 1.0 if stripped.endswith("?") or "?" in stripped[-3:] else 0.0,
        "machine_shape": 1.0 if machine else 0.0,
        "symbol_density": min(1.0, 4.0 * symbols / n),
        "log_words": 1.0 if _LOG.search(stripped) else 0.0,
        "path_or_url": 1.0 if _PATH_URL.search(stripped) else 0.0,
        "first_person_singular": 1.0 if _I & set(lows) else 0.0,
        "first_person_plural": 1.0 if _WE & set(lows) else 0.0,
        "second_person": 1.0 if _YOU & set(lows) else 0.0,
        "rule_marker": 1.0 if _RULE_MARKERS.search(low) else 0.0,
        "preference": 1.0 if _PREFERENCE.search(low) else 0.0,
        "opener": 1.0 if _OPENER.match(low) else 0.0,
        "state_verb": 1.0 if _STATE_VERBS.search(low) else 0.0,
        "decided": 1.0 if _DECIDED.search(low) else 0.0,
        "future": 1.0 if _FUTURE.search(low) else 0.0,
        "date": 1.0 if _DATE.search(low) else 0.0,
        "version": 1.0 if _VERSION.search(stripped) else 0.0,
        "acknowledgement": 1.0 if len(words) <= 6 and _ACK.match(low) else 0.0,
        "hedge": 1.0 if _HEDGE.search(low) else 0.0,
        "deictic_start": 1.0 if _DEICTIC_START.match(low) else 0.0,
        "correction": 1.0 if _CORRECTION.search(low) else 0.0,
        "narration": 1.0 if _NARRATION.match(low) else 0.0,
        "done_report": 1.0 if _DONE.search(low) else 0.0,
        "capitalised_names": min(1.0, names / 3.0),
        "digits": 1.0 if any(ch.isdigit() for ch in stripped) else 0.0,
        "from_assistant": 1.0 if assistant else 0.0,
    }
    return np.array([values[name] for name in FEATURE_NAMES], dtype=np.float32)
