"""Per-run data lives in the graph state, fixed data in the runtime context; what a run writes is
stamped with its id, so its own retrieval (the other half, running alongside) leaves it out."""

from __future__ import annotations

import dataclasses
from datetime import date

import pytest

from octygraph.memory.candidates import is_candidate
from octygraph.pipeline.context import Context
from octygraph.pipeline.graph import retrieve_half
from octygraph.pipeline.nodes.assemble import collect
from octygraph.pipeline.tools import writes
from octygraph.pipeline.tools.writes import RUN, written_by
from octygraph.store import MemoryStore, Node

TODAY = date(2026, 11, 16)
PROMPT = "Who handles the Anderson account?"


def test_the_context_carries_no_side_channel_between_nodes() -> None:
    """Every field is set when the run starts; the one private field is a cache of the store."""
    private = [f.name for f in dataclasses.fields(Context) if not f.init]
    assert private == ["_gazetteer"]
    assert Context().run_id != Context().run_id  # a context made for a run names that run


def test_the_safety_nets_search_beside_the_retrieve_loop() -> None:
    edges = {(e.source, e.target) for e in retrieve_half().get_graph().edges}
    assert {("__start__", "retrieve_loop"), ("__start__", "safety_nets")} <= edges
    assert {("retrieve_loop", "assemble"), ("safety_nets", "assemble")} <= edges


def test_what_a_run_writes_carries_its_id(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = writes.store_memory(
        store,
        node_type="fact",
        content="Peter handles the Anderson account",
        grounding_text="Peter handles the Anderson account",
        run_id="run-1",
    )
    [record] = stored.records
    node = store.get_node(record["id"])
    assert node is not None and node.attributes == {RUN: "run-1"}
    replaced = writes.supersede_memory(
        store,
        old_id=node.id,
        new_content="Lisa handles the Anderson account",
        grounding_text="Lisa handles the Anderson account now",
        run_id="run-2",
    )
    new = store.get_node(replaced.records[0]["id"])
    assert new is not None and written_by(new, "run-2") and not written_by(new, "run-1")
    # A candidate said again in a later run is confirmed by that run.
    writes.store_memory(
        store,
        node_type="instruction",
        content="Use npm for installing dependencies",
        grounding_text="Use npm for installing dependencies",
        candidate=0.4,
        run_id="run-3",
    )
    # Confirmed and stamped in one write: retrieval, running beside the store half, never reads
    # it confirmed but not yet this run's (it would give the prompt back its own statement).
    seen: list[Node] = []
    set_attributes = store.set_attributes

    def watched(node_id: str, **attributes: object) -> Node:
        node = set_attributes(node_id, **attributes)
        seen.append(node)
        return node

    monkeypatch.setattr(store, "set_attributes", watched)
    again = writes.store_memory(
        store,
        node_type="instruction",
        content="Use npm for installing dependencies",
        grounding_text="Use npm for installing dependencies",
        run_id="run-4",
    )
    confirmed = store.get_node(again.records[0]["id"])
    assert confirmed is not None and written_by(confirmed, "run-4")
    assert seen and all(written_by(n, "run-4") for n in seen if not is_candidate(n))


def test_a_run_leaves_out_only_what_it_wrote_itself(store: MemoryStore) -> None:
    told = "Peter handles the Anderson account"
    records = writes.store_memory(
        store, node_type="fact", content=told, grounding_text=told, run_id="now"
    ).records

    def given(run_id: str) -> list[str]:
        sections = collect(store, PROMPT, records, TODAY, offline=True, run_id=run_id).sections
        return [r["content"] for section in sections.values() for r in section]

    assert given("now") == []  # the user's own message, said this very run
    assert given("later") == [told]


def test_a_prompt_is_never_given_back_what_it_says_itself(store: MemoryStore) -> None:
    """Whether or not the store half has got to it yet: a candidate of an earlier session, restated
    now, is still unconfirmed when retrieval reads it."""
    told = "Use the MCP integration patterns for enhanced development"
    records = writes.store_memory(
        store, node_type="instruction", content=told, grounding_text=told, run_id="earlier"
    ).records

    def given(prompt: str) -> list[str]:
        sections = collect(store, prompt, records, TODAY, offline=True, run_id="now").sections
        return [r["content"] for section in sections.values() for r in section]

    assert given(told.lower() + ".") == []
    assert given(f"{told}, and keep the docs short") == []
    assert given("Which integration patterns do we use for development with MCP?") == [told]


def test_a_prompt_that_says_a_memory_again_in_other_words_is_not_given_it(
    store: MemoryStore,
) -> None:
    """Said again in other words (the store half's test of a restatement: close in meaning, no name or
    number the prompt lacks), a memory would only echo the prompt; asked about, it is what it needs."""
    told = "The staging database is refreshed from production every Monday night"
    records = writes.store_memory(
        store, node_type="fact", content=told, grounding_text=told, run_id="earlier"
    ).records

    def given(prompt: str) -> list[str]:
        sections = collect(store, prompt, records, TODAY, offline=True, run_id="now").sections
        return [r["content"] for section in sections.values() for r in section]

    said = "FYI the staging database is refreshed from production every Monday night, so keep that in mind"
    assert given(said) == []
    assert given("Is the staging database refreshed from production every Monday night?") == [told]
    # Another night is another fact: not the same memory said again.
    assert given(said.replace("Monday", "Friday")) == [told]


def test_what_the_session_was_given_is_not_given_twice_but_counts_as_needed(
    store: MemoryStore,
) -> None:
    """A standing memory the session start gave is in the session already; a prompt that needs it
    reports it as `needed_again` (a use), while one the session stated itself is not a use."""
    told = "Peter handles the Anderson account"
    records = writes.store_memory(
        store, node_type="fact", content=told, grounding_text=told, run_id="earlier"
    ).records
    node_id = records[0]["id"]
    fresh = collect(store, PROMPT, records, TODAY, offline=True)
    assert [r["content"] for s in fresh.sections.values() for r in s] == [told]
    assert fresh.needed_again == []
    given = collect(store, PROMPT, records, TODAY, offline=True, seen={node_id}, given={node_id})
    assert given.sections == {} and given.needed_again == [node_id]
    own = collect(store, PROMPT, records, TODAY, offline=True, seen={node_id})
    assert own.sections == {} and own.needed_again == []
    unrelated = collect(
        store, "Rename the CSS class on the login button", records, TODAY, offline=True,
        seen={node_id}, given={node_id},
    )  # fmt: skip
    assert unrelated.needed_again == []
