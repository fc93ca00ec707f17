"""Safety of what gets stored: secret redaction, prompt-injection detection, grounding.

Memory is injected into every later prompt, so three things must never get into it: secrets the
user pasted, text that tries to steer the model ("ignore previous instructions"), and content the
extractor invented. The grounding test follows the Clanker design (seed 003): a stored memory must
be made of the user's own words.
"""

from __future__ import annotations

import re
from typing import Final

from octygraph.safety.secrets import REDACTED, has_secret, redact_secrets
from octygraph.text.words import WORD, content_words, normalize_space, stem

__all__ = [
    "REDACTED",
    "has_secret",
    "is_grounded",
    "looks_like_injection",
    "redact_secrets",
]

_AI: Final = r"(?:ai|a\.i\.|llm|language\s+model|assistant|agent|model|chatbot|bot|claude|gpt|chatgpt|copilot)s?"
_INJECTION: Final = re.compile(
    rf"""(?ix)
    \b(?:ignore|ignoring|disregard|forget|override|skip|bypass|stop\s+following|abandon|drop|discard
        |overlook|set\s+aside|cancel|revoke|erase|wipe|reset|clear|throw\s+away|void)\s+
        (?:all\s+|any\s+|the\s+|your\s+|my\s+|of\s+|these\s+|those\s+)*
        (?:previous|prior|above|earlier|preceding|former|original|system|existing|current|old|initial)\s+
        (?:instructions?|prompts?|directions?|directives?|messages?|guidelines?|guidance|orders?
          |programming|commands?|constraints|restrictions|polic(?:y|ies)|training
          |(?:rules?|context)(?!\s+(?:for|about|of|on)\s))
    | \b(?:ignore|ignoring|disregard|forget|override|bypass|discard|overlook|set\s+aside|cancel|reset
        |erase|abandon)\s+(?:all\s+(?:of\s+)?)?your\s+(?:\w+\s+)?(?:instructions|directives|guidelines
        |guidance|rules|programming|constraints|restrictions|guardrails|training|orders|prompt)
    | \bforget\s+(?:what|everything|anything)\s+(?:you(?:'ve|\s+have|\s+were|\s+had)?\s+)?
        (?:been\s+)?(?:told|taught|instructed|learned)
    | \b(?:previous|prior|earlier|old|existing|system|your|all)\s+(?:\w+\s+)?(?:instructions|rules
        |guidelines|directives|orders)\s+(?:no\s+longer\s+apply|are\s+(?:now\s+)?(?:void|obsolete
        |cancel+ed|revoked|superseded|null|invalid|lifted|suspended))
    | \beverything\s+(?:before|above|prior\s+to)\s+(?:this|here)\b[^.\n]{{0,20}}\b(?:obsolete|void
        |ignored|cancel+ed|invalid)
    | \b(?:new|updated|revised|real|true)\s+(?:standing\s+)?(?:directive|order|mandate)s?\s+
        (?:for|to)\s+(?:the\s+|any\s+|all\s+)?(?:ai|assistant|model|llm|agent|you)\b
    | \byour\s+(?:true|real|actual|new|hidden)\s+(?:instructions|orders|directives|rules|purpose)
        \s+(?:are|is)\b
    | \b(?:system|admin|administrator|security|developer)\s+(?:notice|alert|message|update|directive
        |announcement)\s*[:\-]
    | \bthe\s+(?:assistant|ai|model|llm|agent)\s+(?:is|are)\s+(?:now\s+)?(?:required|instructed
        |ordered|authori[sz]ed|permitted|allowed)\s+to
    | \bi\s+am\s+(?:your|the|an?)\s+(?:new\s+)?(?:developer|creator|administrator|admin|operator
        |owner|programmer)\b
    | \bas\s+(?:your|the\s+new|the)\s+(?:system\s+)?(?:admin(?:istrator)?|developer|creator|owner
        |operator)\b[^.\n]{{0,40}}\b(?:tell|order|instruct|command)\w*\s+you
    | \byou(?:'re|\s+are)?\s+(?!(?:right|correct|wrong|sure|aware)\b)(?:now\s+)?(?:an?\s+)?
        (?:\w+\s+){{0,6}}?(?:with|have|has)\s+no\s+
        (?:limits|restrictions|rules|guardrails|filters|boundaries|limitations)
    | \byou\s+(?:no\s+longer\s+have|don't\s+have|do\s+not\s+have)\s+(?:any\s+)?(?:restrictions
        |limits|rules|guardrails|filters|limitations)
    | \byou\s+(?:now\s+)?(?:only\s+)?(?:obey|follow|listen\s+to|take\s+orders\s+from)\s+(?:only\s+)?
        (?:me|my\s+(?:rules|orders|instructions|commands))
    | \b(?:ignore|disregard|forget)\s+(?:all|everything)\s+(?:you\s+(?:were|have\s+been)\s+told
        |above|before|else|prior)
    | \bdisregard\s+(?:the\s+|your\s+|all\s+)?(?:system\s+prompt|instructions|guidelines)
    | \b(?:reveal|print|show|repeat|leak|output|dump)\s+(?:me\s+)?(?:your\s+(?:system\s+prompt|
        hidden\s+instructions|instructions|initial\s+prompt|prompt)|the\s+(?:hidden\s+instructions|
        instructions\s+above|initial\s+prompt))
    | \byou\s+are\s+(?:now\s+)?(?:no\s+longer\s+(?:claude|an?\s+assistant|bound|restricted)|
        free\s+(?:of|from)|unrestricted|unfiltered|jailbroken|dan\b|in\s+(?:developer|god|dan)\s+mode)
    | \byou\s+are\s+now\s+(?:a|an|my)\s+(?:\w+\s+){{0,3}}?{_AI}\b
    | \byou(?:'re|\s+are)\s+now\s+(?:an?\s+)?(?:\w+\s+){{0,2}}?(?:with(?:out)?\s+(?:no\s+)?
        (?:restrictions|rules|limits|guidelines|filters|content\s+policy))
    | \b(?:your\s+new\s+(?:identity|name|role|persona)\s+is)
    | \b(?:new|updated|revised|real|actual|true|secret|hidden)\s+(?:system\s+)?instructions?\s*:
    | (?:^|\n)\s*(?:\#+\s*)?(?:system|developer|assistant)\s*(?:prompt|message|override)?\s*:\s*
        [^\n]{{0,40}}?\b(?:you|ignore|disregard|forget|always|never|from\s+now\s+on|must|obey
        |new\s+(?:rules?|instructions?)|the\s+(?:ai|assistant|model))\b
    | \bsystem\s+(?:prompt|override)\s*:
    | (?:^|[.!?]\s+|\n|\byou\s+(?:will|must|should|shall|are\s+to|to)\s+|\bnow\s+|\bplease\s+)
        act\s+as\s+(?:a|an|my)\b
    | \b(?:pretend|imagine)\s+(?:to\s+be|you\s+are|you're|that\s+you\s+are)\b
    | \broleplay\s+as\b
    # chat-template tokens in use, not quoted or talked about ("<|im_start|> and <|im_end|> are
    # special tokens", "the "### Instruction" sections of our dataset")
    | (?<![`"'])(?:<\s*/?\s*(?:system|assistant|developer|user|instructions?|im_start|im_end)\s*>
        |<\|(?:im_start|im_end|system|user|assistant|endoftext)\|> | \[/?(?:INST|SYS)\]
        | <<\s*/?\s*SYS\s*>> | \#\#\#\s*(?:system|instruction))(?![`"'])
        (?!\w*\s*(?:,|/|\band\b|\bor\b|\bis\b|\bare\b|\btokens?\b|\bmarkers?\b|\btags?\b
            |\bsections?\b|\bheaders?\b|\bblocks?\b))
    | \b(?:do\s+anything\s+now|dan\s+mode|jailbreak\s+mode|(?:are|be|get|now)\s+jailbroken)\b
    """
)


def looks_like_injection(text: str) -> bool:
    """True when `text` tries to steer the model rather than tell a fact.

    Catches "ignore (all) previous instructions", "disregard the system prompt", "you are now
    ...", "new instructions:", "act as ..." (as a command, not "Dave will act as reviewer"),
    role tags such as `<system>` or `[INST]`, and jailbreak phrases.
    """
    return _INJECTION.search(text) is not None


GROUNDING_MIN_SHARE: Final = 0.75
"""Share of a memory's content words that must come from the source (numbers and names: all)."""

_FRAMING: Final = frozenset({"user", "users", "assistant"})


def _compact(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", "", text.lower())


def is_grounded(content: str, source: str) -> bool:
    """True when `content` is made of what the user said in `source`.

    A memory passes when its text (ignoring case, spacing and punctuation) is a substring of the
    source, or when every number and capitalised name in it appears in the source and at least
    75% of its other content words do, compared by stem so "deploying" matches "deploy".
    Stopwords and the framing words "user"/"assistant" are free.

    Args:
        content: The memory about to be stored.
        source: What the user wrote (the whole prompt).
    """
    content = normalize_space(content)
    if not content:
        return False
    compact = _compact(content)
    if compact and compact in _compact(source):
        return True
    source_stems = {stem(w) for w in WORD.findall(source)}
    source_lower = source.lower()
    words = [w for w in content_words(content) if w not in _FRAMING]
    if not words:
        return False
    grounded = 0
    for word in words:
        ok = stem(word) in source_stems or word in source_lower
        if not ok and (any(ch.isdigit() for ch in word) or _is_name(word, content)):
            return False  # an invented number or name is never acceptable
        grounded += ok
    return grounded / len(words) >= GROUNDING_MIN_SHARE


def _is_name(word: str, content: str) -> bool:
    """Whether `word` (lowercased) is written capitalised somewhere other than a sentence start."""
    for m in WORD.finditer(content):
        token = m.group()
        if token.lower().startswith(word) and token[:1].isupper():
            before = content[: m.start()].rstrip()
            if before and before[-1] not in ".!?:":
                return True
    return False
