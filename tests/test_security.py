"""Security: no secret reaches any file under OCTYBOT_HOME, through every way text gets in.

The corpus (tests/security_corpus.py) holds 210 fake credentials in 35 formats. Each goes through
`octygraph run`, `memory add`, the prompt hook, the Stop hook and `memory import`; then the memories are
exported into the home folder, and every file there (databases, their WAL files, traces, checkpoints,
manifest, exports) is read as bytes and searched for every secret's random body.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from octygraph.config.settings import Settings
from octygraph.integrations.cli import app
from octygraph.session import hooks
from octygraph.store import MemoryStore
from tests.security_corpus import Secret, messages, secrets

CORPUS = secrets(per_format=6)


def leaks(home: Path, items: list[Secret]) -> list[tuple[str, str]]:
    """(file, format) for every secret fragment found in any file under `home`."""
    found = []
    files = [p for p in home.rglob("*") if p.is_file()]
    assert files, "nothing was written at all"
    for path in files:
        data = path.read_bytes()
        for item in items:
            if any(f.encode() in data for f in item.fragments):
                found.append((str(path.relative_to(home)), item.fmt))
    return found


def cli(*args: str, input: str | None = None) -> str:
    result = CliRunner().invoke(app, list(args), input=input, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def prompt_payload(prompt: str, cwd: Path, session: str) -> bytes:
    return json.dumps(
        {
            "session_id": session,
            "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
    ).encode()


def stop_payload(message: str, cwd: Path, session: str) -> bytes:
    return json.dumps(
        {
            "session_id": session,
            "cwd": str(cwd),
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": message,
        }
    ).encode()


def import_file(path: Path, items: list[Secret]) -> Path:
    """An export from elsewhere that carries secrets in contents, attributes and entity names."""
    lines = [{"kind": "octygraph-export", "version": 1}]
    for i, item in enumerate(items):
        lines.append(
            {
                "kind": "node",
                "id": f"imp-f{i}",
                "type": "fact",
                "content": f"The legacy importer for Acme used {item.text}.",
                "attributes": {"note": item.text},
            }
        )
        lines.append({"kind": "node", "id": f"imp-e{i}", "type": "entity", "content": item.body})
        lines.append(
            {
                "kind": "edge",
                "id": f"imp-x{i}",
                "source_id": f"imp-f{i}",
                "target_id": f"imp-e{i}",
                "edge_type": "about",
            }
        )
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("path_name", ["run", "memory-add", "prompt-hook", "stop-hook", "import"])
def test_no_secret_reaches_disk_through_any_entry_path(
    path_name: str, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(CORPUS) >= 200 and len({s.fmt for s in CORPUS}) >= 20
    monkeypatch.setenv("OCTY_HOOK_BUDGET_S", "60")
    cwd = Path.cwd()
    texts = messages(CORPUS, per_message=5)
    if path_name == "run":
        for text in texts:
            cli("run", text, "--offline", "--json")
    elif path_name == "memory-add":
        for item in CORPUS:
            cli("memory", "add", f"Acme staging uses {item.text}", "--entity", item.body)
    elif path_name == "prompt-hook":
        for i, text in enumerate(texts):
            hooks.answer("prompt", prompt_payload(text, cwd, f"s{i % 3}"))
    elif path_name == "stop-hook":
        for i, text in enumerate(texts):
            reply = f"I configured the deploy. {text} I also updated the README."
            hooks.answer("stop", stop_payload(reply, cwd, f"s{i % 3}"))
    else:
        cli("memory", "import", str(import_file(tmp_path / "in.jsonl", CORPUS)))
    out = home / "exports"
    out.mkdir(parents=True, exist_ok=True)
    cli("memory", "export", "--format", "jsonl", "--output", str(out / "all.jsonl"))
    cli("memory", "export", "--format", "markdown", "--output", str(out / "all.md"))

    settings = Settings.from_env()
    assert settings.paths.db.exists()
    assert leaks(home, CORPUS) == []
    # Redacted text stays storable, and no entity is named by a secret or by the redaction mark.
    from octygraph.embeddings import local_embeddings

    with MemoryStore.open(settings.paths.db, local_embeddings()) as store:
        nodes = list(store.iter_all())
    redacted = {n.content for n in nodes if "[REDACTED]" in n.content}
    if path_name != "stop-hook":  # the Stop hook stores what the assistant did, not its settings
        # The same sentence with another key is the same memory: at least one per template is kept.
        assert len(redacted) >= 4, redacted
    assert not [n.content for n in nodes if n.node_type == "entity" and "REDACTED" in n.content]
    if path_name in ("run", "prompt-hook"):
        assert list((settings.paths.debug_dir).glob("*.json"))
        assert settings.paths.checkpoints.exists()
    assert not os.environ.get("DB_PATH")


# ------------------------------------------------------------------------------ injection attempts


def _run_all(texts: tuple[str, ...], *, source: str) -> list[dict[str, object]]:
    """Run every text through the offline pipeline (as the user, or as the Stop hook); their traces."""
    import asyncio

    from octygraph.pipeline.runner import RunOptions, run_prompt
    from octygraph.pipeline.traces import load_trace
    from octygraph.store.opening import open_store

    settings = Settings.from_env()
    traces = []
    with open_store(settings) as store:
        for text in texts:
            options = RunOptions(
                offline=True, session_id="sec", source=source, store_only=source == "claude"
            )
            result = asyncio.run(run_prompt(text, settings, store, options))
            traces.append(load_trace(settings.paths.debug_dir, result["trace_id"]))
    return traces


def _stored_nodes() -> list[object]:
    from octygraph.embeddings import local_embeddings

    with MemoryStore.open(Settings.from_env().paths.db, local_embeddings()) as store:
        return list(store.iter_all())


def test_every_injection_attempt_is_judged_as_one_and_few_benign_rules_are() -> None:
    from octygraph.safety.intent import injection_reason
    from tests.security_corpus import BENIGN_RULES, INJECTIONS

    assert len(INJECTIONS) >= 100 and len(BENIGN_RULES) >= 100
    missed = [text for text in INJECTIONS if injection_reason(text) is None]
    refused = [text for text in BENIGN_RULES if injection_reason(text) is not None]
    assert missed == []
    assert len(refused) <= 0.05 * len(BENIGN_RULES), refused


def test_the_held_out_attacks_and_rules_are_mostly_judged_right() -> None:
    """Texts the detector was not written against (see the corpus): most attacks, no benign rule."""
    from octygraph.safety.intent import injection_reason
    from tests.security_corpus import HELD_OUT_BENIGN, HELD_OUT_INJECTIONS

    caught = sum(injection_reason(text) is not None for text in HELD_OUT_INJECTIONS)
    refused = [text for text in HELD_OUT_BENIGN if injection_reason(text) is not None]
    assert caught >= 0.9 * len(HELD_OUT_INJECTIONS)
    assert len(refused) <= 0.05 * len(HELD_OUT_BENIGN), refused


@pytest.mark.slow
@pytest.mark.parametrize("source", ["user", "claude"])
def test_no_injection_attempt_stores_an_instruction(source: str, home: Path) -> None:
    """Through the prompt path and the Stop hook path: nothing from an attack message is stored."""
    from tests.security_corpus import INJECTIONS

    _run_all(INJECTIONS, source=source)
    nodes = _stored_nodes() if Settings.from_env().paths.db.exists() else []
    assert [n.content for n in nodes if n.node_type == "instruction"] == []  # type: ignore[attr-defined]
    assert [n.content for n in nodes if n.node_type != "entity"] == []  # type: ignore[attr-defined]


@pytest.mark.slow
def test_benign_rules_that_look_similar_are_kept(home: Path) -> None:
    from tests.security_corpus import BENIGN_RULES

    traces = _run_all(BENIGN_RULES, source="user")
    refused = [
        trace["prompt"]
        for trace in traces
        if "injection" in json.dumps(trace.get("notes")) + json.dumps(trace.get("tool_calls"))
    ]
    assert len(refused) <= 0.05 * len(BENIGN_RULES), refused
    stored = {t["prompt"] for t in traces if t.get("stored")}
    print(f"benign: {len(refused)} refused as injections, {len(stored)} stored")
    assert len(stored) >= 45  # the rest are not storable for other reasons (no rule, too vague)


def test_the_assistant_never_gives_an_instruction(home: Path) -> None:
    _run_all(("From now on always run the unit tests before each commit.",), source="claude")
    _run_all(("From now on always run the unit tests before each commit.",), source="user")
    nodes = [n for n in _stored_nodes() if n.node_type == "instruction"]  # type: ignore[attr-defined]
    assert [n.source for n in nodes] == ["user"]  # type: ignore[attr-defined]
