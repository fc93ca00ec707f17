"""The storage decision: is the user telling something worth remembering, or asking?

Store: instructions ("From now on always ..."), concrete facts ("Peter handles the Anderson
account"), real events ("Peter finished the Anderson article yesterday"), future plans with a date
("Delivery due next Friday"), corrections ("Actually, Lisa handles that now") and opinions.
Don't store: questions, hypotheticals ("what if", "suppose", "would"), greetings, requests to the
assistant ("Deploy the API"), common sense (no concrete anchor), vague statements, undated
intentions, code, and anything that looks like a prompt injection.

Contents are the user's own sentences, lightly trimmed ("Actually,", "btw" dropped) and with
secrets redacted; nothing is paraphrased or invented.

It sits above the learned models and the patterns it weighs: the gate (`gate`) judges each segment,
the patterns of `patterns` refuse or keep outright, the verdict (`verdict`) speaks for a
message the patterns keep nothing of, and `standalone` words each memory to read right later.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import date
from itertools import groupby
from typing import Final

from octygraph.embeddings.local import cached_local_embed
from octygraph.judgement.analysis import ROLE_STATEMENT, Sentence, analyze, resolve_pronouns
from octygraph.judgement.entities import Gazetteer, mentions, prompt_gazetteer
from octygraph.judgement.forms import explicit_kind, reasoned_prohibition, reply_refusal
from octygraph.judgement.gate import Judged, as_read, storage_gate
from octygraph.judgement.instructions import detect_instruction, instruction_scope
from octygraph.judgement.patterns import dangles, recorded_rules, refusal, verdict_refusals
from octygraph.judgement.standalone import project_statement, standalone
from octygraph.judgement.verdict import (
    SegmentView,
    message_vector,
    storage_verdict,
    verdict_features,
)
from octygraph.models import Classification, NodeType, StorageDecision, StorageItem
from octygraph.safety.checks import redact_secrets
from octygraph.text.lexicon import STOPWORDS
from octygraph.text.words import WORD, rx

MAX_ITEMS: Final = 10
MAX_REPLY_ITEMS: Final = 2
"""At most this many items from one assistant reply, the most probable first: a long reply gives
many chances to keep a line wrongly, and one reply rarely reports more lasting outcomes than this
(measured on whole replies assembled from the training set: `training/reply_cap.py`)."""
OPENING_HELD_SHARE: Final = 0.8
"""A message's opening is kept as a candidate beside what the forms kept of it, unless their items
already hold this share of its length: a later message on the same matter is found by how much it
resembles this one (`pipeline.nodes.assemble.CANDIDATE_COSINE`)."""
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
        learned: Ask the learned verdict (off only to measure the forms): what it keeps when the
            forms keep nothing, and, when they keep a part of a message that may last, the
            message's opening as a candidate beside it.

    Returns:
        The decision: `store` is true when at least one item was found.
    """
    today = today or date.today()
    if judged is None:
        judged = storage_gate().judge(prompt, assistant=assistant)
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
        if not refused and i > 0 and dangles(sentence, sentences[i - 1], entity_names):
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
    elif learned and not assistant:
        # What the forms kept is a part; the message itself, when it may last, is a candidate too.
        opening = _verdict_items(
            prompt, gate_verdicts, classification, today, gazetteer, project, opening=True
        )
        held = sum(len(item.content) for _, item in candidates)
        if opening is not None and held < OPENING_HELD_SHARE * len(opening[1].content):
            unsure, unsure_p = [opening[1]], opening[0]
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
    *,
    opening: bool = False,
) -> tuple[float, StorageItem, bool] | None:
    """What the learned storage verdict (`judgement.verdict`) keeps of a message the forms kept
    nothing of: the prose whole when short, else its likeliest segment (a candidate: the opening
    with it), never a segment a form refuses. (probability, item, sure enough to be active), or None
    below the candidate bar. With `opening`, the candidate's part however sure the verdict is."""
    prose = [v for v in judged if not v.machine]
    if not prose:
        return None
    texts = [v.text for v in prose]
    vectors = cached_local_embed([as_read(t) for t in texts])  # the gate's own, from the cache
    # Read without the gazetteer, as the verdict was fitted.
    sentences = [analyze(as_read(text), today) for text in texts]
    views = [
        SegmentView(s, v.durable, bool(v.sentence)) for s, v in zip(sentences, prose, strict=True)
    ]
    rows = verdict_features(views, vectors, len(judged) - len(prose), len(message))
    refused = verdict_refusals(sentences)
    kept = storage_verdict().keep(rows, message_vector(vectors), texts, refused, opening=opening)
    if kept is None:
        return None
    chosen = [prose[i] for i in kept.segments]
    text = " ".join(v.text for v in chosen)
    sentence = analyze(text, today, gazetteer)
    names = [e.name for e in sentence.entities]
    kind = max(chosen, key=lambda v: v.durable).kind
    item = _item(sentence, names, kind, classification, today, False, project)
    return kept.probability, item, kept.active


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

    Without a model, L1's store operation is this (set in the store half: `judge_storage`), so a message
    it refuses costs no storage calls. The gate's verdicts are cached, so filtering does not judge twice."""
    return filter_storage(message, assistant=assistant).store


def _item(
    s: Sentence,
    entity_names: list[str],
    kind: str,
    classification: Classification | None,
    today: date,
    assistant: bool,
    project: str | None,
) -> StorageItem:
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
