"""The three deterministic safety nets, beside the retrieve loop and before assembly (no LLM).

1. Instruction pre-fetch: embedding search over instructions, 10x candidates, deduplicated by normalised
   entity names (so bulk templates like "Bill <client> quarterly" cannot flood), top 15.
2. Broad embedding fallback: pure cosine search across all node types.
3. Global instructions: every current instruction with scope >= 0.8 is a candidate (read by scope, not
   from the nearest neighbours, so none is lost at 20,000 items); the 40 closest go on to assembly,
   where the relevance model decides by topic whether the prompt needs them.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from langgraph.runtime import Runtime

from octygraph.pipeline.context import Context
from octygraph.pipeline.nodes._common import timed, tool_call
from octygraph.pipeline.state import PipelineState, Record
from octygraph.pipeline.tools.ops import to_record
from octygraph.store import GraphStore, Node

PREFETCH_KEEP = 15
PREFETCH_FACTOR = 10
BROAD_FALLBACK_LIMIT = 20
GLOBAL_SCOPE_MIN = 0.8
GLOBAL_LIMIT = 40
GLOBAL_POOL = 2000
INSTRUCTION_POOL = 150

Nets = tuple[list[Record], dict[str, int]]
"""What the nets found, and how many records each net gave."""

_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w'&.-]*(?:\s+[A-Z][\w'&.-]*)*")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def template_key(content: str) -> str:
    """The instruction with names and numbers blanked: look-alike templates share a key."""
    text = _NAME.sub("<name>", content.strip())
    text = _NUMBER.sub("<n>", text)
    return re.sub(r"\s+", " ", text).casefold()


_GLOBAL_RULES: dict[str, tuple[tuple[str, tuple[int, int, int]], list[Node]]] = {}
"""Per database: the global instructions and the revision they were read at."""


def _global_instructions(store: GraphStore) -> list[Node]:
    """Every current instruction with scope >= GLOBAL_SCOPE_MIN (up to GLOBAL_POOL), newest first.

    The resident service asks for them on every prompt; they are read again only when the database
    changed (several hundred rows at 20,000 memories, a few ms each time).
    """
    key = (store.location, store.revision())
    cached = _GLOBAL_RULES.get(key[0])
    if cached is not None and cached[0] == key:
        return cached[1]
    nodes = store.list_nodes(
        types=["instruction"],
        min_scope=GLOBAL_SCOPE_MIN,
        limit=GLOBAL_POOL,
        include_superseded=False,
    )
    _GLOBAL_RULES[key[0]] = (key, nodes)
    return nodes


def _nets(store: GraphStore, prompt: str) -> Nets:
    qvec = store.embed_query(prompt)
    records: list[Record] = []
    counts: dict[str, int] = {}

    # One vector search over instructions feeds nets 1 and 3 (each KNN costs ~10 ms at 20,000 nodes).
    instruction_hits = store.search(
        prompt, types=["instruction"], limit=INSTRUCTION_POOL, mode="vector", query_vec=qvec
    )

    # 1. Instruction pre-fetch: 10x candidates, look-alike templates collapsed, top 15.
    seen_keys: set[str] = set()
    prefetch = 0
    for hit in instruction_hits[: PREFETCH_KEEP * PREFETCH_FACTOR]:
        key = template_key(hit.node.content)
        if key in seen_keys:
            continue
        seen_keys.add(key)
        records.append(to_record(hit.node, "safety_net:instruction_prefetch", cosine=hit.cosine))
        prefetch += 1
        if prefetch >= PREFETCH_KEEP:
            break
    counts["instruction_prefetch"] = prefetch

    # 2. Broad embedding fallback over every type.
    broad = store.search(prompt, limit=BROAD_FALLBACK_LIMIT, mode="vector", query_vec=qvec)
    records += [to_record(h.node, "safety_net:broad_fallback", cosine=h.cosine) for h in broad]
    counts["broad_fallback"] = len(broad)

    # 3. Global instructions: every current one, read by scope rather than by nearness, so none is
    # lost among 20,000 memories; the relevance model decides which apply to this prompt's topic.
    global_nodes = _global_instructions(store)
    cosines = store.cosines(qvec, [n.id for n in global_nodes])
    global_nodes = sorted(global_nodes, key=lambda n: -cosines.get(n.id, 0.0))[:GLOBAL_LIMIT]
    records += [
        to_record(n, "safety_net:global_instruction", cosine=cosines.get(n.id, 0.0))
        for n in global_nodes
    ]
    counts["global_instructions"] = len(global_nodes)
    return records, counts


@timed("safety_nets")
async def safety_nets(state: PipelineState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Add what the loop may have missed: relevant instructions, broad matches, global rules.

    Runs beside the retrieve loop (graph.py): the nets read only the prompt and the store, and their
    searches (SQLite, NumPy) leave the interpreter to the loop's."""
    prompt = state.get("prompt", "")
    classification = state.get("classification")
    if not prompt.strip() or (
        classification is not None and not classification.operations.retrieve
    ):
        return {}
    records, counts = await asyncio.to_thread(_nets, runtime.context.memory(), prompt)
    summary = ", ".join(f"{k}={v}" for k, v in counts.items())
    return {
        "retrieved": records,
        "tool_calls": [tool_call("safety_nets", "safety_nets", {}, summary)],
    }
