"""The user's own standard, as labelled examples: what they approved, corrected or forgot.

Each review of a candidate memory (approve, edit, forget), and each forget of any memory, is one line of
`$OCTYBOT_HOME/learning/examples.jsonl`: the memory's text (secrets redacted as in memories), a label
(1: worth keeping, 0: not), the action and the time. The file is per install, private to the user
(folder 0700, file 0600), and `octygraph memory learn` fits the storage verdict's message layer to it
(`octygraph.memory.learning`).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal

from octygraph.config.private import private_mkdir
from octygraph.config.settings import Settings
from octygraph.safety.checks import redact_secrets
from octygraph.store import Node

Action = Literal["approve", "edit", "forget"]
LABELS: Final[dict[str, int]] = {"approve": 1, "edit": 1, "forget": 0}
LEARNING_DIR: Final = "learning"
EXAMPLES_FILE: Final = "examples.jsonl"


def learning_dir(home: Path) -> Path:
    """Where per-install learning state lives: the examples and the user's own verdict weights."""
    return home / LEARNING_DIR


def examples_path(home: Path) -> Path:
    return learning_dir(home) / EXAMPLES_FILE


@dataclass(frozen=True)
class Example:
    """One labelled example of the user's standard."""

    text: str
    label: int
    """1 when the user kept it (approved or corrected), 0 when they forgot it."""
    action: str
    time: str
    """When it was recorded (ISO 8601, UTC)."""
    candidate: bool
    """Whether the memory was a candidate when the user acted on it."""
    project: str = ""
    node_type: str = ""


def record(
    home: Path,
    text: str,
    action: Action,
    *,
    candidate: bool,
    project: str = "",
    node_type: str = "",
    when: datetime | None = None,
) -> Example | None:
    """Append one example (its text redacted); None when nothing is left of the text to learn from."""
    clean, _ = redact_secrets(text.strip())
    if not clean.strip():
        return None
    example = Example(
        text=clean,
        label=LABELS[action],
        action=action,
        time=(when or datetime.now(UTC)).isoformat(timespec="seconds"),
        candidate=candidate,
        project=project,
        node_type=node_type,
    )
    path = examples_path(home)
    private_mkdir(path.parent)
    line = json.dumps(asdict(example), ensure_ascii=False, sort_keys=True) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(
            fd, line.encode("utf-8")
        )  # one write per line: appends from two processes interleave whole
    finally:
        os.close(fd)
    try:
        path.chmod(0o600)  # in case the file was made by hand, or the umask took bits away
    except OSError:
        pass
    return example


def record_decision(
    settings: Settings, node: Node, action: Action, *, candidate: bool
) -> Example | None:
    """`record` the user's decision on `node`, in the project and home `settings` name."""
    return record(
        settings.home,
        node.content,
        action,
        candidate=candidate,
        project=settings.project_id,
        node_type=node.node_type,
    )


def load(home: Path) -> list[Example]:
    """Every recorded example, oldest first; lines that do not parse are skipped."""
    path = examples_path(home)
    if not path.exists():
        return []
    out: list[Example] = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                data = json.loads(line)
                example = Example(
                    text=str(data["text"]),
                    label=int(data["label"]),
                    action=str(data["action"]),
                    time=str(data["time"]),
                    candidate=bool(data.get("candidate", False)),
                    project=str(data.get("project", "")),
                    node_type=str(data.get("node_type", "")),
                )
            except (ValueError, KeyError, TypeError):
                continue
            if example.label in (0, 1) and example.text.strip():
                out.append(example)
    return out
