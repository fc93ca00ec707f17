"""octygraph: long-term memory for AI coding assistants, as a LangGraph state machine."""

__version__ = "0.1.0"
