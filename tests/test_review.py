"""Curating memory: soft forget with restore, standing rules, and resolving flagged contradictions."""

from __future__ import annotations

import pytest

from octygraph.memory import review
from octygraph.store import ARCHIVED, AdminStore


@pytest.fixture
def store(any_store: AdminStore) -> AdminStore:
    """Every test here runs on each backend: the version rules are shared, and so are their tests."""
    return any_store


def ids(hits: list) -> list[str]:
    return [h.node.id for h in hits]


def test_forget_archives_out_of_search_and_restore_brings_it_back(store: AdminStore) -> None:
    alice = review.remember(store, "Alice leads the payments team.", entities=["Alice"])
    review.remember(store, "The deploy window is Tuesday morning.")
    assert alice.id in ids(store.search("who leads payments", types=["fact"]))

    archived = review.forget(store, alice.id)

    assert archived.superseded_by == ARCHIVED and review.status(archived) == "archived"
    assert alice.id not in ids(store.search("who leads payments", types=["fact"]))
    assert [n.id for n in store.archived_nodes()] == [alice.id]
    assert store.edges_of(alice.id), "links are kept, so a restore is complete"
    assert store.stats()["archived"] == 1
    with pytest.raises(review.ReviewError, match="archived"):
        review.edit(store, alice.id, "Alice leads the billing team.")

    restored = review.restore(store, alice.id)

    assert restored.superseded_by is None and "archived" not in restored.attributes
    assert alice.id in ids(store.search("who leads payments", types=["fact"]))
    assert store.archived_nodes() == []
    with pytest.raises(review.ReviewError, match="not archived"):
        review.restore(store, alice.id)


def test_forgetting_the_newest_version_revives_the_older_one_until_restored(
    store: AdminStore,
) -> None:
    old = review.remember(store, "Alice leads the payments team.")
    _, new = review.edit(store, old.id, "Bob leads the payments team.")

    review.forget(store, new.id)
    assert store.get_node(old.id).superseded_by is None  # type: ignore[union-attr]
    assert old.id in ids(store.search("payments team lead", types=["fact"]))

    review.restore(store, new.id)
    assert store.get_node(old.id).superseded_by == new.id  # type: ignore[union-attr]
    assert [n.id for n in store.supersede_chain(new.id)] == [old.id, new.id]


def test_forgetting_a_middle_version_keeps_a_single_current_one(store: AdminStore) -> None:
    first = review.remember(store, "Alice leads the payments team.")
    _, second = review.edit(store, first.id, "Bob leads the payments team.")
    _, third = review.edit(store, second.id, "Carol leads the payments team.")

    review.forget(store, second.id)
    assert store.get_node(first.id).superseded_by == third.id  # type: ignore[union-attr]
    assert [h.node.id for h in store.search("payments team lead", types=["fact"])] == [third.id]

    review.restore(store, second.id)
    assert [n.id for n in store.supersede_chain(third.id)] == [first.id, second.id, third.id]
    assert [h.node.id for h in store.search("payments team lead", types=["fact"])] == [third.id]


def test_standing_rules_are_current_instructions_broadest_first(store: AdminStore) -> None:
    narrow = review.remember(
        store, "Use tabs in the Makefile.", node_type="instruction", subtype="rule", scope=0.2
    )
    broad = review.remember(
        store, "Always answer in English.", node_type="instruction", subtype="rule", scope=1.0
    )
    gone = review.remember(store, "Never deploy on Friday.", node_type="instruction")
    review.forget(store, gone.id)
    review.remember(store, "The office is in Lyon.")

    assert [n.id for n in review.standing_rules(store)] == [broad.id, narrow.id]


@pytest.mark.parametrize("keep", ["keep_new", "keep_old", "keep_both"])
def test_resolving_a_contradiction(store: AdminStore, keep: review.Resolution) -> None:
    old = review.remember(store, "Deploy on Fridays.", node_type="instruction", subtype="rule")
    new = review.remember(
        store, "Never deploy on Fridays.", node_type="instruction", subtype="rule"
    )
    store.set_attributes(new.id, contradicts=old.id, needs_review=True)
    [flagged] = review.contradictions(store)
    assert flagged.node.id == new.id and flagged.other is not None and flagged.other.id == old.id

    review.resolve(store, new.id, keep)

    assert review.contradictions(store) == []
    current = {n.id for n in review.standing_rules(store)}
    expected = {"keep_new": {new.id}, "keep_old": {old.id}, "keep_both": {old.id, new.id}}[keep]
    assert current == expected
    with pytest.raises(review.ReviewError, match="not waiting"):
        review.resolve(store, new.id, keep)


def test_a_rule_stored_by_hand_is_reconciled_like_the_pipeline_does(store: AdminStore) -> None:
    tabs = review.remember(store, "Use tabs for indentation.", node_type="instruction")
    spaces = review.remember(
        store, "Use spaces for indentation instead of tabs.", node_type="instruction"
    )
    assert [(v, o.id) for v, o in review.reconcile_rule(store, spaces)] == [("SUPERSEDES", tabs.id)]
    assert store.get_node(tabs.id).superseded_by == spaces.id  # type: ignore[union-attr]

    lint = review.remember(store, "Run the linter before every commit.", node_type="instruction")
    never = review.remember(store, "Never run the linter before commits.", node_type="instruction")
    assert [(v, o.id) for v, o in review.reconcile_rule(store, never)] == [
        ("CONTRADICTION", lint.id)
    ]
    [flagged] = review.contradictions(store)
    assert flagged.node.id == never.id and flagged.other == store.get_node(lint.id)
