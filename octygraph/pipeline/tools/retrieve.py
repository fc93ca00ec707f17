"""Search tools (both loops) and `done`. Docstrings are written for the model that picks them.

Each tool returns text for the model and, as its artifact, the records the assembly ranks. The database is
reached through the runtime context, never through arguments the model sees.
"""

from __future__ import annotations

from langchain_core.tools import tool
from langgraph.prebuilt import ToolRuntime

from octygraph.pipeline.context import Context
from octygraph.pipeline.tools import ops
from octygraph.pipeline.tools.ops import Artifact


def _out(result: ops.ToolResult) -> Artifact:
    return result.text, result.records


@tool(response_format="content_and_artifact")
def search_entity(name: str, runtime: ToolRuntime[Context]) -> Artifact:
    """Look up a person, organisation, project, tool or account by name.

    Returns the entity's id and profile with its top 15 relationships. Use the id with get_relationships,
    search_facts, search_events, search_processes or get_instructions.

    Args:
        name: The entity's name as the user wrote it, e.g. "Peter" or "Anderson".
    """
    return _out(ops.search_entity(runtime.context.memory(), name))


@tool(response_format="content_and_artifact")
def get_relationships(entity_id: str, runtime: ToolRuntime[Context]) -> Artifact:
    """List everything linked to an entity (up to 25 edges with the node at the other end).

    Args:
        entity_id: An id returned by search_entity.
    """
    return _out(ops.get_relationships(runtime.context.memory(), entity_id))


@tool(response_format="content_and_artifact")
def search_facts(
    query: str, runtime: ToolRuntime[Context], entity_id: str | None = None
) -> Artifact:
    """Find stored facts and opinions by meaning (top 10), e.g. to answer a question, or to find the old
    memory a correction replaces.

    Args:
        query: What the fact is about, in plain words, e.g. "who handles the Anderson account".
        entity_id: Optional id from search_entity to keep only facts about that entity.
    """
    return _out(ops.search_facts(runtime.context.memory(), query, entity_id))


@tool(response_format="content_and_artifact")
def search_events(
    query: str,
    runtime: ToolRuntime[Context],
    entity_id: str | None = None,
    days: int | None = None,
) -> Artifact:
    """Find things that happened, and dated plans (top 20).

    Args:
        query: What happened, e.g. "Anderson article finished".
        entity_id: Optional id from search_entity to keep only events about that entity.
        days: Optional: only events from the last N days.
    """
    return _out(ops.search_events(runtime.context.memory(), query, entity_id, days))


@tool(response_format="content_and_artifact")
def search_processes(
    query: str, runtime: ToolRuntime[Context], entity_id: str | None = None
) -> Artifact:
    """Find procedures, rules and tool-usage instructions (top 10). Expect several results.

    Args:
        query: The task or procedure, e.g. "how to publish an article" or "deploying the API".
        entity_id: Optional id from search_entity for rules specific to that entity.
    """
    return _out(ops.search_processes(runtime.context.memory(), query, entity_id))


@tool(response_format="content_and_artifact")
def get_instructions(
    runtime: ToolRuntime[Context], topic: str | None = None, entity_id: str | None = None
) -> Artifact:
    """Get standing instructions about a topic, or those linked to an entity. Give at least one argument.

    Args:
        topic: Optional topic, e.g. "deployment" or "code review".
        entity_id: Optional id from search_entity.
    """
    return _out(ops.get_instructions(runtime.context.memory(), topic, entity_id))


@tool
def done(stored_count: int | None = None) -> str:
    """Call when the task is finished: you found enough to answer, or stored everything worth storing,
    or more calls will not help.

    Args:
        stored_count: When storing, how many memories you stored.
    """
    if stored_count is None:
        return "Retrieval complete."
    return f"Storage complete ({stored_count} stored)."
