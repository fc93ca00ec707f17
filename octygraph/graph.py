"""The memory pipeline as one LangGraph state machine. All wiring is here.

    classify -> plan -+-> retrieve_loop -> safety_nets -> assemble -> curate -> END
                      +-> store_loop -> force_store -> reconcile ------------> END

`retrieve_loop` and `store_loop` run in the same superstep; the run ends when both branches are done.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from octygraph.context import Context
from octygraph.nodes.assemble import assemble
from octygraph.nodes.classify import classify
from octygraph.nodes.curate import curate
from octygraph.nodes.loops import retrieve_loop, store_loop
from octygraph.nodes.plan import plan
from octygraph.nodes.safety_nets import safety_nets
from octygraph.nodes.storing import force_store, reconcile
from octygraph.state import InputState, OutputState, PipelineState

NODE_NAMES = (
    "classify",
    "plan",
    "retrieve_loop",
    "store_loop",
    "safety_nets",
    "assemble",
    "curate",
    "force_store",
    "reconcile",
)


def build_graph() -> StateGraph[PipelineState, Context, InputState, OutputState]:
    """The uncompiled builder; compile it with a checkpointer (CLI, hook) or without (Studio)."""
    builder = StateGraph(
        PipelineState, context_schema=Context, input_schema=InputState, output_schema=OutputState
    )
    builder.add_node("classify", classify)
    builder.add_node("plan", plan)
    builder.add_node("retrieve_loop", retrieve_loop)
    builder.add_node("store_loop", store_loop)
    builder.add_node("safety_nets", safety_nets)
    builder.add_node("assemble", assemble)
    builder.add_node("curate", curate)
    builder.add_node("force_store", force_store)
    builder.add_node("reconcile", reconcile)

    builder.add_edge(START, "classify")
    builder.add_edge("classify", "plan")
    # Fan out: both halves start in the same superstep.
    builder.add_edge("plan", "retrieve_loop")
    builder.add_edge("plan", "store_loop")
    # Retrieve half.
    builder.add_edge("retrieve_loop", "safety_nets")
    builder.add_edge("safety_nets", "assemble")
    builder.add_edge("assemble", "curate")
    builder.add_edge("curate", END)
    # Store half.
    builder.add_edge("store_loop", "force_store")
    builder.add_edge("force_store", "reconcile")
    builder.add_edge("reconcile", END)
    return builder
