"""Storage filter: is the user telling something worth remembering, or asking?

Store: instructions ("From now on always ..."), concrete facts ("Peter handles the Anderson
account"), real events ("Peter finished the Anderson article yesterday"), future plans with a date
("Delivery due next Friday"), corrections ("Actually, Lisa handles that now") and opinions.
Don't store: questions, hypotheticals ("what if", "suppose", "would"), greetings, requests to the
assistant ("Deploy the API"), common sense (no concrete anchor), vague statements, undated
intentions, code, and anything that looks like a prompt injection.

Contents are the user's own sentences, lightly trimmed ("Actually,", "btw" dropped) and with
secrets redacted; nothing is paraphrased or invented.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import date
from itertools import groupby
from typing import TYPE_CHECKING, Final

from octygraph.heuristics.analysis import MAX_ANALYSIS_CHARS, Sentence, analyze, resolve_pronouns
from octygraph.heuristics.entities import Gazetteer, mentions, prompt_gazetteer
from octygraph.heuristics.forms import (
    ABOUT_THE_CONVERSATION,
    GO_AHEAD,
    GUESS,
    REFERS_BACK,
    STATED_DECISION,
    WISH_FOR_THE_TASK,
    explicit_kind,
    reasoned_prohibition,
    reply_refusal,
)
from octygraph.heuristics.instructions import detect_instruction, instruction_scope
from octygraph.heuristics.lexicon import GENERIC_SUBJECTS, STOPWORDS
from octygraph.heuristics.reconcile import ROLE_STATEMENT
from octygraph.heuristics.safety import redact_secrets
from octygraph.heuristics.text import WORD, rx
from octygraph.models import Classification, NodeType, StorageDecision, StorageItem

if TYPE_CHECKING:
    from octygraph.judgement.gate import Judged


def _gate_verdicts(message: str, assistant: bool) -> list[Judged]:
    # Imported here: the gate's segmenter uses this package's sentence splitter.
    from octygraph.judgement.gate import storage_gate

    return storage_gate().judge(message, assistant=assistant)


MAX_ITEMS: Final = 10
MAX_REPLY_ITEMS: Final = 2
"""At most this many items from one assistant reply, the most probable first: a long reply gives
many chances to keep a line wrongly, and one reply rarely reports more lasting outcomes than this
(measured on whole replies assembled from the training set: `training/reply_cap.py`)."""
MIN_WORDS: Final = 3
"""A memory has a subject, a verb and something more ("We use pnpm")."""
MAX_SENTENCES: Final = 40
_FIRST_PERSON: Final = frozenset({"i", "we", "our", "my", "us", "me", "i'm", "we're"})
MAX_SENTENCE_CHARS: Final = MAX_ANALYSIS_CHARS
_RULE_PLACE: Final = (
    r"(?:(?:cursor\s+|team\s+|project\s+|new\s+)?(?:rule|guideline|convention|preference|principle)s?"
    r"|claude\.md|agents\.md|contributing(?:\.md)?|\.cursorrules)"
)
_LEAD: Final = r"^(?:(?:also|and|please|then|now|ok|okay|so|pls)[,\s]+)*"
_POINTER: Final = (
    r"(?:this|that|these|it)(?:\s+(?:preference|convention|rule|principle|one))?\s*(?:[.,;!]|$)"
)
RECORD_THIS: Final = rx(
    rf"""\b(?:record|document|capture|save|remember|write\s+down|add|put|keep)\w*\s+
        (?:this|that|these|it)\s+(?:as\s+(?:a|an|our)\s+|(?:in|to|into)\s+(?:the\s+|our\s+|a\s+)?)
        {_RULE_PLACE}(?:\s+(?:file|too|as\s+well))?\s*[.!]?\s*$
    | \b(?:recording|documenting|capturing|noting)\s+(?:this|that|these)\s+{_RULE_PLACE}\b
    | \b(?:add|create|make|write|put|save|update)\b[^.?!]{{0,60}}?\b{_RULE_PLACE}\b[^.?!]{{0,40}}?
        \b(?:recording|documenting|capturing|for|about)\s+{_POINTER}
    | {_LEAD}remember\s+(?:this|that)\s*[.!]?$"""
)
"""A request to write down what the user just said as a standing rule: "add a cursor rule recording
this preference", "put that in CLAUDE.md", "please remember that"."""
RULE_CONTENT: Final = rx(
    rf"""{_LEAD}(?:
        (?:add|create|write|make|put|start)\s+(?:a|an|another|the)?\s*(?:new\s+)?{_RULE_PLACE}
            \s+(?:entry\s+)?(?:that\s+(?:says|states|mentions)(?:\s+that)?|that|saying|stating|to\s+say)
        | make\s+sure\s+(?:the|that|this|our)\s+{_RULE_PLACE}\s+
            (?:says|states|mentions|explains|includes|notes)\s+that
    )\s+(?!(?:is|are|was|were|does|do|has|have|will|can|would|should|only|also|checks?|matches|
        catches|flags|runs|applies|enforces|allows|prevents)\b)(?P<content>\S.{{10,}})$"""
)
"""A request to record a rule whose content it states: "add a rule that X", "make sure the rule
mentions that X"."""


def recorded_rules(texts: Sequence[str]) -> tuple[dict[int, str], set[int]]:
    """Segments the user asks to keep as a standing rule (by index, with the rule's words), and the
    segments that only ask for it.

    Asking for a rule to be written down (a cursor rule, a CLAUDE.md line) is as explicit as "from
    now on": "add a rule that X" states the rule X; "... recording this preference" points back at
    the segment before it, and is itself only a task.
    """
    rules: dict[int, str] = {}
    requests: set[int] = set()
    for i, text in enumerate(texts):
        content = RULE_CONTENT.search(text.strip())
        if content is not None:
            rules[i] = text.strip()[content.start("content") :].rstrip(" .")
        elif i > 0 and RECORD_THIS.search(text.strip()) and i - 1 not in rules:
            rules[i - 1] = texts[i - 1].strip()
            requests.add(i)
    return rules, requests


CODE: Final = rx(
    r"""[{};]\s*$ | ^\s*(?:def|class|import|const|let|var|function|return|SELECT|INSERT)\s
    | ^\s*from\s+\S+\s+import\b | => | \)\s*\{ | ^\s*[$>]\s"""
)
_ROLE_WORDS: Final = rx(
    r"""\b(?:handles?|owns?|manages?|leads?|runs?|covers?|is\s+responsible\s+for|
    is\s+in\s+charge\s+of|takes?\s+care\s+of|looks?\s+after|works?\s+(?:on|for|at|with)|
    reports?\s+to|taking\s+over|took\s+over|is\s+(?:our|the|their|my)\s+\w+)\b"""
)
_CURRENT_ROLE: Final = rx(
    r"""\b(?:is|are|'s|'re)\s+(?:now\s+)?taking\s+over\b|\btakes\s+over\b|
    \bnow\s+(?:handles?|owns?|manages?|leads?|runs?|covers?|is\s+responsible|is\s+in\s+charge)\b|
    \b(?:handles?|owns?|manages?|leads?|runs?|covers?)\b[^.?!]*\bnow\s*[.!]?\s*$"""
)
"""A role stated in the present as a change ("is taking over", "now handles")."""
_EVENT_SUBTYPES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    (
        "incident",
        rx(
            r"""\b(?:fail(?:ed|ing)?|broke|broken|crash(?:ed)?|outage|went\s+down|down\s+for|bug|
            error|incident|leak(?:ed)?|hack(?:ed)?|lost|missed|rolled\s+back|regress(?:ed|ion))\b"""
        ),
    ),
    (
        "decision",
        rx(r"\b(?:decided|agreed|chose|approved|rejected|signed\s+off|settled\s+on|voted)\b"),
    ),
    (
        "conversation",
        rx(
            r"""\b(?:said|told|asked|called|met|talked|spoke|discussed|mentioned|emailed|
            messaged|replied|complained|chatted)\b"""
        ),
    ),
    (
        "outcome",
        rx(
            r"""\b(?:finished|completed|delivered|shipped|launched|released|won|closed|signed|
            published|merged|deployed|hit|reached|passed|submitted|done)\b"""
        ),
    ),
)
_FACT_SUBTYPES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("conditional", rx(r"^(?:if|when|whenever|unless)\b|\b(?:if|unless|only\s+when)\b")),
    (
        "causal",
        rx(r"\b(?:because|due\s+to|caus(?:e|es|ed)|leads?\s+to|results?\s+in|so\s+that)\b"),
    ),
    (
        "comparative",
        rx(
            r"\b(?:more|less|fewer|better|worse|faster|slower|cheaper|\w+er)\s+than\b|\bcompared\s+to\b"
        ),
    ),
    (
        "negation",
        rx(r"\b(?:not|no\s+longer|never|doesn't|don't|isn't|aren't|can't|cannot|won't|didn't)\b"),
    ),
)
_PLAN_REQUESTED: Final = rx(
    r"\b(?:asked|wants?|requested|needs?)\s+(?:me|us|you|them)\s+to\b|\b(?:request(?:ed)?)\b"
)
_PLAN_INTENDED: Final = rx(
    r"\b(?:plan(?:s|ning)?\s+to|intend(?:s|ing)?\s+to|going\s+to|gonna|want\s+to|hope\s+to|aim\s+to)\b"
)
_REPLACE_MARKERS: Final = frozenset(
    """actually instead now anymore longer taking take takes took taken over replaces replace
    replaced replacing switch switched switching changed change moved move correction new
    used""".split()
)


def _subtype(table: tuple[tuple[str, re.Pattern[str]], ...], text: str, default: str) -> str:
    return next((name for name, pattern in table if pattern.search(text)), default)


def sentence_type(s: Sentence, today: date) -> tuple[NodeType | None, str]:
    """The node type a sentence would be stored as, or None with the reason it is not stored."""
    if s.injection:
        return None, "looks like a prompt injection"
    if s.greeting:
        return None, "a greeting or acknowledgement"
    if s.text.startswith("/") and s.text[1:2].isalpha():
        return None, "a slash command"
    if CODE.search(s.text[:MAX_SENTENCE_CHARS]):
        return None, "code, not a statement"
    if len(s.text) > MAX_SENTENCE_CHARS:
        return None, "too long to be one memory"
    if s.question:
        return None, "a question (asking, not telling)"
    if s.hypothetical:
        return None, "hypothetical or speculative"
    if detect_instruction(s, today) is not None:
        return "instruction", "an instruction"
    if s.future and s.date is not None and s.date.value >= today:
        return "plan", "a dated plan"
    if s.request or s.imperative:
        return None, "a request to the assistant, not a statement"
    if s.vague:
        return None, "too vague to remember"
    if s.opinion:
        return "opinion", "an opinion"
    if s.past and s.correction and _CURRENT_ROLE.search(s.low) and s.anchored:
        # "Elena moved teams, so Ravi is taking over the account": the news is who does it now.
        return "fact", "a correction of who does what now"
    if s.past and (s.date is None or s.date.value <= today):
        return ("event", "a real event") if s.anchored else (None, "too vague to remember")
    if s.future and not _ROLE_WORDS.search(s.low):
        return None, "an intention without a date"
    if not s.anchored or _common_sense(s):
        return None, "general knowledge, not about the user's world"
    return "fact", "a concrete fact"


def _common_sense(s: Sentence) -> bool:
    """ "The sky is blue": a generic subject, and nothing of the user's (no name, number, "our")."""
    if s.entities or any(ch.isdigit() for ch in s.body) or _FIRST_PERSON & set(s.words):
        return False
    return bool(s.content) and s.content[0] in GENERIC_SUBJECTS


def _item_subtype(kind: NodeType, s: Sentence) -> str | None:
    if kind == "event":
        return _subtype(_EVENT_SUBTYPES, s.low, "action")
    if kind == "fact":
        return _subtype(_FACT_SUBTYPES, s.low, "definitional")
    if kind == "plan":
        if _PLAN_REQUESTED.search(s.low):
            return "requested"
        return "intended" if _PLAN_INTENDED.search(s.low) else "scheduled"
    return None


def replaced_words(s: Sentence) -> str | None:
    """Words identifying the memory a correction replaces, for a `search_facts` query.

    Keeps the topic and the old value, drops the new value: "Lisa handles Anderson now" ->
    "handles Anderson"; "Use pnpm instead of npm for installs" -> "Use npm installs"; "Peter no
    longer handles Anderson" -> "Peter handles Anderson".
    """
    body = s.body
    tokens = list(WORD.finditer(body))
    drop: set[int] = set()
    lows = [t.group().lower() for t in tokens]
    for i, low in enumerate(lows):
        if low == "instead" and i + 1 < len(lows) and lows[i + 1] == "of" and i > 0:
            drop.add(i - 1)  # the new value stands right before "instead of"
        if low == "to" and i > 0 and lows[i - 1] in ("switch", "switched", "changed", "moved"):
            drop.update(range(i + 1, min(i + 3, len(lows))))
    role = ROLE_STATEMENT.match(body.rstrip(".!"))
    takeover = re.match(r"(?i)^(.+?)\s+(?:is\s+|will\s+)?(?:taking|takes|took|take)\s+over\b", body)
    subject = takeover.group(1) if takeover else role.group("who") if role else None
    if subject is not None:
        subject = re.split(r"[,;]\s*|\band\s+", subject)[-1]  # "Tom left, Maria is taking over"
        start = body.find(subject)
        drop_span = (start, start + len(subject)) if start >= 0 else (0, 0)
    else:
        drop_span = (0, 0)
    if subject is not None and "no longer" not in s.low:
        lo, hi = drop_span
        drop.update(i for i, t in enumerate(tokens) if t.start() >= lo and t.end() <= hi)
    if s.date is not None:
        drop.update(
            i for i, t in enumerate(tokens) if t.start() >= s.date.start and t.end() <= s.date.end
        )
    kept: list[str] = []
    for i, token in enumerate(tokens):
        low = lows[i]
        if (
            i in drop
            or low in _REPLACE_MARKERS
            or low in STOPWORDS
            or any(c.isdigit() for c in low)
        ):
            continue
        if token.group() not in kept:
            kept.append(token.group())
    return " ".join(kept) or None


def filter_storage(
    prompt: str,
    classification: Classification | None = None,
    today: date | None = None,
    *,
    known_entities: Gazetteer | Iterable[str] | None = None,
    judged: Sequence[Judged] | None = None,
    assistant: bool = False,
    project: str | None = None,
    learned: bool = True,
) -> StorageDecision:
    """Decide what in a message is worth storing: only its durable segments, in the speaker's words.

    The learned storage gate (`octygraph.judgement`) judges each segment (sentence or clause);
    precise patterns only refuse (injections, slash commands, code) or keep an explicit standing rule
    ("from now on ...", "going forward ..."). A kept clause is stored with the rest of its sentence
    when no clause of it is a task (`_whole_statements`). A kept segment's kind picks the node type:
    rules and preferences become instructions, facts and decisions facts, plans plans (dated when they
    say when).

    Args:
        prompt: The user's message (or, with `assistant=True`, the assistant's report for the Stop hook).
        classification: Layer 1 result; contributes entity names and kinds.
        today: Reference day for dates (defaults to the local date).
        known_entities: Known entity names (the database gazetteer).
        judged: The gate's verdicts when the caller already has them (default: judge now).
        assistant: The text is the assistant's reply: only lasting outcomes count.
        project: The project id, to resolve "this repo" in stored text.
        learned: Ask the learned verdict when the forms keep nothing (off only to measure the forms).

    Returns:
        The decision: `store` is true when at least one item was found.
    """
    today = today or date.today()
    if judged is None:
        judged = _gate_verdicts(prompt, assistant)
    gazetteer = prompt_gazetteer(
        known_entities, classification.entities if classification is not None else ()
    )
    candidates: list[tuple[float, StorageItem]] = []
    kept: set[int] = set()  # the segments that made an item
    skipped: list[str] = []
    sentences = [analyze(verdict.text, today, gazetteer) for verdict in judged]
    gate_verdicts = judged
    if not assistant:
        judged, sentences = _whole_statements(judged, sentences, today, gazetteer)
    # "Our CTO is Mina Okafor. She approves ..." : the second sentence is about Mina Okafor too.
    names = resolve_pronouns(sentences)
    recorded, requests = recorded_rules([v.text for v in judged]) if not assistant else ({}, set())
    for i, (verdict, sentence, entity_names) in enumerate(
        zip(judged, sentences, names, strict=True)
    ):
        if i in requests:
            skipped.append("asks to record a rule")
            continue
        if i in recorded and recorded[i] != verdict.text.strip():
            sentence = analyze(recorded[i], today, gazetteer)
        refused = refusal(sentence) or (reply_refusal(sentence) if assistant else None)
        if not refused and i > 0 and _dangles(sentence, sentences[i - 1], entity_names):
            refused = "refers back to a request, which is not stored"
        # What the user states outright is kept whatever the gate says (`forms`); replies are not.
        explicit: str | None = None
        reasoned: str | None = None
        if not assistant:
            explicit = "rule" if i in recorded else explicit_kind(sentence.body, verdict.kind)
            if i > 0 and not refused and i - 1 not in kept:
                reasoned = reasoned_prohibition(prompt, judged[i - 1].text, verdict.text)
        if reasoned is not None and (verdict.keep or explicit):
            sentence, explicit = analyze(reasoned, today, gazetteer), "rule"
        if refused or not (verdict.keep or explicit):
            skipped.append(refused or f"not durable (p={verdict.durable:.2f})")
            continue
        if len(candidates) >= MAX_ITEMS:
            skipped.append("item limit reached")
            break
        # An explicit standing rule is a rule, whatever kind the gate's model guessed for it.
        forced = explicit == "rule" or i in recorded or reasoned is not None
        kind = explicit if explicit and (forced or not verdict.keep) else verdict.kind
        item = _item(sentence, entity_names, kind, classification, today, assistant, project)
        candidates.append((verdict.durable, item))
        kept.add(i)
    unsure: list[StorageItem] = []
    unsure_p: float | None = None
    if learned and not candidates and not assistant:
        kept_by_verdict = _verdict_items(
            prompt, gate_verdicts, classification, today, gazetteer, project
        )
        if kept_by_verdict is not None:
            probability, item, active = kept_by_verdict
            if active:
                candidates = [(probability, item)]
            else:  # unsure is not no: kept as a candidate
                unsure, unsure_p = [item], probability
    cap = MAX_REPLY_ITEMS if assistant else MAX_ITEMS
    items = _most_probable(_dedup(candidates), cap)
    if items:
        kinds = ", ".join(dict.fromkeys(item.type for item in items))
        reason = f"Telling something durable ({kinds})."
    elif skipped:
        reason = "Nothing to store: " + "; ".join(dict.fromkeys(skipped)) + "."
    else:
        reason = "Nothing to store: empty message."
    if unsure:
        reason += f" Perhaps durable (p={unsure_p:.2f}): kept as a candidate for review."
    return StorageDecision(
        store=bool(items), reason=reason, items=items, candidates=unsure, candidate_p=unsure_p
    )


def _verdict_items(
    message: str,
    judged: Sequence[Judged],
    classification: Classification | None,
    today: date,
    gazetteer: Gazetteer,
    project: str | None,
) -> tuple[float, StorageItem, bool] | None:
    """What the learned storage verdict (`judgement.verdict`) keeps of a message the forms kept
    nothing of: the prose whole when short, else its likeliest segment, never a segment a form
    refuses. (probability, item, sure enough to be active), or None below the candidate bar."""
    from octygraph.judgement.vectors import cached_local_embed
    from octygraph.judgement.verdict import (
        SegmentView,
        message_vector,
        storage_verdict,
        verdict_features,
    )

    prose = [v for v in judged if not v.machine]
    if not prose:
        return None
    texts = [v.text for v in prose]
    vectors = cached_local_embed(texts)  # the gate's own, from the cache
    # Read without the gazetteer, as the verdict was fitted.
    sentences = [analyze(text, today) for text in texts]
    views = [
        SegmentView(s, v.durable, bool(v.sentence)) for s, v in zip(sentences, prose, strict=True)
    ]
    rows = verdict_features(views, vectors, len(judged) - len(prose), len(message))
    refused = verdict_refusals(sentences)
    kept = storage_verdict().keep(rows, message_vector(vectors), texts, refused)
    if kept is None:
        return None
    chosen = [prose[i] for i in kept.segments]
    text = " ".join(v.text for v in chosen)
    sentence = analyze(text, today, gazetteer)
    names = [e.name for e in sentence.entities]
    kind = max(chosen, key=lambda v: v.durable).kind
    item = _item(sentence, names, kind, classification, today, False, project)
    return kept.probability, item, kept.active


def verdict_refusals(sentences: Sequence[Sentence]) -> list[bool]:
    """Per segment, whether a form refuses it (a question, a go-ahead, an "it" only a request
    names, ...). The forms' refusals hold for the verdict too: leave-project-out that kept more
    memories and less junk than letting the verdict override them. So does the specification's
    "no hypotheticals" ("Maybe we could use Kafka"): the forms' gate never keeps them either, and
    of the shared real prompts 1 of 138 that state something lasting is hypothetical throughout."""
    resolved = resolve_pronouns(list(sentences))
    return [
        refusal(s) is not None
        or s.hypothetical
        or (i > 0 and _dangles(s, sentences[i - 1], resolved[i]))
        for i, s in enumerate(sentences)
    ]


def _whole_statements(
    judged: Sequence[Judged], sentences: list[Sentence], today: date, gazetteer: Gazetteer
) -> tuple[list[Judged], list[Sentence]]:
    """Clauses of one sentence, judged one by one, joined again when none of them is a task.

    The segmenter cuts "Add retries to the uploader; we use tenacity here" to part the task from the
    fact. When one clause is kept and the others are statements too ("flutter was rejected, we stay
    native on both platforms"), the memory is the whole sentence: the clause alone loses what was
    said in the same breath, most often the reason or the other half of the fact. On the training
    sets, every sentence this joins is labelled durable, at any gate score of the other clauses.
    """

    def kept_kind(k: int) -> str | None:
        verdict = judged[k]
        return verdict.kind if verdict.keep else explicit_kind(sentences[k].body, verdict.kind)

    def joins(k: int, kinds: dict[int, str]) -> bool:
        # A kept clause may be a rule in the imperative; any other clause must be a statement.
        s = sentences[k]
        task = s.imperative or s.request or s.question
        return refusal(s) is None and (k in kinds or not task)

    out_judged: list[Judged] = []
    out_sentences: list[Sentence] = []
    for whole, run in groupby(range(len(judged)), key=lambda k: judged[k].sentence or k):
        group = list(run)
        kinds = {k: kind for k in group if (kind := kept_kind(k)) is not None}
        if isinstance(whole, str) and kinds and all(joins(k, kinds) for k in group):
            best = max(kinds, key=lambda k: judged[k].durable)
            durable = max(judged[k].durable for k in group)
            out_judged.append(
                replace(judged[best], text=whole, durable=durable, kind=kinds[best], keep=True)
            )
            out_sentences.append(analyze(whole, today, gazetteer))
        else:
            out_judged += [judged[k] for k in group]
            out_sentences += [sentences[k] for k in group]
    return out_judged, out_sentences


def has_durable(message: str, *, assistant: bool = False) -> bool:
    """Whether `filter_storage` would store anything of `message`: a segment that passes the gate or
    states a rule outright, and that no refusal (an injection, a slash command, code) takes back.

    L1 sets its store operation from this, so a message it refuses costs no storage calls, with or
    without a model. The gate's verdicts are cached, so storing later does not judge twice."""
    return filter_storage(message, assistant=assistant).store


def _dangles(s: Sentence, before: Sentence, entity_names: list[str]) -> bool:
    """Whether `s` is about an "it" or "they" that only the request before it names ("write a
    README explaining that tally is a budgeting tool ... It syncs with the bank nightly"): the
    request is not stored, so the memory would not say what it is about. A pronoun the message
    resolves to a person ("They" after "Mina is our lead.") does not dangle."""
    return (
        REFERS_BACK.search(s.body) is not None
        and (before.imperative or before.request or before.question)
        and entity_names == [e.name for e in s.entities]
    )


def safety_refusal(s: Sentence) -> str | None:
    """Why a segment may never be stored, for safety, whatever the verdict says, or None: an
    injection attempt, a slash command, code. (Secrets are redacted, not refused.)"""
    if s.injection:
        return "looks like a prompt injection"
    if s.text.startswith("/") and s.text[1:2].isalpha():
        return "a slash command"
    if CODE.search(s.text[:MAX_SENTENCE_CHARS]):
        return "code, not a statement"
    return None


def refusal(s: Sentence) -> str | None:
    """Why a segment may never be stored whatever the gate says, or None."""
    if (safety := safety_refusal(s)) is not None:
        return safety
    if s.question:
        return "a question (asking, not telling)"
    if GO_AHEAD.search(s.body) and not s.strong_rule:
        return "a go-ahead for the task at hand"
    if GUESS.search(s.body):
        return "a guess, not something known"
    if WISH_FOR_THE_TASK.search(s.body) and s.date is None:  # a dated plan is the gate's
        return "what the user wants of the work at hand, not a standing preference"
    if ABOUT_THE_CONVERSATION.search(s.body) and not STATED_DECISION.search(s.body):
        return "about what was said earlier in the conversation"
    if len(s.words) < MIN_WORDS:
        return "too short to stand alone"
    return None


def _item(
    s: Sentence,
    entity_names: list[str],
    kind: str,
    classification: Classification | None,
    today: date,
    assistant: bool,
    project: str | None,
) -> StorageItem:
    # Imported here: `standalone` imports from this package, so a module-level import would be a
    # cycle for whoever imports `standalone` first.
    from octygraph.judgement.standalone import project_statement, standalone

    # A kept request that sets the project up states what the project is, whatever kind it sounded.
    statement = None if assistant else project_statement(s.text)
    if statement is not None:
        kind = "fact"
    told = statement or s.text
    content, _ = redact_secrets(
        standalone(told, speaker="assistant" if assistant else "user", project=project)
    )
    concepts = {e.name for e in s.entities if e.kind == "concept"}
    entities = [name for name in entity_names if name not in concepts]
    if classification is not None:
        known = {n.casefold() for n in entities}
        for mention in classification.entities:
            if mention.name.casefold() not in known and mentions(s.body, mention.name):
                entities.append(mention.name)
                known.add(mention.name.casefold())
    instruction = detect_instruction(s, today)
    node_type: NodeType = {"rule": "instruction", "preference": "instruction", "plan": "plan"}.get(
        kind, "fact"
    )  # type: ignore[assignment]
    # A decision that governs how work is done is an instruction ("we use pnpm for installs"), and
    # so is an undated one told in the past tense that replaces an earlier one ("we switched from X
    # to Y"); a dated past change ("took over ... yesterday") is an event of that day.
    lasting = not s.past or (s.correction and s.date is None)
    if kind == "decision" and instruction is not None and lasting:
        node_type = "instruction"
    # A kept sentence in the imperative ("for Harbor, invoice quarterly") tells how to work, not a fact.
    if kind == "fact" and instruction is not None and s.imperative and not s.past:
        node_type = "instruction"
    # An undated "now X instead of Y" replaces a standing rule; it is not a plan, whatever its tense.
    if kind == "plan" and instruction is not None and s.correction and s.date is None:
        node_type = "instruction"
    # A plan lies ahead; told in the past tense ("finished last night"), it is something that happened.
    if node_type == "plan" and s.past and not s.correction:
        node_type = "event"
    scope: float | None = None
    subtype: str | None
    if node_type == "instruction":
        subtype = instruction.subtype if instruction is not None else "rule"
        scope = instruction.scope if instruction is not None else instruction_scope(s)
    elif node_type in ("plan", "event"):
        subtype = _item_subtype(node_type, s)
    elif not lasting and (
        kind == "decision" or s.correction or _EVENT_SUBTYPES[1][1].search(s.low)
    ):
        node_type, subtype = "event", "decision"
    else:
        subtype = _item_subtype("fact", s)
    valid_from = (
        s.date.value.isoformat() if s.date is not None and node_type in ("plan", "event") else None
    )
    return StorageItem(
        type=node_type,
        subtype=subtype,
        content=content,
        entities=entities,
        valid_from=valid_from,
        scope=scope,
        correction=s.correction,
        replaces=replaced_words(s) if s.correction else None,
    )


def _most_probable(candidates: list[tuple[float, StorageItem]], cap: int) -> list[StorageItem]:
    """The `cap` items the gate is surest of, in the order they were said."""
    chosen = sorted(range(len(candidates)), key=lambda i: -candidates[i][0])[:cap]
    return [candidates[i][1] for i in sorted(chosen)]


def _dedup(candidates: list[tuple[float, StorageItem]]) -> list[tuple[float, StorageItem]]:
    seen: set[str] = set()
    out: list[tuple[float, StorageItem]] = []
    for p, item in candidates:
        key = " ".join(item.content.lower().split()).rstrip(".!")
        if key not in seen:
            seen.add(key)
            out.append((p, item))
    return out
