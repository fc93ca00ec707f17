"""The SessionStart block: what a new session is given before its first prompt.

The hooks run as Claude Code runs them (a new process, JSON on stdin) on a real SQLite file under a
private OCTYBOT_HOME; Claude Code's config folder is a private one too, so the machine's own CLAUDE.md
files play no part.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from octygraph.config.settings import Settings
from octygraph.memory import uses
from octygraph.session import start as session_start
from octygraph.store import MemoryStore, Node
from octygraph.store.opening import open_store
from tests.conftest import run_cli
from tests.test_hooks import hook, prompt_payload

RULE = "From now on never push to main on Fridays"


@pytest.fixture
def claude_dir(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "claude-config"
    folder.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    monkeypatch.setenv("OCTYBOT_PROJECT", "proj")
    return folder


def start_payload(cwd: Path, session: str, source: str = "startup") -> str:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": str(cwd / f"{session}.jsonl"),
            "cwd": str(cwd),
            "hook_event_name": "SessionStart",
            "source": source,
        }
    )


def start(session: str, source: str = "startup", **env: str) -> str:
    """The session-start block's text ("" when the hook printed nothing)."""
    code, out = hook("session-start", start_payload(Path.cwd(), session, source), **env)
    assert code == 0
    if not out:
        return ""
    data = json.loads(out)["hookSpecificOutput"]
    assert data["hookEventName"] == "SessionStart"
    return str(data["additionalContext"])


def records(block: str) -> list[str]:
    return [line[2:] for line in block.splitlines() if line.startswith("- ")]


def prompt(text: str, session: str) -> str:
    code, out = hook("prompt", prompt_payload(text, Path.cwd(), session=session))
    assert code == 0
    return str(json.loads(out)["hookSpecificOutput"]["additionalContext"]) if out else ""


def remember(*texts: str, scope: float = 1.0) -> None:
    with open_store(Settings.from_env()) as store:
        for text in texts:
            store.add_node("instruction", text, scope=scope)


def nodes() -> list[Node]:
    with open_store(Settings.from_env(), create=False) as store:
        return list(store.iter_all())


@pytest.mark.slow
def test_a_rule_stated_in_one_session_starts_the_next(claude_dir: Path) -> None:
    prompt(RULE, "s1")  # stored by the prompt hook of session 1
    block = start("s2")
    assert RULE in records(block)
    assert block.splitlines()[0].endswith("(octygraph):")


def test_nothing_is_printed_for_an_empty_memory(claude_dir: Path, home: Path) -> None:
    assert start("s1") == ""
    assert not (home / "projects" / "proj" / "memory" / "memory.db").exists()


@pytest.mark.slow
def test_what_claude_md_already_says_is_left_out(claude_dir: Path) -> None:
    remember(RULE, "Always run the linter before committing")
    (Path.cwd() / "CLAUDE.md").write_text("# Rules\n\n- Never push to main on Fridays.\n")
    assert records(start("s1")) == ["Always run the linter before committing"]
    # The user's own CLAUDE.md counts as much as the project's.
    (claude_dir / "CLAUDE.md").write_text("Run the linter before committing, always.\n")
    assert start("s2") == ""


@pytest.mark.slow
def test_after_compaction_the_block_comes_again(claude_dir: Path) -> None:
    remember(RULE)
    assert RULE in records(start("s1"))
    assert start("s1", "resume") == ""  # the session still has it
    assert RULE in records(start("s1", "compact"))  # its transcript is a summary now


@pytest.mark.slow
def test_a_record_given_at_start_is_not_injected_again_by_a_prompt(claude_dir: Path) -> None:
    remember(RULE)
    question = "Can I push this fix to main now? Today is Friday."
    assert RULE in prompt(question, "without-start")  # the prompt hook would give it
    assert RULE in records(start("s1"))
    assert RULE not in prompt(question, "s1")


@pytest.mark.slow
def test_the_block_keeps_to_its_budget_broad_rules_first(claude_dir: Path) -> None:
    narrow = "Mention the Anderson account and its contract number in every release note we publish"
    remember(narrow, scope=0.5)
    remember(
        *(
            f"Always tag release candidate {n} with the build number and the date"
            for n in range(30)
        ),
        scope=0.8,
    )
    remember("Never commit generated files to the repository")
    block = start("s1")
    assert 0 < len(block) <= 1500
    given = records(block)
    assert given[0] == "Never commit generated files to the repository"
    assert narrow not in given  # the budget ran out on broader rules
    small = start("s2", OCTY_START_BUDGET="200")
    assert 0 < len(small) <= 200 and len(records(small)) >= 1


@pytest.mark.slow
def test_a_start_block_does_not_count_as_a_use(claude_dir: Path) -> None:
    # Counted, whatever the block gave once would rank first in every later block.
    remember(RULE)
    assert RULE in records(start("s1"))
    assert RULE in records(start("s2"))
    (node,) = nodes()
    assert "access_count" not in node.attributes


@pytest.mark.slow
def test_a_restated_rule_counts_a_use(claude_dir: Path) -> None:
    for _ in range(2):
        result = run_cli("run", "--offline", RULE)
        assert result.returncode == 0, result.stderr
    (node,) = nodes()
    assert node.attributes["access_count"] == 1


@pytest.mark.slow
def test_a_prompt_hook_in_its_own_process_writes_its_uses(claude_dir: Path) -> None:
    # No service keeps the noted uses: the hook writes them as its store closes.
    remember(RULE)
    assert RULE in prompt("Can I push this fix to main now? Today is Friday.", "s1")
    (node,) = nodes()
    assert node.attributes["access_count"] == 1


def test_loaded_files_follow_claude_code(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    work = repo / "src" / "pkg"
    (repo / ".git").mkdir(parents=True)
    (repo / ".claude").mkdir()
    work.mkdir(parents=True)
    for path in (
        repo / "CLAUDE.md",
        repo / ".claude" / "CLAUDE.md",
        work / "CLAUDE.local.md",
        tmp_path / "CLAUDE.md",  # above the repository: not this project's
    ):
        path.write_text("x\n")
    config = tmp_path / "config"
    index = config / "projects" / str(repo).replace("/", "-") / "memory" / "MEMORY.md"
    index.parent.mkdir(parents=True)
    index.write_text("- The staging database is Postgres 16\n")
    found = session_start.loaded_files(work, {"CLAUDE_CONFIG_DIR": str(config)})
    assert set(found) == {
        repo / "CLAUDE.md",
        repo / ".claude" / "CLAUDE.md",
        work / "CLAUDE.local.md",
        index,
    }
    known = session_start.passages(
        session_start.loaded_text(work, {"CLAUDE_CONFIG_DIR": str(config)})
    )
    assert session_start.already_stated("Staging database: Postgres 16", known)
    assert not session_start.already_stated("Production runs Postgres 15 on RDS", known)


def test_prompt_uses_wait_in_memory_until_the_next_block(store: MemoryStore) -> None:
    from octygraph.memory import review

    node = review.remember(store, RULE, node_type="instruction", subtype="rule", scope=1.0)
    before = store.revision()
    uses.note_access(store, [node.id])
    uses.note_access(store, [node.id])
    # Nothing written yet: the service's caches, keyed on the revision, stay valid.
    assert store.revision() == before
    assert "access_count" not in store.get_nodes([node.id])[0].attributes
    text, ids = session_start.build(store, budget=1500)
    assert node.id in ids and RULE in text
    assert store.get_nodes([node.id])[0].attributes["access_count"] == 2


def test_a_memory_no_prompt_needs_leaves_the_block_until_one_does(store: MemoryStore) -> None:
    from octygraph.memory import review

    node = review.remember(store, RULE, node_type="instruction", subtype="rule", scope=1.0)
    for _ in range(session_start.STALE_SHOWS):
        _, ids = session_start.build(store, budget=1500)
        assert ids == [node.id]
        uses.note_shown(store, ids)  # as the hook does when it gives the block
    assert session_start.build(store, budget=1500) == ("", [])
    assert store.get_nodes([node.id])[0].attributes["shown_unused"] == session_start.STALE_SHOWS
    uses.note_access(store, [node.id])  # a prompt needed it
    _, ids = session_start.build(store, budget=1500)
    assert ids == [node.id]
    assert store.get_nodes([node.id])[0].attributes["shown_unused"] == 0
