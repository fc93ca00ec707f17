"""The `octygraph` command line: `app` (typer) and `main`, which the command runs for all but the hooks.

`common` holds what the command modules share; `app` the top-level commands; `memory` the memory group.
"""

from octygraph.integrations.cli.app import app, main, split_slash_arguments

__all__ = ["app", "main", "split_slash_arguments"]
