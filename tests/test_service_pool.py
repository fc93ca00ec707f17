"""The service's store pool: a database opened for the first time has its rules' trigger clauses embedded
in the background, so the relevance judge finds them in its cache instead of embedding them per prompt."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np

from octygraph.config.settings import Settings
from octygraph.embeddings import local as vectors
from octygraph.embeddings import local_embeddings
from octygraph.service.pool import StorePool
from octygraph.store.opening import open_store


def test_opening_a_database_primes_its_rules_trigger_clauses(home: Path) -> None:
    settings = Settings.from_env(project_id="pool")
    trigger = "deploying the pricing worker to staging"
    other = "releasing the mobile app on a Friday"
    with open_store(settings) as store:
        store.add_node("instruction", f"Always run the contract tests before {trigger}.")
        store.add_node("instruction", f"Ask Priya first when {other}")
        store.add_node("instruction", "Use pnpm, not npm")  # no trigger clause
        superseded = store.add_node("instruction", "Tag the release after merging the branch")
        store.supersede(superseded.id, "Tag every release by hand")
    for text in (trigger, other, "merging the branch"):
        vectors._CACHE.pop(text, None)
    pool = StorePool()

    async def lease() -> None:
        async with pool.lease(settings):
            pass

    asyncio.run(lease())
    deadline = time.monotonic() + 60
    while pool.stats()["priming"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool.stats()["priming"] == 0
    for text in (trigger, other):
        assert text in vectors._CACHE
        # The very vector the judge would compute for the clause.
        expected = local_embeddings().embed_array([text])[0]
        assert np.allclose(vectors._CACHE[text], expected, atol=1e-5)
    assert "merging the branch" not in vectors._CACHE  # a superseded rule is not primed
    pool.close_all()
