"""The tools of the two loops (seed's Tools Reference) and the operations behind them."""

from octygraph.tools.retrieve import RETRIEVE_TOOLS
from octygraph.tools.store import STORE_TOOLS

__all__ = ["RETRIEVE_TOOLS", "STORE_TOOLS"]
