"""The review page's Candidates tab without a browser: listed, approved, forgotten, each decision kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from octygraph.config.settings import Settings
from octygraph.integrations.ui.app import COOKIE, create_app
from octygraph.memory import feedback
from octygraph.memory.candidates import candidate_attributes, is_candidate
from octygraph.store import MemoryStore

TOKEN = "t0ken-for-tests"


@pytest.fixture
def client(home: Path, store: MemoryStore) -> Iterator[TestClient]:
    app = create_app(Settings.from_env(), TOKEN, store=store)
    with TestClient(app, base_url="http://127.0.0.1:9999", follow_redirects=False) as c:
        c.cookies.set(COOKIE, TOKEN)
        yield c


def test_candidates_are_listed_approved_and_forgotten(
    client: TestClient, store: MemoryStore, home: Path
) -> None:
    keep = store.add_node(
        "fact", "Nightly builds go to the staging bucket.", attributes=candidate_attributes(0.42)
    )
    drop = store.add_node("fact", "I think it is fine.", attributes=candidate_attributes(0.31))
    store.add_node("fact", "An ordinary memory is not a candidate.")

    listed = client.get("/candidates")
    assert listed.status_code == 200
    assert 'href="/candidates"' in listed.text  # in the nav
    assert "Nightly builds go to the staging bucket." in listed.text and "0.42" in listed.text
    assert "ordinary memory" not in listed.text
    assert f'action="/candidates/{keep.id}/approve"' in listed.text

    approved = client.post(f"/candidates/{keep.id}/approve")
    assert approved.status_code == 303 and "done=approved" in approved.headers["location"]
    assert not is_candidate(store.get_node(keep.id))  # type: ignore[arg-type]
    notice = client.get(approved.headers["location"]).text
    assert "Approved" in notice and "Nightly builds" in notice

    forgotten = client.post(f"/candidates/{drop.id}/forget")
    assert forgotten.status_code == 303
    assert store.get_node(drop.id).superseded_by == "archived"  # type: ignore[union-attr]
    assert "No candidates await review." in client.get("/candidates").text

    assert [(e.text, e.label, e.action) for e in feedback.load(home)] == [
        ("Nightly builds go to the staging bucket.", 1, "approve"),
        ("I think it is fine.", 0, "forget"),
    ]
    again = client.post(f"/candidates/{keep.id}/approve")
    assert again.status_code == 400 and "not a candidate" in again.text
    assert client.post("/candidates/0123456789abcdef/approve").status_code == 400


def test_the_candidate_forms_need_the_token(client: TestClient, store: MemoryStore) -> None:
    node = store.add_node(
        "fact", "Ports above 9000 are free.", attributes=candidate_attributes(0.4)
    )
    client.cookies.clear()
    assert client.post(f"/candidates/{node.id}/approve").status_code == 403
    assert client.post(f"/candidates/{node.id}/forget").status_code == 403
    assert is_candidate(store.get_node(node.id))  # type: ignore[arg-type]


def test_forgetting_any_memory_and_editing_a_candidate_are_examples(
    client: TestClient, store: MemoryStore, home: Path
) -> None:
    plain = store.add_node("fact", "The old wiki is read-only.")
    candidate = store.add_node(
        "fact", "We pin numpy below 3.", attributes=candidate_attributes(0.45)
    )

    assert client.post(f"/memories/{plain.id}/forget").status_code == 303
    edited = client.post(f"/memories/{candidate.id}/edit", data={"text": "We pin numpy below 2.3."})
    new_id = edited.headers["location"].split("/")[2].split("?")[0]

    assert not is_candidate(store.get_node(new_id))  # type: ignore[arg-type]
    assert [(e.text, e.label, e.action, e.candidate) for e in feedback.load(home)] == [
        ("The old wiki is read-only.", 0, "forget", False),
        ("We pin numpy below 2.3.", 1, "edit", True),
    ]
