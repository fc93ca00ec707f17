"""The `octygraph` command (`scripts/octygraph` calls `main`).

`octygraph hook prompt|stop|session-start|session-end` is what Claude Code runs on every prompt, as a new process:
it is routed to the thin client before typer, rich, LangChain or NumPy are imported. Every other command goes to the
typer application in `octygraph.integrations.cli`.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    """What the `octygraph` command runs (`scripts/octygraph`)."""
    args = sys.argv[1:3]
    from octygraph.service.protocol import HOOK_EVENTS

    if len(args) == 2 and args[0] == "hook" and args[1] in HOOK_EVENTS and len(sys.argv) == 3:
        if os.environ.get("OCTY_NO_HOOKS") == "1":
            # Set around our own `claude -p` fallback calls, so a user-level hook cannot recurse.
            os._exit(0)
        from octygraph.service.client import hook_main

        hook_main(args[1])  # exits the process, always with 0
    from octygraph.integrations.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
