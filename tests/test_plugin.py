"""The Claude Code plugin in the repository: its files, `claude plugin validate`, `claude --plugin-dir`."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from octygraph.claude.install import EVENTS, hook_commands, plugin_files
from tests.fake_anthropic import FakeAnthropic
from tests.test_real_claude import (
    CLIENTS,
    REPO,
    Claude,
    Client,
    make_claude,
    request_with,
    require_claude,
    stop_service,
)

PLUGIN = REPO / "plugin"
MANIFEST = PLUGIN / ".claude-plugin" / "plugin.json"
MARKETPLACE = REPO / ".claude-plugin" / "marketplace.json"


def test_plugin_files_match_what_install_writes() -> None:
    for relative, text in plugin_files().items():
        path = PLUGIN / relative
        assert path.read_text(encoding="utf-8") == text, (
            f"{relative} is out of date; regenerate it with: python -c 'from pathlib import Path; "
            'from octygraph.claude.install import write_plugin_files; write_plugin_files(Path("."))\''
        )
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == set(EVENTS)
    expected = hook_commands("octygraph", None)
    assert {event: hooks[event][0]["hooks"][0]["command"] for event in hooks} == expected
    assert expected["UserPromptSubmit"] == "octygraph hook prompt"


def test_the_marketplace_at_the_repository_root_names_the_plugin_folder() -> None:
    manifest = json.loads(MANIFEST.read_text())
    marketplace = json.loads(MARKETPLACE.read_text())
    entry = marketplace["plugins"][0]
    assert manifest["name"] == entry["name"] == "octygraph"
    # Only the plugin folder is copied into Claude Code's plugin cache, not the whole repository.
    assert entry["source"] == "./plugin"
    assert sorted(p.name for p in PLUGIN.iterdir()) == [".claude-plugin", "commands", "hooks"]
    # One version, the Python package's.
    from importlib.metadata import version

    assert manifest["version"] == entry["version"] == version("octygraph").split("+")[0]


def _claude(world: Claude, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(world.binary), *args],
        env=world.env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(params=CLIENTS, ids=str)
def plugin_world(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Claude]:
    """A temporary user without octygraph installed, once for each pinned Claude Code release."""
    client: Client = request.param
    require_claude(client)
    with FakeAnthropic(lambda body: "Noted.") as api:
        world = make_claude(tmp_path, api, client)
        try:
            yield world
        finally:
            stop_service(world)


@pytest.mark.slow
def test_claude_plugin_validate_accepts_the_plugin_and_rejects_a_broken_copy(
    plugin_world: Claude, tmp_path: Path
) -> None:
    for target in (REPO, PLUGIN, MANIFEST):
        ok = _claude(plugin_world, "plugin", "validate", str(target), cwd=tmp_path)
        assert ok.returncode == 0, ok.stdout + ok.stderr
        # Not "Validation passed with warnings": the manifest draws no warning.
        assert ok.stdout.strip().splitlines()[-1].strip() == "✔ Validation passed", ok.stdout
        # Releases from 2.1.3xx add the plugin directory's (the submission catalog's) own checks,
        # which "do not change the result": none of them may refuse the plugin, but their warnings
        # (a listing icon) are not about whether Claude Code loads it.
        manifest_part = ok.stdout.split("Plugin directory checks", 1)[0]
        assert "warning" not in manifest_part.lower(), ok.stdout
        assert "✘" not in ok.stdout and "refuses" not in ok.stdout, ok.stdout

    broken = tmp_path / "broken"
    shutil.copytree(REPO / ".claude-plugin", broken / ".claude-plugin")
    shutil.copytree(PLUGIN, broken / "plugin")
    data = json.loads(MARKETPLACE.read_text())
    data["owner"] = "not an object"
    (broken / ".claude-plugin" / "marketplace.json").write_text(json.dumps(data))
    bad = _claude(plugin_world, "plugin", "validate", str(broken), cwd=tmp_path)
    assert bad.returncode != 0, bad.stdout


@pytest.mark.slow
def test_plugin_dir_recalls_memory_and_runs_octybot_without_any_install(
    plugin_world: Claude,
) -> None:
    world = plugin_world
    # No `octygraph install`: the plugin's hooks alone, with the project id taken from the folder.
    world.octygraph("memory", "add", "Maria Zorbex owns the billing service.")
    assert not (world.project / ".claude").exists()
    prompt = "Who owns the billing service?"

    turn = world.run(prompt, "--plugin-dir", str(PLUGIN))

    assert turn.returncode == 0, turn.stderr
    assert turn.text == "Noted."
    assert "Maria Zorbex owns the billing service" in request_with(turn, prompt).text

    slash = world.run("/octygraph:octybot search Maria's service", "--plugin-dir", str(PLUGIN))
    assert slash.returncode == 0, slash.stderr
    shown = [r for r in slash.requests if "Show the output above" in r.text]
    assert shown and "Zorbex" in shown[-1].text, [r.text[:300] for r in slash.requests]


@pytest.mark.slow
def test_marketplace_add_and_plugin_install_from_the_repository(plugin_world: Claude) -> None:
    world = plugin_world
    for args in (
        ("plugin", "marketplace", "add", str(REPO)),
        ("plugin", "install", "octygraph@octygraph", "--scope", "user"),
    ):
        done = _claude(world, *args, cwd=world.project)
        assert done.returncode == 0, done.stdout + done.stderr
    world.octygraph("memory", "add", "Maria Zorbex owns the billing service.")
    prompt = "Who owns the billing service?"

    turn = world.run(prompt)

    assert turn.returncode == 0, turn.stderr
    assert "Maria Zorbex owns the billing service" in request_with(turn, prompt).text
