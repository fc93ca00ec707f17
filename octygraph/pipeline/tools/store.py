"""Write tools of the store loop. Docstrings are written for the model that picks them.

Writes pass the safety checks of `octygraph.pipeline.tools.writes` (secrets redacted, injection refused, content
grounded in the user's words). In a replay (`Context.read_only`) nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from langchain_core.tools import tool
from langgraph.prebuilt import ToolRuntime

from octygraph.pipeline.context import Context
from octygraph.pipeline.tools import writes
from octygraph.pipeline.tools.ops import Artifact, ToolResult


def _grounding(runtime: ToolRuntime[Context]) -> str:
    state = runtime.state if isinstance(runtime.state, dict) else {}
    return str(state.get("prompt", ""))


def _write(runtime: ToolRuntime[Context], write: Callable[..., ToolResult]) -> Artifact:
    """`write` (a write of `writes` with its own fields bound, `functools.partial` checks them) into the
    run's store, checked against the prompt and the run's injection finding, stamped with the run's id;
    in a replay nothing is written."""
    ctx = runtime.context
    if ctx.read_only:
        return "Replay: nothing stored.", []
    result = write(
        ctx.memory(),
        grounding_text=_grounding(runtime),
        injection=ctx.injection,
        run_id=ctx.run_id,
    )
    return result.text, result.records


@tool(response_format="content_and_artifact")
def store_memory(
    type: str,
    content: str,
    runtime: ToolRuntime[Context],
    subtype: str | None = None,
    valid_from: str | None = None,
    entity_ids: list[str] | None = None,
    edge_type: str = "about",
    salience: float = 1.0,
    source: str = "user",
    scope: float | None = None,
    related_ids: list[str] | None = None,
) -> Artifact:
    """Store one new memory and link it to its entities.

    Use the user's own words. One self-contained statement per call.

    Args:
        type: entity, fact, event, opinion, instruction or plan.
        content: The memory, e.g. "Peter handles the Anderson account".
        subtype: fact: definitional|causal|conditional|comparative|negation; event: action|decision|
            conversation|incident|outcome|completed_plan; instruction: instruction|tool_usage|rule|process;
            plan: scheduled|intended|requested; entity: person|org|project|place|tool|process|document|
            concept|event|account.
        valid_from: ISO date (YYYY-MM-DD) for plans and dated events.
        entity_ids: Ids from search_entity of the entities this memory is about.
        edge_type: Edge label to the entities, e.g. about, works_for, works_on.
        salience: Importance multiplier, 1.0 normal.
        source: user, or claude for what the assistant reported.
        scope: Instructions: 1.0 universal, 0.5 team/tool-wide, 0.2 one entity. Plans: 0-1.
        related_ids: Ids of other memories this one relates to.
    """
    ctx = runtime.context
    return _write(
        runtime,
        partial(
            writes.store_memory,
            node_type=type,
            content=content,
            subtype=subtype,
            valid_from=valid_from,
            entity_ids=entity_ids or [],
            edge_type=edge_type,
            salience=salience,
            # The model may not upgrade what the assistant said (the Stop hook) to the user's words.
            source="claude" if ctx.source == "claude" or source == "claude" else ctx.source,
            scope=scope,
            related_ids=related_ids or [],
        ),
    )


@tool(response_format="content_and_artifact")
def supersede_memory(old_id: str, new_content: str, runtime: ToolRuntime[Context]) -> Artifact:
    """Replace an outdated memory with corrected content (the old one is kept, marked as replaced).

    Args:
        old_id: Id of the memory to replace, from search_facts.
        new_content: The corrected statement in the user's words, e.g. "Lisa handles the Anderson account".
    """
    return _write(
        runtime,
        partial(
            writes.supersede_memory,
            old_id=old_id,
            new_content=new_content,
            source=runtime.context.source,
        ),
    )
