"""The tools of the two loops (seed's Tools Reference), the operations behind them, and their registry."""

from octygraph.pipeline.tools.registry import REGISTRY, tools_for

RETRIEVE_TOOLS = tools_for("retrieve")
STORE_TOOLS = tools_for("store")

__all__ = ["REGISTRY", "RETRIEVE_TOOLS", "STORE_TOOLS", "tools_for"]
