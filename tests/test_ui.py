"""The review page's HTTP surface without a browser: the token gate, loopback hosts, every page renders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from octygraph.config.settings import Settings
from octygraph.integrations.ui.app import COOKIE, create_app
from octygraph.memory import review
from octygraph.store import MemoryStore

TOKEN = "t0ken-for-tests"


@pytest.fixture
def client(home: Path, store: MemoryStore) -> Iterator[TestClient]:
    app = create_app(Settings.from_env(), TOKEN, store=store)
    with TestClient(app, base_url="http://127.0.0.1:9999", follow_redirects=False) as c:
        yield c


def test_the_token_is_required_then_kept_in_a_strict_cookie(client: TestClient) -> None:
    assert client.get("/memories").status_code == 403
    assert client.get("/memories?token=wrong").status_code == 403

    first = client.get(f"/memories?token={TOKEN}&type=fact")

    assert first.status_code == 303 and first.headers["location"] == "/memories?type=fact"
    cookie = first.headers["set-cookie"]
    assert f"{COOKIE}={TOKEN}" in cookie and "samesite=strict" in cookie.lower()
    assert "httponly" in cookie.lower()
    assert client.get("/memories").status_code == 200


def test_only_loopback_host_names_are_served(client: TestClient) -> None:
    client.cookies.set(COOKIE, TOKEN)
    assert client.get("/memories", headers={"host": "attacker.example"}).status_code == 400
    assert client.get("/memories", headers={"host": "localhost:8000"}).status_code == 200


def test_every_page_renders_and_forms_change_memory(client: TestClient, store: MemoryStore) -> None:
    client.cookies.set(COOKIE, TOKEN)
    node = review.remember(store, "Alice leads the payments team.", entities=["Alice"])
    for path in (
        "/memories",
        "/memories?q=payments",
        "/memories?entity=Alice&status=all",
        f"/memories/{node.id}",
        "/review",
        "/prompts",
        "/graph",
        "/usage",
    ):
        page = client.get(path)
        assert page.status_code == 200, path
    assert "Alice leads the payments team." in client.get("/memories?entity=Alice").text
    assert client.get("/memories/nope").status_code == 404

    edited = client.post(f"/memories/{node.id}/edit", data={"text": "Bob leads the payments team."})
    assert edited.status_code == 303
    new_id = edited.headers["location"].split("/")[2].split("?")[0]
    assert store.get_node(node.id).superseded_by == new_id  # type: ignore[union-attr]

    refused = client.post(f"/memories/{new_id}/edit", data={"text": "  "})
    assert refused.status_code == 400 and "empty" in refused.text
    assert client.post(f"/memories/{new_id}/forget").status_code == 303
    assert review.status(store.get_node(new_id)) == "archived"  # type: ignore[arg-type]
    assert client.post(f"/memories/{new_id}/restore").status_code == 303
    assert review.status(store.get_node(new_id)) == "current"  # type: ignore[arg-type]


def test_usage_adds_up_llm_calls_tokens_and_cost_per_day(client: TestClient) -> None:
    from octygraph.integrations.ui.views import read_traces, usage_by_day
    from octygraph.pipeline.traces import write_trace

    debug = Settings.from_env().paths.debug_dir
    llm = {"calls": 2, "input_tokens": 900, "output_tokens": 100, "cost_usd": 0.002, "priced": True}
    unpriced = {**llm, "cost_usd": None, "priced": False}
    local = {"calls": 1, "input_tokens": 50, "output_tokens": 0, "cost_usd": 0.0, "priced": True}
    for trace_id, created, usage in (
        ("20261120T100000000000Z-aaaaaa", "2026-11-20T10:00:00+00:00", {"l1": llm}),
        (
            "20261120T110000000000Z-bbbbbb",
            "2026-11-20T11:00:00+00:00",
            {"l2": llm, "embeddings": local},
        ),
        ("20261121T090000000000Z-cccccc", "2026-11-21T09:00:00+00:00", {"curation": unpriced}),
    ):
        write_trace(
            debug, {"trace_id": trace_id, "created_at": created, "mode": "m", "usage": usage}
        )

    days = usage_by_day(read_traces(debug))

    assert [(d.day, d.runs, d.llm_calls, d.input_tokens, d.priced) for d in days] == [
        ("2026-11-20", 2, 4, 1850, True),
        ("2026-11-21", 1, 2, 900, False),
    ]
    assert round(days[0].cost_usd, 6) == 0.004
    client.cookies.set(COOKIE, TOKEN)
    page = client.get("/usage").text
    assert "Cost (USD) per day" in page and "lower bound" in page and "0.00400" in page
