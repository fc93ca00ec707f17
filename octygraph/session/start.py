"""The SessionStart block: what a new session should know before its first prompt.

A session starts blank; the prompt hook only brings what a prompt's topic calls for. At session start
octygraph gives the project's standing rules and broad facts, and what recent sessions decided, ranked
by scope, by how often a prompt was given it, needed it or restated it (`access_count` in its
attributes; the block's own gives do not count, or it would keep itself) and by recency, within
`OCTY_START_BUDGET` characters. A memory the block gave `STALE_SHOWS` times with no use since leaves
it until a prompt needs it again. What the session already has is left out: what its
ledger says it was given (`SessionLog`), and what the CLAUDE.md files and Claude Code's own auto-memory
index, which Claude Code loads itself, already state.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from pathlib import Path

from octygraph.config.settings import git_root
from octygraph.memory.candidates import is_candidate
from octygraph.memory.uses import access_count, shown_unused, write_noted
from octygraph.pipeline.nodes.assemble import SECTION_ORDER, _section, render, rendered_ids
from octygraph.pipeline.state import Record
from octygraph.pipeline.tools.ops import to_record
from octygraph.store import GraphStore, Node
from octygraph.store.schema import DEFAULT_SCOPE

HEADER = "Standing memories of this project from earlier sessions (octygraph):"
POOL = 500
"""Newest current memories read as candidates."""
MIN_SCOPE = 0.5
"""Instructions and facts this broad qualify; narrower ones are left to the prompts that need them.
(Narrower ones given to two prompts used to qualify too: leave-project-out through the hook path,
without that the training set's start blocks went from 175 records to 21 and the start precision
of all projects from 8% to 24%, for -2.4 points of cross-session recall, -5.4 to +0.0.)"""
DECISION_DAYS = 30
"""Decisions (events) qualify while they are this recent."""
STALE_SHOWS = 3
"""A memory this many blocks gave with no prompt needing it since no longer qualifies (until a use)."""
HALF_LIFE_DAYS = 14.0
SECTION_LIMIT = 12
COVERED_SHARE = 0.8
FILE_LIMIT = 200_000
"""Characters read of each CLAUDE.md-like file."""

_WORD = re.compile(r"[a-z0-9][a-z0-9_'-]*")
_STOP = frozenset(
    """a about after all also am an and any are as at be been before but by can could did do does
    for from had has have how i if in into is it its let me my no not of on once only or our out
    so some than that the their them then there these they this those to too up us was we were
    what when where which while who why will with would you your""".split()
)


def _days_since(stamp: str | None, today: date) -> float:
    try:
        when = datetime.fromisoformat(str(stamp)[:19]).date()
    except (TypeError, ValueError):
        return 365.0
    return max(0.0, float((today - when).days))


def _scope(node: Node) -> float:
    if node.scope is not None:
        return float(node.scope)
    return DEFAULT_SCOPE.get(node.node_type, 0.3)


def qualifies(node: Node, today: date) -> bool:
    """Broad rules and facts, recent decisions and upcoming plans, unless given often and never used."""
    if node.superseded_by or node.node_type == "entity" or node.valid_until or is_candidate(node):
        return False
    if shown_unused(node) >= STALE_SHOWS:
        return False
    if node.node_type == "instruction":
        return _scope(node) >= MIN_SCOPE
    if node.node_type in ("fact", "opinion"):
        return node.scope is not None and node.scope >= MIN_SCOPE
    if node.node_type == "event":
        return node.subtype == "decision" and _days_since(node.created_at, today) <= DECISION_DAYS
    if node.node_type == "plan":
        return bool(node.valid_from) and str(node.valid_from)[:10] >= today.isoformat()
    return False


def rank(node: Node, today: date) -> float:
    """Scope first, then how often it was given or restated, then recency (halving every 14 days)."""
    last = node.attributes.get("last_accessed") or node.created_at
    recency = 0.5 ** (_days_since(str(last), today) / HALF_LIFE_DAYS)
    return _scope(node) + 0.2 * math.log1p(access_count(node)) + 0.3 * recency


def content_words(text: str) -> set[str]:
    words = (w.strip("'-") for w in _WORD.findall(text.casefold()))
    return {w for w in words if w not in _STOP and (len(w) > 2 or w.isdigit())}


def passages(texts: Iterable[str]) -> list[set[str]]:
    """The content words of every line and every paragraph of `texts`."""
    found: list[set[str]] = []
    for text in texts:
        for chunk in [*text.splitlines(), *re.split(r"\n\s*\n", text)]:
            words = content_words(chunk)
            if words:
                found.append(words)
    return found


def already_stated(content: str, known: Sequence[set[str]]) -> bool:
    """Whether a file the session loads already says `content`.

    A simple overlap test: at least 80% of the memory's content words (lower-cased words of three or
    more letters that are not function words, and numbers) appear together in one line or one paragraph of those
    files. Rewordings are missed and a long paragraph may cover a short memory by chance; both are cheap
    errors (a repeated line, or a line left to the prompt hook).
    """
    words = content_words(content)
    if not words:
        return False
    need = COVERED_SHARE * len(words)
    return any(len(words & passage) >= need for passage in known)


def _config_dir(env: Mapping[str, str]) -> Path:
    configured = env.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured).expanduser()
    home = env.get("HOME")
    return (Path(home) if home else Path.home()) / ".claude"


def loaded_files(cwd: Path, env: Mapping[str, str]) -> list[Path]:
    """The memory files Claude Code loads for a session in `cwd` (those that exist).

    CLAUDE.md, .claude/CLAUDE.md and CLAUDE.local.md in `cwd` and each parent up to the git root (else
    the filesystem root), the user's CLAUDE.md in Claude Code's config folder (`CLAUDE_CONFIG_DIR`, else
    ~/.claude), and the project's auto-memory index there (projects/<path with "/" as "-">/memory/MEMORY.md).
    """
    cwd = cwd.resolve()
    root = git_root(cwd)
    folders = [cwd]
    for parent in cwd.parents if root != cwd else ():
        folders.append(parent)
        if parent == root:
            break
    found = [
        folder / name
        for folder in folders
        for name in ("CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md")
    ]
    config = _config_dir(env)
    found.append(config / "CLAUDE.md")
    for project in dict.fromkeys(p for p in (root, cwd) if p is not None):
        # Claude Code names the folder after the path with "/" (and other punctuation) as "-".
        for slug in (str(project).replace("/", "-"), re.sub(r"[^A-Za-z0-9]", "-", str(project))):
            found.append(config / "projects" / slug / "memory" / "MEMORY.md")
    return [p for p in dict.fromkeys(found) if _is_file(p)]


def _is_file(path: Path) -> bool:
    """Whether `path` is a file; one too long to look at ("File name too long") is not."""
    try:
        return path.is_file()
    except OSError:
        return False


def loaded_text(cwd: Path, env: Mapping[str, str]) -> list[str]:
    texts = []
    for path in loaded_files(cwd, env):
        try:
            with path.open(encoding="utf-8", errors="replace") as f:
                texts.append(f.read(FILE_LIMIT))
        except OSError:
            continue
    return texts


def build(
    store: GraphStore,
    *,
    budget: int,
    seen: set[str] | frozenset[str] = frozenset(),
    known: Sequence[set[str]] = (),
    today: date | None = None,
) -> tuple[str, list[str]]:
    """The block's text and the ids of the memories in it ("", [] when nothing qualifies).

    Args:
        store: The project's memory.
        budget: Most characters of the text.
        seen: Ids the session was already given.
        known: `passages` of the files the session loads; memories they state are left out.
        today: The day recency counts from.
    """
    write_noted(store)  # the uses prompts noted since, so that they rank this block
    today = today or datetime.now(UTC).date()
    today_s = today.isoformat()
    nodes = [
        n
        for n in store.list_nodes(limit=POOL, include_superseded=False)
        if n.id not in seen and qualifies(n, today) and not already_stated(n.content, known)
    ]
    nodes.sort(key=lambda n: rank(n, today), reverse=True)
    sections: dict[str, list[Record]] = {}
    wordings: set[str] = set()
    for node in nodes:
        wording = " ".join(node.content.casefold().split())
        if wording in wordings:
            continue
        wordings.add(wording)
        record: Record = to_record(node, "session_start")
        name = _section(record, today_s)
        if name == "events" and node.node_type == "plan":
            record["promoted_from_plan"] = True
        group = sections.setdefault(name, [])
        if len(group) < SECTION_LIMIT:
            group.append(record)
    ordered = {name: sections[name] for name in SECTION_ORDER if name in sections}
    text = render(ordered, budget, header=HEADER)
    return text, rendered_ids(ordered, text)
