"""Stored-memory manifest (concurrency, corrupt-file recovery) and the dev/verbose mode flags."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from octygraph.claude import manifest, modes
from octygraph.config.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def entry(session: str, node: str, content: str = "Peter handles Anderson") -> dict[str, str]:
    return {
        "session_id": session,
        "node_id": node,
        "type": "fact",
        "subtype": "definitional",
        "content": content,
        "source": "user",
    }


def test_append_load_and_remove_session(tmp_path: Path) -> None:
    path = tmp_path / "debug" / ".stored-manifest.json"
    assert manifest.load(path) == []
    assert manifest.remove_session(path, "s1") == []

    assert manifest.append(path, [entry("s1", "n1"), entry("s2", "n2")]) == 2
    assert manifest.append(path, [entry("s1", "n3", "Delivery due Friday")]) == 1

    all_entries = manifest.load(path)
    assert [e["node_id"] for e in all_entries] == ["n1", "n2", "n3"]
    assert all(e["stored_at"] for e in all_entries)
    assert set(all_entries[0]) == set(manifest.ENTRY_FIELDS)
    assert [e["node_id"] for e in manifest.load(path, session="s1")] == ["n1", "n3"]

    removed = manifest.remove_session(path, "s1")
    assert [e["content"] for e in removed] == ["Peter handles Anderson", "Delivery due Friday"]
    assert [e["node_id"] for e in manifest.load(path)] == ["n2"]
    assert (path.stat().st_mode & 0o777) == 0o600
    assert json.loads(path.read_text())["version"] == manifest.VERSION


def test_entry_without_node_id_is_rejected_and_nothing_written(tmp_path: Path) -> None:
    path = tmp_path / ".stored-manifest.json"
    manifest.append(path, [entry("s1", "n1")])
    before = path.read_bytes()
    with pytest.raises(ValueError, match="node_id"):
        manifest.append(path, [entry("s1", "n2"), {"session_id": "s1", "content": "x"}])
    assert path.read_bytes() == before


def test_two_processes_appending_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "debug" / ".stored-manifest.json"
    go = tmp_path / "go"
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from octygraph.claude import manifest\n"
        "path, go, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]\n"
        "(go.parent / f'ready-{name}').touch()\n"
        "while not go.exists():\n"
        "    time.sleep(0.001)\n"
        "for i in range(50):\n"
        "    manifest.append(path, [{'session_id': name, 'node_id': f'{name}-{i}',"
        " 'type': 'fact', 'content': f'fact {i}'}])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(path), str(go), name], env=env)
        for name in ("a", "b")
    ]
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"ready-{n}").exists() for n in ("a", "b")):
        assert time.monotonic() < deadline, "the two writers never started"
        time.sleep(0.01)
    go.touch()  # both interpreters are up and waiting
    for proc in procs:
        assert proc.wait(timeout=30) == 0

    entries = manifest.load(path)
    ids = [e["node_id"] for e in entries]
    assert len(ids) == 100 and len(set(ids)) == 100
    assert [i for i in ids if i.startswith("a-")] == [f"a-{i}" for i in range(50)]
    assert not list(path.parent.glob("*.tmp"))


@pytest.mark.parametrize(
    "garbage",
    [b"{not json", b'{"entries": 5}', b'{"version": 1}', b"\xff\xfe\x00", b'[{"content": "x"}]'],
)
def test_corrupt_manifest_is_moved_aside_and_restarted(tmp_path: Path, garbage: bytes) -> None:
    path = tmp_path / ".stored-manifest.json"
    path.write_bytes(garbage)

    assert manifest.append(path, [entry("s9", "n9")]) == 1

    aside = list(tmp_path.glob(".stored-manifest.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == garbage
    assert [e["node_id"] for e in manifest.load(path)] == ["n9"]


def test_legacy_list_manifest_is_read(tmp_path: Path) -> None:
    path = tmp_path / ".stored-manifest.json"
    path.write_text(json.dumps([entry("old", "n0")]))
    manifest.append(path, [entry("new", "n1")])
    assert [e["session_id"] for e in manifest.load(path)] == ["old", "new"]


def test_modes_toggle_and_dev_log(tmp_path: Path) -> None:
    settings = Settings.from_env(env={"OCTYBOT_HOME": str(tmp_path)}, cwd=tmp_path / "proj")
    paths = settings.paths

    modes.dev_log(paths, "classify", {"entities": ["Peter"]})
    assert not paths.dev_log.exists()  # dev mode is off

    assert modes.toggle(paths.dev_mode_flag) is True
    assert modes.is_on(paths.dev_mode_flag) and paths.dev_mode_flag.is_file()
    modes.dev_log(paths, "classify", {"entities": ["Peter"], "at": tmp_path})
    modes.dev_log(paths, "assemble", {"chars": 120})
    lines = paths.dev_log.read_text().splitlines()
    assert len(lines) == 2
    stamp, event, body = lines[0].split(" ", 2)
    assert stamp.startswith("20") and event == "classify"
    assert json.loads(body) == {"at": str(tmp_path), "entities": ["Peter"]}

    assert modes.toggle(paths.dev_mode_flag) is False
    assert not paths.dev_mode_flag.exists()
    modes.dev_log(paths, "late", {})
    assert len(paths.dev_log.read_text().splitlines()) == 2

    assert modes.is_on(paths.verbose_flag) is False
    assert modes.toggle(paths.verbose_flag) is True and modes.is_on(paths.verbose_flag)


def test_dev_log_never_raises(tmp_path: Path) -> None:
    settings = Settings.from_env(env={"OCTYBOT_HOME": str(tmp_path)}, cwd=tmp_path / "proj")
    paths = settings.paths
    modes.set_mode(paths.dev_mode_flag, True)
    paths.dev_log.mkdir()  # a folder where the log file should be: writing fails
    modes.dev_log(paths, "event", {"x": object()})
    assert paths.dev_log.is_dir()
