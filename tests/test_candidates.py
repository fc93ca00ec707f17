"""Candidates: what the storage verdict is unsure of is kept, searchable, and not given unprompted
until it is confirmed (said again, used, or approved).

Through the real hooks (a new process each, JSON on stdin) on a real SQLite file under a private
OCTYBOT_HOME, offline.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from octygraph.config.settings import Settings
from octygraph.embeddings.local import cached_local_embed
from octygraph.judgement.storage import filter_storage
from octygraph.judgement.verdict import CANDIDATE_PROSE_CHARS
from octygraph.memory import candidates, review
from octygraph.memory.uses import USES_CONFIRM, record_access
from octygraph.pipeline.nodes.assemble import CANDIDATE_COSINE
from octygraph.pipeline.sessions import SessionLog
from octygraph.pipeline.tools import writes
from octygraph.store import MemoryStore, Node
from octygraph.store.opening import open_store
from tests.conftest import run_cli
from tests.test_hooks import hook
from tests.test_session_start import claude_dir, nodes, prompt, records, start

__all__ = ["claude_dir"]  # the fixture, used by name

UNSURE = "Use npm for installing dependencies."
"""A standing preference said plainly, without "always" or "from now on": the verdict is unsure."""
LIKELY = "install everything and start the server"
"""A prompt an ordinary memory of `UNSURE` is given to, and which does not read like it."""
BRIEF = (
    "We use pnpm in this repo. The mobile app talks to the billing API through the gateway in "
    "services/gateway, and the partner team at Northwind owns the contract for it. The gateway has a "
    "hard limit of 50 requests a second per customer, which is why the retry logic backs off "
    "exponentially. Can you add a test for the backoff?"
)
"""A message whose forms keep a part, while the whole of it may last."""
ALIKE = (
    "The mobile app is getting throttled by the billing gateway again, can you look at the retry?"
)
"""A later message on the same matter as `BRIEF`, in other words."""


def current(text: str) -> Node:
    (node,) = [n for n in nodes() if n.content == text and not n.superseded_by]
    return node


def test_the_verdict_keeps_what_it_is_unsure_of_as_a_candidate() -> None:
    decision = filter_storage(UNSURE)
    assert not decision.store and decision.items == []
    assert [c.content for c in decision.candidates] == [UNSURE]
    assert decision.candidate_p is not None and 0 < decision.candidate_p < 1
    assert "candidate" in decision.reason
    # A question or a task is not even a candidate.
    for text in ("which package manager do we use?", "fix the failing test in cart.py"):
        assert filter_storage(text).candidates == []


def test_the_model_never_sees_the_candidate_fields() -> None:
    schema = filter_storage(UNSURE).model_json_schema()
    assert "candidates" not in schema["properties"] and "candidate_p" not in schema["properties"]


@pytest.mark.slow
def test_a_candidate_is_searchable_but_not_given_until_said_again(claude_dir: Path) -> None:
    assert prompt(UNSURE, "s1") == ""
    node = current(UNSURE)
    assert candidates.is_candidate(node) and node.attributes["verdict_p"] > 0
    # Explicit recall ranks candidates too, and says what they are.
    found = run_cli("search", "installing dependencies")
    assert found.returncode == 0 and "candidate" in found.stdout and "npm" in found.stdout
    # Not in the next session's start block, and not given for a prompt it fairly likely applies to
    # (an ordinary memory would be: see below); only a very likely one gets a candidate.
    assert UNSURE not in records(start("s2"))
    assert UNSURE not in prompt(LIKELY, "s2")
    # Said again in a later session: confirmed, an ordinary memory, and it starts the next session.
    prompt(UNSURE, "s3")
    node = current(UNSURE)
    assert not candidates.is_candidate(node) and node.attributes["confirmed"] == "restated"
    assert UNSURE in records(start("s4"))
    assert UNSURE in prompt(LIKELY, "s5")  # a session given no start block: the prompt gives it


def cosine(a: str, b: str) -> float:
    va, vb = cached_local_embed([a, b])
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)))


def test_the_prompts_used_here_sit_where_the_tests_need_them() -> None:
    assert cosine(UNSURE, LIKELY) < CANDIDATE_COSINE
    (opening,) = filter_storage(BRIEF).candidates
    assert cosine(opening.content, ALIKE) >= CANDIDATE_COSINE


def test_a_message_whose_forms_keep_a_part_is_also_kept_whole_as_a_candidate() -> None:
    decision = filter_storage(BRIEF)
    assert decision.store and "We use pnpm in this repo." in [i.content for i in decision.items]
    (opening,) = decision.candidates
    # Its prose from the start (the request at its end is not prose worth keeping past the bar).
    assert opening.content.startswith("We use pnpm in this repo. The mobile app talks to")
    assert "Northwind" in opening.content and len(opening.content) <= CANDIDATE_PROSE_CHARS
    # A short message the forms keep whole adds no candidate.
    assert filter_storage("We use pnpm in this repo.").candidates == []


@pytest.mark.slow
def test_a_candidate_is_given_once_to_a_later_session_whose_prompt_reads_like_it(
    claude_dir: Path,
) -> None:
    prompt(BRIEF, "s1")
    (candidate,) = [n for n in nodes() if candidates.is_candidate(n)]
    assert "Northwind" in candidate.content
    assert "Northwind" not in start("s2")  # not at session start
    given = prompt(ALIKE, "s2")
    assert candidate.content in records(given)
    # Once in a session: it is in the transcript from then on.
    assert "Northwind" not in prompt(ALIKE + " It still fails.", "s2")
    # A prompt on another matter gets nothing of it.
    assert "Northwind" not in prompt("Rename the settings page title to Preferences.", "s3")


def test_a_candidate_given_often_enough_is_confirmed_by_use(claude_dir: Path) -> None:
    prompt(UNSURE, "s1")
    node = current(UNSURE)
    with open_store(Settings.from_env(), create=False) as store:
        for _ in range(USES_CONFIRM - 1):
            record_access(store, [node.id])
        assert candidates.is_candidate(store.get_node(node.id))  # type: ignore[arg-type]
        record_access(store, [node.id])
        confirmed = store.get_node(node.id)
    assert confirmed is not None and not candidates.is_candidate(confirmed)
    assert confirmed.attributes["confirmed"] == "used"


@pytest.mark.slow
def test_confirming_what_is_not_a_candidate_changes_nothing(claude_dir: Path) -> None:
    prompt("From now on never push to main on Fridays", "s1")
    (rule,) = [n for n in nodes() if n.node_type == "instruction"]
    with open_store(Settings.from_env(), create=False) as store:
        assert candidates.confirm(store, rule.id, "approved") is None
        assert candidates.confirm(store, "no-such-id", "approved") is None
        assert "confirmed" not in (store.get_node(rule.id) or rule).attributes


def end(session: str) -> tuple[int, str]:
    payload = json.dumps(
        {
            "session_id": session,
            "transcript_path": str(Path.cwd() / f"{session}.jsonl"),
            "cwd": str(Path.cwd()),
            "hook_event_name": "SessionEnd",
            "reason": "prompt_input_exit",
        }
    )
    code, out = hook("session-end", payload)
    return code, out


@pytest.mark.slow
def test_a_session_end_merges_a_candidate_another_memory_already_says(claude_dir: Path) -> None:
    with open_store(Settings.from_env()) as store:
        known = store.add_node("fact", UNSURE)  # said before, as a fact: the candidate adds nothing
    prompt(UNSURE, "s1")
    (candidate,) = [n for n in nodes() if candidates.is_candidate(n)]
    assert candidate.node_type == "instruction"
    assert end("s1") == (0, "")
    with open_store(Settings.from_env(), create=False) as store:
        settled = store.get_node(candidate.id)
        kept = store.get_node(known.id)
    assert settled is not None and review.status(settled) == "archived"  # restorable, not deleted
    assert kept is not None and kept.attributes["access_count"] == 1
    # Settled where the pass ran: the service's idle pass will not settle it again.
    memory_dir = Settings.from_env().paths.memory_dir
    assert SessionLog(memory_dir, "s1").stored() and SessionLog(memory_dir, "s1").unsettled() == []
    # Another session's end, or a payload that is not a session end, changes nothing.
    assert end("s2") == (0, "")
    code, out = hook("session-end", b"not json")
    assert (code, out) == (0, "")


@pytest.mark.slow
def test_two_candidates_that_say_the_same_are_merged_into_the_older_confirmed(
    claude_dir: Path,
) -> None:
    with open_store(Settings.from_env()) as store:
        older = store.add_node("fact", UNSURE, attributes=candidates.candidate_attributes(0.4))
    prompt(UNSURE, "s1")
    assert end("s1") == (0, "")
    with open_store(Settings.from_env(), create=False) as store:
        confirmed = store.get_node(older.id)
        live = [n for n in store.iter_all() if n.content == UNSURE and not n.superseded_by]
    assert confirmed is not None and confirmed.attributes["confirmed"] == "restated"
    assert [n.id for n in live] == [older.id]


def test_two_candidates_of_one_session_that_say_the_same_are_settled_once(claude_dir: Path) -> None:
    from octygraph.session.consolidation import consolidate

    with open_store(Settings.from_env()) as store:
        first = store.add_node("fact", UNSURE, attributes=candidates.candidate_attributes(0.4))
        second = store.add_node(
            "instruction", UNSURE, attributes=candidates.candidate_attributes(0.5)
        )
        settled = consolidate(store, [first.id, second.id])
        assert settled.confirmed == [first.id] and settled.merged == [second.id]
        kept, merged = store.get_node(first.id), store.get_node(second.id)
    assert kept is not None and not candidates.is_candidate(kept)
    assert merged is not None and review.status(merged) == "archived"


def test_a_candidate_nobody_used_leaves_the_review_list_after_its_days(store: MemoryStore) -> None:
    from octygraph.memory.candidate_review import expire_unused, list_candidates

    unused = store.add_node("instruction", UNSURE, attributes=candidates.candidate_attributes(0.4))
    used = store.add_node(
        "fact", "The staging box is slow.", attributes=candidates.candidate_attributes(0.3)
    )
    ordinary = store.add_node("fact", "Peter handles the Anderson account.")
    store.set_attributes(used.id, access_count=1)  # given once: not yet confirmed, but used
    soon, later = datetime.now(UTC) + timedelta(days=29), datetime.now(UTC) + timedelta(days=31)
    assert expire_unused(store, 30, now=soon) == []
    assert expire_unused(store, 0, now=later) == []  # 0: candidates wait for ever
    assert expire_unused(store, 30, now=later) == [unused.id]
    gone = store.get_node(unused.id)
    assert (
        gone is not None and review.status(gone) == "archived" and "expired_at" in gone.attributes
    )
    assert [n.id for n in list_candidates(store)] == [used.id]
    kept = store.get_node(ordinary.id)
    assert kept is not None and not kept.superseded_by
    # Nothing is lost: restored, it is a candidate awaiting review again.
    store.restore_node(unused.id)
    assert {n.id for n in list_candidates(store)} == {unused.id, used.id}


@pytest.mark.slow
def test_a_session_end_archives_candidates_left_unused_past_the_setting(
    claude_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(Settings.from_env()) as store:
        old = store.add_node(
            "instruction",
            UNSURE,
            attributes=candidates.candidate_attributes(0.4),
            created_at="2020-01-02 03:04:05",
        )
    monkeypatch.setenv("OCTY_CANDIDATE_DAYS", "0")
    assert end("s1") == (0, "")
    with open_store(Settings.from_env(), create=False) as store:
        waiting = store.get_node(old.id)
    assert waiting is not None and candidates.is_candidate(waiting) and not waiting.superseded_by
    monkeypatch.delenv("OCTY_CANDIDATE_DAYS")  # the default: 30 days
    assert end("s2") == (0, "")
    with open_store(Settings.from_env(), create=False) as store:
        expired = store.get_node(old.id)
    assert expired is not None and review.status(expired) == "archived"


def test_a_correction_of_a_candidate_is_an_ordinary_memory(store: MemoryStore) -> None:
    """ "Security reports now go to Hugo instead of Lisa" corrects an unsure "Send all security
    reports to Lisa": what the user states now is what holds, not something to confirm."""
    old = writes.store_memory(
        store,
        node_type="instruction",
        content="Send all security reports to Lisa.",
        grounding_text="Send all security reports to Lisa.",
        candidate=0.5,
    ).records[0]
    told = "Security reports now go to Hugo instead of Lisa."
    new = writes.supersede_memory(
        store, old_id=old["id"], new_content=told, grounding_text=told
    ).records[0]
    node = store.get_node(new["id"])
    assert node is not None and node.content == told
    assert not candidates.is_candidate(node) and node.attributes["confirmed"] == "restated"
