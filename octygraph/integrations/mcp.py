"""`octygraph mcp`: the project's memory as an MCP server over stdio, for Claude to ask and tell explicitly.

The hooks recall and store on every prompt without being asked; these tools are for the moments the model
knows it needs something: look a memory up, remember a fact or a rule the user just stated, forget one that
is wrong, or check the standing rules. Forgetting archives (restorable from `octygraph ui` or the CLI).
"""

from __future__ import annotations

import threading
from typing import Literal

from mcp.server.fastmcp import FastMCP

from octygraph.config.settings import Settings
from octygraph.memory import review
from octygraph.memory.candidates import is_candidate
from octygraph.store import NODE_TYPES, AdminStore, Node

INSTRUCTIONS = (
    "Long-term memory of this project (octygraph). Relevant memories are already injected into each "
    "prompt; use these tools when you need more, when the user asks you to remember or forget something, "
    "or to check the standing rules before acting. Memory ids look like 'be8107fe382b4e1d'."
)


def _line(node: Node, match: int | None = None) -> str:
    extra = f" (match {match}%)" if match is not None else ""
    scope = (
        f" scope {node.scope:g}"
        if node.node_type == "instruction" and node.scope is not None
        else ""
    )
    unsure = ", candidate" if is_candidate(node) else ""
    return f"[{node.id}] ({review.kind(node)}{scope}{unsure}) {node.content}{extra}"


class MemoryTools:
    """Opens the project's store on first use and keeps it for the server's life (loading the model once)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._store: AdminStore | None = None
        self._lock = threading.Lock()

    def store(self) -> AdminStore:
        with self._lock:
            if self._store is None:
                from octygraph.store.opening import open_store

                self._store = open_store(self.settings)
            return self._store

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None


def build_server(settings: Settings) -> tuple[FastMCP, MemoryTools]:
    """The MCP server and the store holder behind its tools."""
    tools = MemoryTools(settings)
    server = FastMCP("octygraph", instructions=INSTRUCTIONS)

    @server.tool()
    def search_memory(query: str, type: str | None = None, limit: int = 10) -> str:
        """Search this project's long-term memory by meaning and keywords.

        Use it when the injected context lacks something the user refers to: a person, a service, a past
        decision, a convention. `query` is plain words ("who owns billing", "deploy checklist").
        `type` narrows to one of: fact, event, opinion, instruction, plan, entity (default: all but
        entity). Returns the best matches, best first, one per line as "[id] (type/subtype) content
        (match N%)", where N (0-100) says how closely it matches the query. A memory marked
        "candidate" was said once in passing and is not confirmed: check it with the user before relying
        on it.
        """
        if type is not None and type not in NODE_TYPES:
            return f"Unknown type {type!r}; use one of: {', '.join(NODE_TYPES)}."
        types = [type] if type else [t for t in NODE_TYPES if t != "entity"]
        hits = tools.store().search(query, types=types, limit=max(1, min(limit, 50)))
        if not hits:
            return "No stored memory matches."
        return "\n".join(_line(h.node, h.match) for h in hits)

    @server.tool()
    def remember(
        content: str,
        kind: Literal["fact", "rule"] = "fact",
        entities: list[str] | None = None,
        applies_everywhere: bool = False,
    ) -> str:
        """Store one memory explicitly, in the user's words, when the user asks you to remember something.

        `kind` is "fact" for something true about the project or the people in it ("Maria owns the
        billing service"), or "rule" for a standing instruction on how to work ("run the linter before
        committing"). `entities` names the people, services or tools it is about, so it is found by
        them later. Set `applies_everywhere` for a rule that holds in every situation of this project.
        Returns the stored memory's id; a new rule that replaces or contradicts a standing one says so.
        """
        store = tools.store()
        if kind != "rule":
            node = review.remember(store, content, entities=entities, source="claude")
            return f"Remembered {_line(node)}"
        node = review.remember(
            store,
            content,
            node_type="instruction",
            subtype="rule",
            entities=entities,
            scope=1.0 if applies_everywhere else 0.5,
            source="claude",
        )
        lines = [f"Remembered {_line(node)}"]
        for verdict, other in review.reconcile_rule(store, node):
            if verdict == "SUPERSEDES":
                lines.append(f"It replaces the earlier rule {_line(other)}")
            else:
                lines.append(
                    f"It contradicts the standing rule {_line(other)}; both are kept and flagged "
                    "for the user to resolve (octygraph ui, Contradictions). Mention it to the user."
                )
        return "\n".join(lines)

    @server.tool()
    def forget(memory_id: str) -> str:
        """Forget one memory by id, when the user says it is wrong or no longer wanted.

        Find the id with search_memory or list_rules first. The memory is archived: it is no longer
        recalled, and the user can restore it from the review page (`octygraph ui`).
        """
        node = review.forget(tools.store(), memory_id)
        return f"Forgot [{node.id}] {node.content} (archived; restorable)."

    @server.tool()
    def list_rules(limit: int = 30) -> str:
        """List the standing rules (instructions) of this project, broadest first.

        Check them before acting when the user refers to "our conventions" or "the usual process", or
        before adding a rule, to avoid a duplicate or a contradiction. One rule per line as
        "[id] (instruction/subtype scope S) text"; scope 1 applies everywhere.
        """
        rules = review.standing_rules(tools.store(), max(1, min(limit, 200)))
        if not rules:
            return "No standing rules are stored."
        return "\n".join(_line(n) for n in rules)

    return server, tools


def serve_stdio(settings: Settings) -> None:
    """Run until the client closes stdin."""
    server, tools = build_server(settings)
    try:
        server.run("stdio")
    finally:
        tools.close()
