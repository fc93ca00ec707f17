"""Claude Code integration: installer, hook stdin/stdout, stored-memory manifest, modes, usage reports.

Nothing here runs the memory pipeline; these modules are the thin, dependable edges around it. Submodules
are imported on demand (`from octygraph.claude import hook_io`) so a hook pays only for what it uses.
"""

from __future__ import annotations
