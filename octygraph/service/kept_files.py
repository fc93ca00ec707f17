"""What the service's pools of open database files share: the cap on how many they keep, and a file's
identity, so a replaced or removed file gets fresh connections.

Light on purpose: the checkpointer pool loads this before the service listens, ahead of the stores.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def max_open_stores(env: Mapping[str, str] | None = None) -> int:
    """`OCTY_SERVE_MAX_STORES` (default 32): open stores kept across every database the service serves.

    Without a cap each new project kept its stores (three descriptors each: the database, its WAL and
    shared-memory files) for the service's life. A bad value falls back to the default.
    """
    from octygraph.config import setting_table as table

    return int(table.lenient("OCTY_SERVE_MAX_STORES", os.environ if env is None else env))


def file_identity(path: Path) -> tuple[int, int] | None:
    """The file's (device, inode), or None when it is gone: a replaced file gets a new identity."""
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino)
