"""`octygraph mcp` driven by the MCP SDK's own stdio client, as Claude Code would run it."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from octygraph.claude.install import PLUGIN_EXECUTABLE
from tests.conftest import cli_json
from tests.test_real_claude import REPO

TOOLS = {"search_memory", "remember", "forget", "list_rules"}


def text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def server(home: Path) -> StdioServerParameters:
    env = {**os.environ, "OCTYBOT_HOME": str(home), "OCTYBOT_PROJECT": "proj"}
    return StdioServerParameters(command=sys.executable, args=["-m", "octygraph", "mcp"], env=env)


async def session_round_trip(params: StdioServerParameters) -> dict[str, str]:
    seen: dict[str, str] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.serverInfo.name == "octygraph"
        assert init.instructions and "long-term memory" in init.instructions.lower()

        listed = await session.list_tools()
        names = {t.name for t in listed.tools}
        assert names == TOOLS
        for tool in listed.tools:
            assert tool.description and len(tool.description) > 80, tool.name
        remember_schema = next(t for t in listed.tools if t.name == "remember").inputSchema
        assert remember_schema["required"] == ["content"]

        stored = await session.call_tool(
            "remember",
            {"content": "Maria Zorbex owns the billing service.", "entities": ["Maria Zorbex"]},
        )
        assert not stored.isError, text(stored)
        seen["remember"] = text(stored)
        rule = await session.call_tool(
            "remember",
            {
                "content": "Run the linter before every commit.",
                "kind": "rule",
                "applies_everywhere": True,
            },
        )
        assert not rule.isError, text(rule)

        clash = await session.call_tool(
            "remember", {"content": "Never run the linter before commits.", "kind": "rule"}
        )
        seen["clash"] = text(clash)

        found = await session.call_tool("search_memory", {"query": "who owns billing"})
        seen["search"] = text(found)
        rules = await session.call_tool("list_rules", {})
        seen["rules"] = text(rules)

        memory_id = seen["remember"].split("[", 1)[1].split("]", 1)[0]
        gone = await session.call_tool("forget", {"memory_id": memory_id})
        assert not gone.isError, text(gone)
        seen["forget"] = text(gone)
        seen["after"] = text(
            await session.call_tool("search_memory", {"query": "who owns billing"})
        )

        bad = await session.call_tool("forget", {"memory_id": "no-such-id"})
        assert bad.isError
        seen["bad"] = text(bad)
        seen["id"] = memory_id
    return seen


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_sdk_client_lists_the_tools_and_round_trips_a_memory(home: Path) -> None:
    seen = anyio.run(session_round_trip, server(home))

    assert "Maria Zorbex owns the billing service." in seen["search"]
    assert seen["id"] in seen["search"]
    assert re.search(r"\(match (\d|[1-9]\d|100)%\)$", seen["search"].splitlines()[0]), seen[
        "search"
    ]
    assert "Run the linter before every commit." in seen["rules"] and "scope 1" in seen["rules"]
    assert "contradicts the standing rule" in seen["clash"]
    assert "Run the linter before every commit." in seen["clash"]
    assert "archived" in seen["forget"]
    assert "Maria Zorbex owns" not in seen["after"]
    assert "No memory with id 'no-such-id'" in seen["bad"]
    # The memory was archived, not deleted: the CLI sees it, and can bring it back.
    env = {"OCTYBOT_HOME": str(home), "OCTYBOT_PROJECT": "proj"}
    shown = cli_json("memory", "show", seen["id"], "--json", env=env)
    assert shown["node"]["superseded_by"] == "archived"
    assert shown["node"]["source"] == "claude"


def test_the_plugin_registers_the_server() -> None:
    manifest = json.loads((REPO / "plugin" / ".claude-plugin" / "plugin.json").read_text())
    entry = manifest["mcpServers"]["octygraph"]
    assert entry == {"command": PLUGIN_EXECUTABLE, "args": ["mcp"]}
