"""Long mixed histories: evidence retrieval when short user messages sit among long assistant replies.

A second data shape for the search benchmarks, generated here (seeded, nothing downloaded). Each
conversation is a user talking to a coding and general assistant over 22-30 dated sessions. Every message is
one memory, stored like a LoCoMo turn: "(session date) user: text" or "(session date) assistant: text".
User messages are short (5-40 words), and some of them state personal or project facts; assistant replies
are long (150-700 words), on the session's topic, and they repeat the conversation's vocabulary: the
projects, the topic's terms, and what the user just said. Questions ask for the facts, and their evidence is
one or two short user messages:

* 1 single-hop: "What is my dog's name?";
* 2 temporal: "When did we finish migrating Falcon to ClickHouse?";
* 3 updated: "Which database does Falcon use now?" (the earlier, replaced fact is also stored);
* 4 two-message: "Which happened first: ... or ...?" and facts of two projects at once.

The same seed gives the same set. Scoring is bench/locomo.py's: one database per conversation, each question
ranked by `MemoryStore.search`, recall@k of the evidence messages.

Usage: python bench/longmix.py [--seed 7] [--conversations 9] [--limit-conversations N] [--sessions N]
       [--limit-questions N] [--cache DIR] [--limit 20] [--modes keyword,vector,hybrid] [--dump PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import _longmix_data as D
from _common import Timer
from locomo import CUTOFFS, MODES, Conversation, Question, Turn, evaluate, report

CATEGORIES = {1: "single-hop", 2: "temporal", 3: "updated", 4: "two-message"}
DEFAULT_SEED = 7
DEFAULT_CONVERSATIONS = 9
MAX_QUESTIONS = 100


@dataclass
class Fact:
    """Statements the user makes (with when: 0 early, 1 late, None any time) and the questions on them."""

    statements: list[tuple[str, int | None]]
    questions: list[tuple[str, int, list[int]]]  # (text, category, indices into statements)
    ack: str
    topic: str | None = None
    event: str | None = (
        None  # for "which happened first" questions: what the dated statement reports
    )
    event_statement: int = 0
    project: str | None = None
    context: str | None = None  # a sentence the assistant may repeat once the fact is known
    kind: str = ""  # the maker's name, set by generate_conversation
    near: list[str] = field(
        default_factory=list
    )  # asks on the same subject that do not state the fact


class Banks:
    """Draws values without repeats inside one conversation."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def pick(self, bank: Sequence[str], n: int = 1) -> list[str]:
        free = [v for v in bank if v not in self.used]
        if len(free) < n:
            free = list(bank)
        out = self.rng.sample(free, min(n, len(free)))
        self.used.update(out)
        return out

    def one(self, bank: Sequence[str]) -> str:
        return self.pick(bank)[0]

    def text(self, options: Sequence[str], **slots: object) -> str:
        return self.rng.choice(options).format(**slots)


FactMaker = Callable[[Banks, str], Fact]


def _pet(b: Banks, p: str) -> Fact:
    kind, name = b.one(D.PET_KINDS), b.one(D.PET_NAMES)
    s = b.text(
        [
            "My {k} {n} knocked my coffee over the keyboard again this morning.",
            "We adopted a {k} last week and named her {n}.",
            "Sorry for the slow replies, {n} our {k} needed a long walk.",
        ],
        k=kind,
        n=name,
    )
    q = b.text(
        ["What is my {k}'s name?", "What did I name my {k}?", "What is my {k} called?"], k=kind
    )
    return Fact(
        [(s, None)],
        [(q, 1, [0])],
        f"your {kind}",
        near=[
            f"Any tips for keeping a {kind} calm during fireworks?",
            f"How often should a {kind} go to the vet?",
        ],
    )


def _sister(b: Banks, p: str) -> Fact:
    name, city = b.one(D.PEOPLE), b.one(D.CITIES)
    s = f"My sister {name} is visiting from {city} next week, so I will be slower to reply."
    return Fact(
        [(s, None)],
        [("What is my sister's name?", 1, [0]), ("Which city does my sister live in?", 1, [0])],
        "your sister's visit",
        "travel planning",
        near=[
            "My brother keeps asking me for help with his laptop, any advice?",
            "What is a good gift for a sister who loves hiking?",
        ],
    )


def _hometown(b: Banks, p: str) -> Fact:
    city = b.one(D.CITIES)
    s = b.text(
        ["I grew up in {c}, so this winter feels mild to me.", "Fun fact, I grew up in {c}."],
        c=city,
    )
    return Fact(
        [(s, None)],
        [("Where did I grow up?", 1, [0])],
        "where you grew up",
        near=["Which city has the best food scene in Europe, in your opinion?"],
    )


def _job(b: Banks, p: str) -> Fact:
    role, company = b.one(D.ROLES), b.one(D.COMPANIES)
    s = f"Today was my first day as a {role} at {company}!"
    return Fact(
        [(s, 0)],
        [
            ("Which company do I work for?", 1, [0]),
            (f"When did I start my job at {company}?", 2, [0]),
        ],
        "the new job",
        event=f"starting at {company}",
        near=[
            "How do I prepare for a performance review at work?",
            "Any advice for the first month in a new job?",
        ],
    )


def _instrument(b: Banks, p: str) -> Fact:
    inst = b.one(D.INSTRUMENTS)
    s = f"I have started learning the {inst}, two lessons in so far."
    return Fact(
        [(s, None)],
        [
            ("Which instrument am I learning?", 1, [0]),
            (f"When did I start learning the {inst}?", 2, [0]),
        ],
        "the lessons",
        "music practice",
        event=f"starting {inst} lessons",
        near=["Is it too late to learn an instrument in your thirties?"],
    )


def _allergy(b: Banks, p: str) -> Fact:
    food = b.one(D.ALLERGENS)
    s = f"Quick note: I am allergic to {food}, so please leave it out of any recipes."
    return Fact(
        [(s, None)],
        [("What food am I allergic to?", 1, [0])],
        "your allergy",
        "cooking and meal prep",
        near=["How do restaurants usually handle food allergies?"],
    )


def _restaurant(b: Banks, p: str) -> Fact:
    cuisine, place = b.one(D.CUISINES), b.one(D.RESTAURANTS)
    s = f"Our favourite {cuisine} place is {place}, we go there most Fridays."
    return Fact(
        [(s, None)],
        [(f"What is my favourite {cuisine} restaurant?", 1, [0])],
        "your Friday dinners",
        "cooking and meal prep",
        near=[f"Can you suggest a good {cuisine} recipe for a weeknight?"],
    )


def _race(b: Banks, p: str) -> Fact:
    race = b.one(D.RACES)
    minutes = b.rng.randint(22, 240)
    time = f"{minutes // 60}:{minutes % 60:02d}" if minutes >= 60 else f"{minutes} minutes"
    s = f"Ran the {race} this morning in {time}, really happy with that!"
    return Fact(
        [(s, None)],
        [
            (f"When did I run the {race}?", 2, [0]),
            (f"What was my finishing time in the {race}?", 1, [0]),
        ],
        "the race",
        "running and fitness",
        event=f"running the {race}",
        near=[
            f"How should I taper before the {race}?",
            "What should I eat the night before a race?",
        ],
    )


def _trip(b: Banks, p: str) -> Fact:
    country, month = b.one(D.COUNTRIES), b.one(D.MONTHS)
    s = f"Just booked flights to {country} for {month}!"
    return Fact(
        [(s, None)],
        [
            (f"Which country am I travelling to in {month}?", 1, [0]),
            (f"When did I book my flights to {country}?", 2, [0]),
        ],
        "the trip",
        "travel planning",
        event=f"booking the flights to {country}",
        near=[
            f"What is the weather like in {country} in {month}?",
            "How early should I book flights for a long trip?",
        ],
    )


def _book(b: Banks, p: str) -> Fact:
    book = b.one(D.BOOKS)
    s = f"I am halfway through {book}, slow going but lovely."
    return Fact(
        [(s, None)],
        [("Which book am I reading at the moment?", 1, [0])],
        "the book",
        near=["Can you recommend a novel for a long flight?"],
    )


def _car(b: Banks, p: str) -> Fact:
    old, new = b.pick(D.CARS, 2)
    return Fact(
        [
            (f"I drive a {old}, it is old but reliable.", 0),
            (f"We finally sold the {old} and bought a {new}.", 1),
        ],
        [("What car do I drive now?", 3, [1])],
        "the car",
        near=[
            "Is it worth buying an electric car this year?",
            "How often should a car be serviced?",
        ],
    )


def _hobby(b: Banks, p: str) -> Fact:
    hobby, day = b.one(D.HOBBIES), b.one(D.WEEKDAYS)
    s = f"I have {hobby} every {day} evening, so no calls then please."
    return Fact(
        [(s, None)],
        [(f"Which evening do I have {hobby}?", 1, [0])],
        "your evenings",
        near=[f"What should I bring to my first {hobby}?"],
    )


def _bike(b: Banks, p: str) -> Fact:
    bike = b.one(D.BIKES)
    s = f"Picked up a {bike} road bike yesterday, first ride on Sunday."
    return Fact(
        [(s, None)],
        [("Which road bike did I buy?", 1, [0])],
        "the new bike",
        near=["How should a road bike fit, roughly?"],
    )


def _home(b: Banks, p: str) -> Fact:
    old, new = b.pick(D.CITIES, 2)
    return Fact(
        [
            (f"I live in {old} these days, close to the old harbour.", 0),
            (f"We moved to {new} last weekend, there are boxes everywhere.", 1),
        ],
        [("Which city do I live in now?", 3, [1]), ("When did I move to my current city?", 2, [1])],
        "the move",
        event=f"moving to {new}",
        event_statement=1,
        near=["What should I check before signing a lease in a new city?"],
    )


def _editor(b: Banks, p: str) -> Fact:
    old, new = b.pick(D.EDITORS, 2)
    return Fact(
        [
            (f"I write most of my code in {old}.", 0),
            (f"I switched from {old} to {new} this month, still learning the shortcuts.", 1),
        ],
        [("Which editor do I use now?", 3, [1])],
        "your editor",
        "refactoring",
        near=["Which editor plugins are worth installing for Python?"],
    )


def _laptop(b: Banks, p: str) -> Fact:
    old, new = b.pick(D.LAPTOPS, 2)
    return Fact(
        [
            (f"My work laptop is a {old}.", 0),
            (f"IT finally replaced my {old} with a {new}.", 1),
        ],
        [("What work laptop do I have now?", 3, [1])],
        "the laptop",
        "home office",
        near=["Is 16 GB of memory enough for a work laptop?"],
    )


def _manager(b: Banks, p: str) -> Fact:
    name = b.one(D.PEOPLE)
    s = f"My manager {name} wants {p} stable before the holidays."
    return Fact(
        [(s, None)],
        [("Who is my manager?", 1, [0])],
        f"the plans for {p}",
        project=p,
        near=["How do I ask my manager for more focus time?"],
    )


def _talk(b: Banks, p: str) -> Fact:
    s = f"Gave my first conference talk today, it was about {p}!"
    return Fact(
        [(s, None)],
        [("When did I give my first conference talk?", 2, [0])],
        "the talk",
        event="giving my first conference talk",
        project=p,
        near=["How do I get over nerves before giving a talk?"],
    )


# ---------------------------------------------------------------- facts about one project


def _language(b: Banks, p: str) -> Fact:
    lang = b.one(D.LANGUAGES)
    s = b.text(["{p} is written in {l}, mostly.", "Most of {p} is {l} code."], p=p, l=lang)
    return Fact(
        [(s, None)],
        [(f"Which programming language is {p} written in?", 1, [0])],
        f"the {p} codebase",
        "refactoring",
        project=p,
        context=f"Since {p} is written in {lang}, stick to the tools that ecosystem knows well.",
        near=[f"Should we rewrite parts of {p} in a faster language?"],
    )


def _database(b: Banks, p: str) -> Fact:
    old, new = b.pick(D.DATABASES, 2)
    return Fact(
        [
            (f"{p} keeps all its data in {old}.", 0),
            (f"We finished migrating {p} from {old} to {new} today.", 1),
        ],
        [
            (f"Which database does {p} use now?", 3, [1]),
            (f"When did we finish migrating {p} to {new}?", 2, [1]),
        ],
        f"the {p} database",
        "database performance",
        event=f"migrating {p} to {new}",
        event_statement=1,
        project=p,
        context=f"With the {p} data in a relational database, indexes are the first lever.",
        near=[
            f"Should {p} keep using an ORM for the database layer?",
            f"How do I back up the {p} database?",
        ],
    )


def _ci(b: Banks, p: str) -> Fact:
    old, new = b.pick(D.CI_SYSTEMS, 2)
    return Fact(
        [
            (f"We run CI for {p} on {old}.", 0),
            (f"{p} builds moved off {old}, we are on {new} now.", 1),
        ],
        [(f"Which CI system does {p} use now?", 3, [1])],
        f"the {p} builds",
        "ci pipelines",
        project=p,
        near=[f"Why does the CI for {p} fail only on the main branch?"],
    )


def _cloud(b: Banks, p: str) -> Fact:
    cloud = b.one(D.CLOUDS)
    s = f"{p} is hosted on {cloud}, in a single region for now."
    return Fact(
        [(s, None)],
        [(f"Where is {p} hosted?", 1, [0])],
        f"the {p} hosting",
        "deployment and containers",
        project=p,
        context=f"Because {p} runs in a single region, plan the deploys around quiet hours.",
        near=[f"Would {p} be cheaper on another cloud provider?"],
    )


def _reviewer(b: Banks, p: str) -> Fact:
    name = b.one(D.PEOPLE)
    s = f"{name} reviews all my pull requests on {p}."
    return Fact(
        [(s, None)],
        [(f"Who reviews my pull requests on {p}?", 1, [0])],
        f"the {p} reviews",
        "code review",
        project=p,
        near=[f"Who should review pull requests on {p} when the team is busy?"],
    )


def _golive(b: Banks, p: str) -> Fact:
    s = f"{p} went live in production today!"
    return Fact(
        [(s, None)],
        [(f"When did {p} go live in production?", 2, [0])],
        f"the {p} launch",
        "deployment and containers",
        event=f"{p} going live",
        project=p,
        near=[f"What should we check before {p} goes live in production?"],
    )


def _tests(b: Banks, p: str) -> Fact:
    fw = b.one(D.TEST_FRAMEWORKS)
    s = f"The tests for {p} are written with {fw}."
    return Fact(
        [(s, None)],
        [(f"Which test framework does {p} use?", 1, [0])],
        f"the {p} tests",
        "testing strategy",
        project=p,
        near=[f"Which test framework would you pick for {p} if we started again?"],
    )


def _port(b: Banks, p: str) -> Fact:
    port = b.rng.choice([3000, 4000, 5173, 8000, 8080, 8443, 9000])
    s = f"The {p} API listens on port {port} on my machine."
    return Fact(
        [(s, None)],
        [(f"Which port does the {p} API listen on locally?", 1, [0])],
        f"the {p} API",
        "api design",
        project=p,
        near=[f"Which port should the {p} API use in production?"],
    )


def _leak(b: Banks, p: str) -> Fact:
    cause = b.one(D.BUG_CAUSES)
    s = f"Found the {p} memory leak today: it was {cause}."
    return Fact(
        [(s, None)],
        [
            (f"What caused the memory leak in {p}?", 1, [0]),
            (f"When did I find the memory leak in {p}?", 2, [0]),
        ],
        f"the {p} memory leak",
        "performance profiling",
        event=f"finding the {p} memory leak",
        project=p,
        near=[f"How do I look for a memory leak in {p}?"],
    )


def _queue(b: Banks, p: str) -> Fact:
    queue = b.one(D.QUEUES)
    s = f"{p} uses {queue} for its background jobs."
    return Fact(
        [(s, None)],
        [(f"What does {p} use for background jobs?", 1, [0])],
        f"the {p} workers",
        "async and concurrency",
        project=p,
        context=f"The {p} background jobs already go through a queue, so lean on its retries.",
        near=[f"Should {p} run background jobs in a queue or with cron?"],
    )


def _monitoring(b: Banks, p: str) -> Fact:
    old, new = b.pick(D.MONITORING, 2)
    return Fact(
        [
            (f"{p} alerts go to {old}.", 0),
            (f"We moved the {p} alerting from {old} to {new}.", 1),
        ],
        [(f"Where do the {p} alerts go now?", 3, [1])],
        f"the {p} alerts",
        "performance profiling",
        project=p,
        near=[f"Which alerts should {p} page someone for?"],
    )


def _frontend(b: Banks, p: str) -> Fact:
    fe = b.one(D.FRONTENDS)
    s = f"The {p} frontend is built with {fe}."
    return Fact(
        [(s, None)],
        [(f"Which frontend framework does {p} use?", 1, [0])],
        f"the {p} frontend",
        "frontend state",
        project=p,
        near=[f"Which frontend framework would be best for the {p} admin pages?"],
    )


def _team(b: Banks, p: str) -> Fact:
    n = b.rng.randint(3, 14)
    s = f"There are {n} engineers on the {p} team now."
    return Fact(
        [(s, None)],
        [(f"How many engineers work on the {p} team?", 1, [0])],
        f"the {p} team",
        "code review",
        project=p,
        near=[f"How many engineers should review a change on the {p} team?"],
    )


PERSONAL: list[FactMaker] = [
    _pet, _sister, _hometown, _job, _instrument, _allergy, _restaurant, _race, _trip, _book, _car,
    _hobby, _bike, _home, _editor, _laptop, _manager, _talk,
]  # fmt: skip
PER_PROJECT: list[FactMaker] = [
    _language, _database, _ci, _cloud, _reviewer, _golive, _tests, _port, _leak, _queue,
    _monitoring, _frontend, _team,
]  # fmt: skip


# ---------------------------------------------------------------- generation


@dataclass
class Message:
    role: str
    text: str
    fact: tuple[int, int] | None = None  # (fact index, statement index) when it states a fact


@dataclass
class Session:
    topic: str
    project: str
    when: datetime
    messages: list[Message] = field(default_factory=list)


def _words(text: str) -> int:
    return len(text.split())


def _fill(rng: random.Random, template: str, topic: dict, project: str, **extra: str) -> str:
    terms = topic["terms"]
    term, term2 = rng.sample(terms, 2)
    tool, tool2 = (
        rng.sample(topic["tools"], 2) if len(topic["tools"]) > 1 else [topic["tools"][0]] * 2
    )
    action = rng.choice(topic["actions"])
    slots = dict(term=term, term2=term2, tool=tool, tool2=tool2, action=action, project=project)
    slots.update(extra)
    return template.format(**slots)


def _reply(
    rng: random.Random,
    topic: dict,
    project: str,
    user_text: str,
    ack: str | None,
    context: list[str],
) -> str:
    """A long assistant reply on the session's topic (150-700 words), echoing the user's words."""
    target = rng.randint(140, 670)
    echo = " ".join(w.strip("?,.!:") for w in user_text.split()[-6:]).lower()
    opener = _fill(rng, rng.choice(D.OPENERS), topic, project, echo=echo)
    if ack:
        opener = rng.choice(D.ACKS).format(ack=ack) + " " + opener
    pool = D.SENTENCES + (D.PROJECT_SENTENCES if topic["kind"] == D.CODING else [])
    paragraphs: list[str] = [opener]
    count = _words(opener)
    while count < target:
        sentences: list[str] = []
        for _ in range(rng.randint(4, 7)):
            sentence = _fill(rng, rng.choice(pool), topic, project)
            if context and rng.random() < 0.05:
                sentence = rng.choice(context)
            sentences.append(sentence)
            count += _words(sentence)
            if count >= target:
                break
        paragraphs.append(" ".join(sentences))
    paragraphs.append(rng.choice(D.CLOSERS))
    return "\n\n".join(paragraphs)


def _ask(rng: random.Random, topic: dict, project: str, first: bool) -> str:
    template = rng.choice(topic["asks"] if first or rng.random() < 0.5 else D.FOLLOW_UPS)
    return _fill(rng, template, topic, project)


def _date_text(when: datetime) -> str:
    """LoCoMo's session date style: "2:15 pm on 3 March, 2024"."""
    hour = when.hour % 12 or 12
    half = "am" if when.hour < 12 else "pm"
    return f"{hour}:{when.minute:02d} {half} on {when.day} {when.strftime('%B')}, {when.year}"


def generate_conversation(seed: int, index: int, sessions_count: int | None = None) -> Conversation:
    """One conversation: sessions of asks and long replies, with the user's facts spread among them.

    `sessions_count` packs the same facts and questions into fewer sessions (for quick smoke tests).
    """
    rng = random.Random(f"longmix-{seed}-{index}")
    banks = Banks(rng)
    names = banks.pick(D.PROJECT_NAMES, 3)
    facts: list[Fact] = []
    for maker in PERSONAL:
        if rng.random() < 0.85:
            facts.append(maker(banks, rng.choice(names)))
            facts[-1].kind = maker.__name__
    for name in names:
        for maker in PER_PROJECT:
            if rng.random() < 0.8:
                facts.append(maker(banks, name))
                facts[-1].kind = maker.__name__
    rng.shuffle(facts)

    # Sessions: dated, each on one topic (and one project for coding topics).
    topic_names = list(D.TOPICS)
    coding = [t for t in topic_names if D.TOPICS[t]["kind"] == D.CODING]
    general = [t for t in topic_names if D.TOPICS[t]["kind"] == D.GENERAL]
    when = datetime(2023, 1, 9) + timedelta(days=rng.randint(0, 300))
    sessions: list[Session] = []
    count = rng.randint(22, 30)
    for _ in range(sessions_count or count):
        when += timedelta(days=rng.randint(2, 12))
        stamp = when.replace(hour=rng.randint(7, 22), minute=rng.choice(range(0, 60, 5)))
        topic = rng.choice(coding if rng.random() < 0.6 else general)
        sessions.append(Session(topic, rng.choice(names), stamp))

    # Where each fact statement goes: early ones in the first 40% of sessions, late ones in the last half,
    # preferably in a session on the fact's topic.
    n = len(sessions)
    slots: dict[int, list[tuple[int, int]]] = {i: [] for i in range(n)}
    for f_idx, fact in enumerate(facts):
        for s_idx, (_, phase) in enumerate(fact.statements):
            span = {0: range(max(1, int(n * 0.4))), 1: range(n // 2, n)}.get(phase, range(n))
            same = [i for i in span if sessions[i].topic == fact.topic]
            target = rng.choice(same) if same and rng.random() < 0.6 else rng.choice(list(span))
            slots[target].append((f_idx, s_idx))
        # Asks on the same subject that do not state the fact (negative indices), anywhere.
        for n_idx in range(len(fact.near)):
            slots[rng.randrange(n)].append((f_idx, -1 - n_idx))

    stated: dict[int, list[str]] = {}  # project -> context sentences the assistant may repeat
    turns: list[Turn] = []
    ids: dict[tuple[int, int], str] = {}
    for s_no, session in enumerate(sessions, start=1):
        topic = D.TOPICS[session.topic]
        project = session.project if topic["kind"] == D.CODING else ""
        exchanges = rng.randint(8, 14)
        pending = list(slots[s_no - 1])
        at = sorted(rng.sample(range(exchanges), min(len(pending), exchanges)))
        placed = dict(zip(at, pending, strict=False))
        extra = pending[len(at) :]
        date_text = _date_text(session.when)
        for e in range(exchanges + len(extra)):
            ask = _ask(rng, topic, project or session.project, first=e == 0)
            key = placed.get(e) if e < exchanges else extra[e - exchanges]
            ack = None
            if key is not None and key[1] < 0:
                text = facts[key[0]].near[-1 - key[1]]
            elif key is not None:
                fact = facts[key[0]]
                statement = fact.statements[key[1]][0]
                text = statement
                if _words(statement) + _words(ask) <= 40 and rng.random() < 0.5:
                    text = f"{statement} {ask}"
                ack = fact.ack if rng.random() < 0.7 else None
                if fact.context and fact.project:
                    stated.setdefault(fact.project, []).append(fact.context)
            else:
                text = ask
            user_id = f"S{s_no}:{2 * e + 1}"
            if key is not None and key[1] >= 0:
                ids[key] = user_id
            turns.append(Turn(user_id, f"({date_text}) user: {text}", _stamp(session.when)))
            reply = _reply(
                rng, topic, project or session.project, text, ack, stated.get(session.project, [])
            )
            turns.append(
                Turn(
                    f"S{s_no}:{2 * e + 2}",
                    f"({date_text}) assistant: {reply}",
                    _stamp(session.when),
                )
            )

    questions: list[Question] = []
    for f_idx, fact in enumerate(facts):
        for text, category, refs in fact.questions:
            questions.append(Question(text, category, [ids[(f_idx, r)] for r in refs]))
    # Two-message questions: the order of two dated events, and facts of both projects at once.
    events = [(f, i) for i, f in enumerate(facts) if f.event]
    for _ in range(min(5, len(events) // 2)):
        (fa, ia), (fb, ib) = rng.sample(events, 2)
        evidence = [ids[(ia, fa.event_statement)], ids[(ib, fb.event_statement)]]
        questions.append(Question(f"Which happened first: {fa.event} or {fb.event}?", 4, evidence))
    for maker, text in (
        (_language, "Which languages are {a} and {b} written in?"),
        (_cloud, "Where are {a} and {b} hosted?"),
        (_tests, "Which test frameworks do {a} and {b} use?"),
    ):
        both = [i for i, f in enumerate(facts) if f.kind == maker.__name__]
        if len(both) == 2:
            a, b = (facts[i].project for i in both)
            questions.append(Question(text.format(a=a, b=b), 4, [ids[(i, 0)] for i in both]))
    if len(questions) > MAX_QUESTIONS:
        keep = sorted(rng.sample(range(len(questions)), MAX_QUESTIONS))
        questions = [questions[i] for i in keep]
    return Conversation(f"longmix-{seed}-{index}", turns, questions)


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S")


def generate(
    seed: int = DEFAULT_SEED,
    conversations: int = DEFAULT_CONVERSATIONS,
    sessions_count: int | None = None,
) -> list[Conversation]:
    """The whole set: the same seed and count always give the same conversations and questions."""
    return [generate_conversation(seed, i, sessions_count) for i in range(conversations)]


def describe(conversations: Sequence[Conversation]) -> str:
    """One line about the set's shape: counts and message lengths by speaker."""
    lengths: dict[str, list[int]] = {"user": [], "assistant": []}
    for conv in conversations:
        for turn in conv.turns:
            speaker, text = turn.content.split(") ", 1)[1].split(": ", 1)
            lengths[speaker].append(len(text.split()))
    user, assistant = lengths["user"], lengths["assistant"]
    n_q = sum(len(c.questions) for c in conversations)
    return (
        f"{len(conversations)} conversations, {sum(len(c.turns) for c in conversations)} messages "
        f"({min(len(c.turns) for c in conversations)}-{max(len(c.turns) for c in conversations)} each), "
        f"{n_q} questions; user messages {min(user)}-{max(user)} words "
        f"(mean {sum(user) / len(user):.0f}), assistant replies {min(assistant)}-{max(assistant)} words "
        f"(mean {sum(assistant) / len(assistant):.0f})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--conversations", type=int, default=DEFAULT_CONVERSATIONS, metavar="N")
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    parser.add_argument(
        "--sessions",
        type=int,
        default=None,
        metavar="N",
        help="pack each conversation into N sessions (smaller set, for smoke tests)",
    )
    parser.add_argument(
        "--limit-questions",
        type=int,
        default=None,
        metavar="N",
        help="score only the first N questions of each conversation",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        metavar="DIR",
        help="keep message and question vectors here",
    )
    parser.add_argument("--limit", type=int, default=20, help="hits retrieved per question (>= 20)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated search modes")
    parser.add_argument(
        "--dump",
        type=Path,
        default=None,
        metavar="PATH",
        help="also write the generated set as JSON",
    )
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if any(m not in MODES for m in modes):
        print(f"Modes must be among {', '.join(MODES)}.", file=sys.stderr)
        return 1
    count = min(args.conversations, args.limit_conversations or args.conversations)
    conversations = generate(args.seed, count, args.sessions)
    if args.dump:
        args.dump.write_text(
            json.dumps(
                [
                    {
                        "id": c.sample_id,
                        "messages": [[t.dia_id, t.created_at, t.content] for t in c.turns],
                        "questions": [[q.text, q.category, q.evidence] for q in c.questions],
                    }
                    for c in conversations
                ],
                indent=1,
            )
        )
    print(describe(conversations) + "\n")
    with Timer() as total:
        result = evaluate(
            conversations,
            cache=args.cache,
            limit_questions=args.limit_questions,
            modes=modes,
            k=max(args.limit, max(CUTOFFS)),
            source="longmix",
        )
    print(report(result, CATEGORIES))
    print(f"\ntotal time {total.seconds:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
