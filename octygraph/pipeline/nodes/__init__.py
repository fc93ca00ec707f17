"""Graph nodes, one module per stage family."""
