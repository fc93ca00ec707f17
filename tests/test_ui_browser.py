"""The review page in a real browser: Playwright drives the system's Chromium against `octygraph ui`.

The server is the real command in a subprocess, reached through the token link it prints. Each test keeps a
screenshot of the pages it saw in test-artifacts/screenshots/. Without Chromium these tests skip, unless
OCTY_REQUIRE_BROWSER=1 (CI sets it, and installs Chromium).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from octygraph.config.settings import Settings
from octygraph.embeddings import LocalEmbeddings
from octygraph.memory import review
from octygraph.memory.candidates import candidate_attributes
from octygraph.store import MemoryStore
from tests.test_real_claude import REPO

SHOTS = REPO / "test-artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

pytestmark = pytest.mark.slow


def chromium_path() -> str:
    found = os.environ.get("OCTY_CHROMIUM") or next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None
    )
    if found:
        return found
    reason = "Chromium is not installed (apt-get install chromium, or set OCTY_CHROMIUM)"
    if os.environ.get("OCTY_REQUIRE_BROWSER") == "1":
        pytest.fail(reason + " (OCTY_REQUIRE_BROWSER=1)")
    pytest.skip(reason)


@dataclass
class World:
    url: str
    base: str
    ids: dict[str, str]


def seed(env: dict[str, str], embedder: LocalEmbeddings) -> dict[str, str]:
    """Memories to browse, a chain to edit, a contradiction to resolve, and one recorded prompt."""
    settings = Settings.from_env(env)
    with MemoryStore.open(settings.paths.db, embedder) as store:
        payments = review.remember(
            store, "Alice Novak leads the payments team.", entities=["Alice Novak"]
        )
        review.remember(store, "The deploy window is Tuesday morning.", entities=["Deploy"])
        review.remember(
            store, "Alice Novak reviews every deploy.", entities=["Alice Novak", "Deploy"]
        )
        grafana = review.remember(store, "Dave prefers Grafana over Datadog.", entities=["Dave"])
        old_rule = review.remember(
            store, "Deploy on Fridays after lunch.", node_type="instruction", subtype="rule"
        )
        new_rule = review.remember(
            store, "Never deploy on Fridays.", node_type="instruction", subtype="rule"
        )
        store.set_attributes(new_rule.id, contradicts=old_rule.id, needs_review=True)
        for text, p in (
            ("The staging cluster is rebuilt every Sunday.", 0.44),
            ("Maybe we could try it later.", 0.33),
        ):
            store.add_node("fact", text, attributes=candidate_attributes(p))
    # The pipeline itself records the prompt: it recalls the payments memory and stores the news.
    subprocess.run(
        [sys.executable, "-m", "octygraph", "run", "--offline",
         "Who leads payments? Also, Bob Kessler now runs the billing service."],
        env=env, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return {"payments": payments.id, "grafana": grafana.id, "old_rule": old_rule.id,
            "new_rule": new_rule.id}  # fmt: skip


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, embedder: LocalEmbeddings) -> Iterator[World]:
    chromium_path()
    home = tmp_path_factory.mktemp("uihome")
    env = {**os.environ, "OCTYBOT_HOME": str(home), "OCTYBOT_PROJECT": "proj"}
    ids = seed(env, embedder)
    server = subprocess.Popen(
        [sys.executable, "-m", "octygraph", "ui"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert "http://127.0.0.1:" in line and "?token=" in line, (line, server.poll())
        url = line.split()[-1]
        yield World(url=url, base=url.split("/?")[0], ids=ids)
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="module")
def browser(world: World) -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Browser, world: World) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    p = context.new_page()
    p.set_default_timeout(15_000)
    p.goto(world.url)  # the printed link: sets the cookie and lands on the memories list
    try:
        yield p
    finally:
        context.close()


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_the_link_opens_the_list_and_a_bare_address_is_refused(
    page: Page, world: World, browser: Browser
) -> None:
    assert page.url == world.base + "/memories"
    assert "token" not in page.url
    rows = page.locator("#memories tbody tr")
    assert rows.count() >= 6
    assert (
        page.locator("#memories").get_by_text("Alice Novak leads the payments team.").is_visible()
    )
    shot(page, "memories")

    stranger = browser.new_page()
    response = stranger.goto(world.base + "/memories")
    assert response is not None and response.status == 403
    stranger.close()


def test_search_and_filter_by_type_and_entity(page: Page, world: World) -> None:
    page.fill("input[name=q]", "who runs the payments team")
    page.click("#filters button[type=submit]")
    first = page.locator("#memories tbody tr").first
    assert "Alice Novak leads the payments team." in first.inner_text()
    shot(page, "search")

    page.goto(world.base + "/memories")
    page.select_option("select[name=type]", "instruction")
    page.click("#filters button[type=submit]")
    texts = page.locator("#memories tbody tr").all_inner_texts()
    assert texts and all("instruction" in t for t in texts)

    page.goto(world.base + "/memories")
    page.fill("input[name=entity]", "Alice Novak")
    page.click("#filters button[type=submit]")
    texts = page.locator("#memories tbody tr").all_inner_texts()
    assert len(texts) == 2 and all("Alice Novak" in t for t in texts)


def test_edit_makes_a_new_version_and_shows_the_chain(page: Page, world: World) -> None:
    page.locator("#memories a", has_text="Alice Novak leads the payments team.").click()
    page.fill("#text", "Alice Novak and Omar Haddad lead the payments team.")
    page.click("#edit button[type=submit]")

    assert "Saved as a new version" in page.inner_text("#notice")
    assert page.inner_text("#content") == "Alice Novak and Omar Haddad lead the payments team."
    chain = page.locator("#chain tr").all_inner_texts()
    assert len(chain) == 2 and "replaced" in chain[0] and "current" in chain[1]
    shot(page, "memory-edited")


def test_forget_then_undo(page: Page, world: World) -> None:
    grafana = world.ids["grafana"]
    page.goto(f"{world.base}/memories/{grafana}")
    page.click("#forget")

    assert "Forgotten" in page.inner_text("#notice")
    assert page.inner_text("#status") == "archived"
    shot(page, "forgotten")
    page.goto(world.base + "/memories?q=Grafana")
    assert "Dave prefers Grafana" not in page.inner_text("#memories")
    page.goto(world.base + "/memories?status=archived")
    assert "Dave prefers Grafana" in page.inner_text("#memories")

    page.goto(f"{world.base}/memories/{grafana}?done=forgotten")
    page.click("#undo")

    assert page.inner_text("#status") == "current"
    assert "Restored" in page.inner_text("#notice")
    page.goto(world.base + "/memories?q=Grafana")
    assert "Dave prefers Grafana" in page.inner_text("#memories")


def test_resolve_a_contradiction(page: Page, world: World) -> None:
    page.click("nav >> text=Contradictions")
    card = page.locator(".contradiction")
    assert card.count() == 1
    assert "Never deploy on Fridays." in card.inner_text()
    assert "Deploy on Fridays after lunch." in card.inner_text()
    shot(page, "contradictions")

    card.get_by_role("button", name="Keep the new one").click()

    assert "Resolved (keep new)" in page.inner_text("#notice")
    assert page.inner_text("#empty") == "Nothing awaits review."
    page.goto(f"{world.base}/memories/{world.ids['old_rule']}")
    assert page.inner_text("#status") == "replaced"


def test_open_a_prompt_and_its_trace(page: Page, world: World) -> None:
    page.click("nav >> text=Prompts")
    shot(page, "prompts")
    page.locator("#prompts a", has_text="Who leads payments?").click()

    assert "Bob Kessler now runs the billing service." in page.inner_text("#stored")
    why = page.locator("#injected tr", has_text="Alice Novak leads the payments team.")
    assert "search_facts" in why.inner_text()  # the rule that found it, with its scores
    assert why.locator("td.mono").nth(1).inner_text().startswith("0.")
    assert page.locator("#trace-link").is_visible()
    shot(page, "prompt")
    page.click("#trace-link")
    trace = json.loads(page.inner_text("body"))
    assert trace["prompt"].startswith("Who leads payments?") and trace["mode"] == "offline"


def test_entity_graph_and_usage_pages(page: Page, world: World) -> None:
    page.click("nav >> text=Entity graph")
    names = page.locator("#graph g.entity").evaluate_all("els => els.map(e => e.dataset.name)")
    assert {"Alice Novak", "Deploy"} <= set(names)
    shot(page, "graph")
    page.locator("#graph g.entity[data-name='Dave']").click()
    assert "Dave prefers Grafana" in page.inner_text("#memories")

    page.click("nav >> text=Usage")
    assert page.locator("#usage tbody tr").count() >= 1
    assert page.locator("#usage-chart rect.bar").count() >= 1
    shot(page, "usage")


def test_approve_and_forget_candidates(page: Page, world: World) -> None:
    page.click("nav >> text=Candidates")
    rows = page.locator("#candidates tr.candidate")
    assert rows.count() == 2
    shot(page, "candidates")

    rows.filter(has_text="rebuilt every Sunday").get_by_role("button", name="Approve").click()

    assert "Approved" in page.inner_text("#notice")
    assert page.locator("#candidates tr.candidate").count() == 1
    page.locator("#candidates tr.candidate").get_by_role("button", name="Forget").click()

    assert "Forgotten" in page.inner_text("#notice")
    assert page.inner_text("#empty") == "No candidates await review."
    page.goto(world.base + "/memories?q=staging cluster")
    assert "The staging cluster is rebuilt every Sunday." in page.inner_text("#memories")
