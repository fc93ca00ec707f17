"""The memory pipeline as one LangGraph state machine. All wiring is here.

    classify -> plan -+-> retrieve: [retrieve_loop -+-> assemble -> curate] -> END
                      |             [safety_nets ---+                     ]
                      +-> store:    [judge_storage -> store_loop -> force_store -> reconcile] -> END
                                                   (only when there is something to store: `after_judging`)

Inside `retrieve`, the loop and the deterministic safety nets search side by side; assembly waits for
both. What to store is judged first in `store`, so the answer never waits for the storage judgement.

Each half is a compiled subgraph, one node of the parent graph: the parent's superstep barrier falls
around the halves, not inside them, so retrieval never waits for storage. The runner answers as soon
as `retrieve` has its context; `store` finishes after the reply, checkpointed under its own namespace.
"""

from __future__ import annotations

import functools

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from octygraph.pipeline.context import Context
from octygraph.pipeline.nodes.assemble import assemble
from octygraph.pipeline.nodes.classify import classify
from octygraph.pipeline.nodes.curate import curate
from octygraph.pipeline.nodes.judge_storage import judge_storage
from octygraph.pipeline.nodes.loops import retrieve_loop, store_loop
from octygraph.pipeline.nodes.plan import plan
from octygraph.pipeline.nodes.safety_nets import safety_nets
from octygraph.pipeline.nodes.storing import force_store, reconcile
from octygraph.pipeline.state import (
    HalfInput,
    InputState,
    OutputState,
    PipelineState,
    RetrieveOutput,
    StoreOutput,
)

RETRIEVE_NODES = ("retrieve_loop", "safety_nets", "assemble", "curate")
STORE_NODES = ("judge_storage", "store_loop", "force_store", "reconcile")
NODE_NAMES = ("classify", "plan", *RETRIEVE_NODES, *STORE_NODES)
"""The pipeline's stages (docs/architecture.md): the parent's nodes and the halves' inner nodes."""

Half = CompiledStateGraph[PipelineState, Context, HalfInput, PipelineState]


@functools.cache
def retrieve_half() -> Half:
    """retrieve_loop beside safety_nets, then assemble -> curate, as one subgraph.

    The nets need only the prompt and the store, so they search while the loop does: assembly waits
    for both (their `retrieved` and `tool_calls` meet through the state's reducers)."""
    builder = StateGraph(
        PipelineState, context_schema=Context, input_schema=HalfInput, output_schema=RetrieveOutput
    )
    builder.add_node("retrieve_loop", retrieve_loop)
    builder.add_node("safety_nets", safety_nets)
    builder.add_node("assemble", assemble)
    builder.add_node("curate", curate)
    builder.add_edge(START, "retrieve_loop")
    builder.add_edge(START, "safety_nets")
    builder.add_edge(["retrieve_loop", "safety_nets"], "assemble")
    builder.add_edge("assemble", "curate")
    builder.add_edge("curate", END)
    return builder.compile(name="retrieve")  # type: ignore[return-value]


@functools.cache
def store_half() -> Half:
    """judge_storage -> store_loop -> force_store -> reconcile, as one subgraph."""
    builder = StateGraph(
        PipelineState, context_schema=Context, input_schema=HalfInput, output_schema=StoreOutput
    )
    builder.add_node("judge_storage", judge_storage)
    builder.add_node("store_loop", store_loop)
    builder.add_node("force_store", force_store)
    builder.add_node("reconcile", reconcile)
    builder.add_edge(START, "judge_storage")
    builder.add_conditional_edges("judge_storage", after_judging, ["store_loop", END])
    builder.add_edge("store_loop", "force_store")
    builder.add_edge("force_store", "reconcile")
    builder.add_edge("reconcile", END)
    return builder.compile(name="store")  # type: ignore[return-value]


def after_judging(state: PipelineState) -> str:
    """`store_loop`, or the store half's end when there is nothing to store.

    Each later store node returns at once unless L1 said to store, or the judgement found items,
    candidates or rules to store (see `store_loop`, `force_store`, `reconcile`); ending here saves their
    three steps and checkpoint writes, which would compete with retrieval for the interpreter.
    """
    classification = state.get("classification")
    storage = state.get("storage")
    if (
        classification is None
        or classification.operations.store
        or (storage is not None and (storage.items or storage.candidates))
        or state.get("instructions")
    ):
        return "store_loop"
    return END


def build_graph() -> StateGraph[PipelineState, Context, InputState, OutputState]:
    """The uncompiled builder; compile it with a checkpointer (CLI, hook) or without (Studio)."""
    builder = StateGraph(
        PipelineState, context_schema=Context, input_schema=InputState, output_schema=OutputState
    )
    builder.add_node("classify", classify)
    builder.add_node("plan", plan)
    builder.add_node("retrieve", retrieve_half())
    builder.add_node("store", store_half())

    builder.add_edge(START, "classify")
    builder.add_edge("classify", "plan")
    # Fan out: both halves start in the same superstep, and neither waits for the other. The store
    # half always starts (it judges what to store, and ends there when there is nothing).
    builder.add_edge("plan", "retrieve")
    builder.add_edge("plan", "store")
    builder.add_edge("retrieve", END)
    builder.add_edge("store", END)
    return builder


@functools.cache
def replay_graph() -> CompiledStateGraph[PipelineState, Context, PipelineState, PipelineState]:
    """assemble -> curate alone: `trace replay` runs them again on a run's checkpointed retrieval."""
    builder = StateGraph(PipelineState, context_schema=Context)
    builder.add_node("assemble", assemble)
    builder.add_node("curate", curate)
    builder.add_edge(START, "assemble")
    builder.add_edge("assemble", "curate")
    builder.add_edge("curate", END)
    return builder.compile(name="replay")
