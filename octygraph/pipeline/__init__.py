"""One run of the memory pipeline: the graph, its state and context, its nodes and tools, and what a run keeps (checkpoints, traces)."""
