"""The graph for LangGraph Studio (`langgraph dev --config graphs/langgraph.json`).

Compiled without a checkpointer: the server supplies its own persistence. With an empty context the run is
offline on the project named by $OCTYBOT_PROJECT (or the working folder), its store opened lazily.
"""

from octygraph.graph import build_graph

graph = build_graph().compile(name="octygraph")
