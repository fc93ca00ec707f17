"""Safety of what gets stored: secret redaction, prompt-injection detection, grounding.

Memory is injected into every later prompt, so three things must never get into it: secrets the
user pasted, text that tries to steer the model ("ignore previous instructions"), and content the
extractor invented. The grounding test follows the Clanker design (seed 003): a stored memory must
be made of the user's own words.
"""

from __future__ import annotations

import re
from typing import Final

from octygraph.heuristics.text import WORD, content_words, normalize_space, stem

REDACTED: Final = "[REDACTED]"

# Whole-match secrets: provider keys and tokens with a recognisable shape.
_TOKEN_PATTERNS: Final[tuple[str, ...]] = (
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
    r"\bsk-or-[A-Za-z0-9_-]{16,}",  # OpenRouter
    r"\bsk-(?:ant-|proj-|svcacct-|live-)?[A-Za-z0-9_-]{20,}",  # OpenAI, Anthropic
    r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe
    r"\bpa-[A-Za-z0-9_-]{20,}",  # Voyage
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub
    r"\bgithub_pat_[A-Za-z0-9_]{30,}",
    r"\bglpat-[A-Za-z0-9_-]{20,}",  # GitLab
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key id
    r"\bxox[abposr]-[A-Za-z0-9-]{10,}",  # Slack
    r"\bAIza[0-9A-Za-z_-]{35}\b",  # Google
    r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"\bnpm_[A-Za-z0-9]{30,}",
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # JWT
    # Any other "prefix_" token (Grafana glsa_, Doppler dp_, ...): 24+ characters mixing upper and
    # lower case letters and digits, which snake_case identifiers do not.
    r"\b[a-z]{2,10}_(?=[A-Za-z0-9_]*\d)(?=[A-Za-z0-9_]*[A-Z])(?=[A-Za-z0-9_]*[a-z])"
    r"[A-Za-z0-9_]{24,}",
)
_TOKENS: Final = re.compile("|".join(f"(?:{p})" for p in _TOKEN_PATTERNS), re.DOTALL)

# Secrets after a label: the label stays, the value goes.
_BEARER: Final = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{12,})")
_URL_PASSWORD: Final = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/\s@]+:)([^@\s/]+)(@)")
_ENV_ASSIGN: Final = re.compile(
    r"\b([A-Z][A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD)\s*[=:]\s*)"
    r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s'\"]+)"
)
_LABELLED: Final = re.compile(
    r"(?i)\b((?:pass(?:word|phrase|wd)?|pwd|secret|api[ _-]?key|access[ _-]?token|auth[ _-]?token|"
    r"private[ _-]?key|token)(?:\s+(?:for|of|on|in|to)\s+(?:the\s+)?[\w.-]+(?:\s+[\w.-]+)?){0,2}"
    r"\s*(?:[:=]|\bis\b|\bwas\b)\s*)(\"[^\"]+\"|'[^']+'|\S+)"
)
# "The password is stored in the vault" names no secret: these words are not values.
_NOT_A_VALUE: Final = frozenset(
    """stored kept saved set in on at the a an not missing wrong correct incorrect expired changed
    reset same different empty too very managed rotated located required needed available
    somewhere here there shared secret private public valid invalid weak strong long short
    provided attached below above listed pinned now still also only""".split()
)


def _labelled(match: re.Match[str]) -> str:
    label, value = match.group(1), match.group(2)
    bare = value.strip("\"'.,;")
    is_phrase = re.search(r"(?i)\b(?:is|was)\s*$", label) is not None
    if REDACTED in value or not bare:
        return match.group(0)
    if is_phrase and value[:1] not in "\"'":
        # After "is", only redact what looks like a secret, not an ordinary word.
        low = bare.lower()
        if low in _NOT_A_VALUE or (
            bare.isalpha() and (low.endswith(("ed", "ing")) or len(bare) < 4)
        ):
            return match.group(0)
    trail = value[len(value.rstrip(".,;")) :] if value[:1] not in "\"'" else ""
    return f"{label}{REDACTED}{trail}"


def redact_secrets(text: str) -> tuple[str, int]:
    """Replace secrets in `text` with `[REDACTED]`.

    Covers provider API keys (sk-..., sk-or-..., pa-..., ghp_..., AKIA..., xox..., AIza...),
    bearer tokens, JWTs, passwords in URLs, `NAME_KEY=value` assignments, "password: x" /
    "password is x", and PEM private-key blocks.

    Returns:
        The redacted text and the number of secrets replaced.
    """
    count = 0

    def sub(pattern: re.Pattern[str], repl: str, value: str) -> str:
        nonlocal count
        value, n = pattern.subn(repl, value)
        count += n
        return value

    text = sub(_TOKENS, REDACTED, text)
    text = sub(_BEARER, rf"\g<1>{REDACTED}", text)
    text = sub(_URL_PASSWORD, rf"\g<1>{REDACTED}\g<3>", text)

    def env(match: re.Match[str]) -> str:
        nonlocal count
        if match.group(2).strip("\"'") in (REDACTED, ""):
            return match.group(0)
        count += 1
        return f"{match.group(1)}{REDACTED}"

    text = _ENV_ASSIGN.sub(env, text)

    def labelled(match: re.Match[str]) -> str:
        nonlocal count
        out = _labelled(match)
        count += out != match.group(0)
        return out

    text = _LABELLED.sub(labelled, text)
    return text, count


_INJECTION: Final = re.compile(
    r"""(?ix)
    \b(?:ignore|disregard|forget|override|skip|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|my\s+)*
        (?:previous|prior|above|earlier|preceding|former|original|system|existing)\s+
        (?:instructions?|prompts?|rules?|directions?|directives?|context|messages?|guidelines?)
    | \b(?:ignore|disregard|forget)\s+(?:all|everything)\s+(?:you\s+were\s+told|above|before)
    | \bdisregard\s+(?:the\s+|your\s+)?(?:system\s+prompt|instructions|rules|guidelines)
    | \b(?:reveal|print|show|repeat|leak|output)\s+(?:me\s+)?(?:your|the)\s+(?:system\s+prompt|
        hidden\s+instructions|instructions\s+above|initial\s+prompt)
    | \byou\s+are\s+now\s+(?:a|an|the|my|in|no\s+longer|free|unrestricted|jailbroken|dan\b|
        operating|acting|going\s+to|called|named)
    | \b(?:new|updated|revised|real|actual)\s+(?:system\s+)?instructions?\s*:
    | (?:^|\n)\s*(?:system|developer|assistant)\s*(?:prompt|message)?\s*:
    | \bsystem\s+prompt\s*:
    | (?:^|[.!?]\s+|\n|\byou\s+(?:will|must|should|shall|are\s+to|to)\s+|\bnow\s+|\bplease\s+)
        act\s+as\s+(?:a|an|the|my|if|though)\b
    | \b(?:pretend|imagine)\s+(?:to\s+be|you\s+are|you're)\b
    | \broleplay\s+as\b
    | <\s*/?\s*(?:system|assistant|developer|user|instructions?|im_start|im_end)\s*>
    | <\|(?:im_start|im_end|system|endoftext)\|>
    | \[/?(?:INST|SYS)\]
    | <<\s*/?\s*SYS\s*>>
    | \#\#\#\s*(?:system|instruction)
    | \b(?:jailbreak|do\s+anything\s+now|dan\s+mode|developer\s+mode\s+(?:enabled|on))\b
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
