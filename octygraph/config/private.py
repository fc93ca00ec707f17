"""Private folders: everything octygraph creates on disk is for the user alone (folders 0700)."""

from __future__ import annotations

import os
from pathlib import Path


def private_mkdir(path: str | os.PathLike[str]) -> Path:
    """Create `path` and any missing parents as 0700 folders; folders that exist are left as they are.

    `Path.mkdir(mode=..., parents=True)` gives the parents the default mode (often 0755), so each
    missing level is made here.
    """
    path = Path(path)
    missing: list[Path] = []
    current = path
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue  # made meanwhile by a concurrent process
        try:
            folder.chmod(0o700)  # in case the umask took bits away
        except OSError:
            pass
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True)  # raises the right error (a file is in the way)
    return path
