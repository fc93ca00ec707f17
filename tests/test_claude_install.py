"""Installer: settings.json merge, slash command, install record, uninstall, database seeding."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from octygraph.claude.install import (
    COMMAND_NAME,
    RECORD_NAME,
    InstallError,
    command_prefix,
    install,
    quote_for_sh,
    uninstall,
)
from octygraph.config.settings import Settings
from octygraph.embeddings import LocalEmbeddings
from octygraph.store import MemoryStore

ORIGINAL_SETTINGS: dict[str, Any] = {
    "permissions": {"allow": ["Bash(npm run test *)"], "deny": ["Read(./.env)"]},
    "env": {"FOO": "bar"},
    "model": "sonnet",
    "hooks": {
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "echo other-prompt-hook", "timeout": 5}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "./notify.sh"}]}],
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
        ],
    },
}


@pytest.fixture()
def exe(tmp_path: Path) -> Path:
    """A stand-in `octygraph` script in a folder whose name needs quoting."""
    folder = tmp_path / "my venv $HOME" / "bin"
    folder.mkdir(parents=True)
    script = folder / "octygraph"
    script.write_text('#!/bin/sh\necho "project=$OCTYBOT_PROJECT args=$*"\n')
    script.chmod(0o755)
    return script


def make_settings(tmp_path: Path, project: Path, project_id: str = "my-proj") -> Settings:
    return Settings.from_env(
        env={"OCTYBOT_HOME": str(tmp_path / "home")}, cwd=project, project_id=project_id
    )


def write_json(path: Path, data: dict[str, Any]) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = (json.dumps(data, indent=2) + "\n").encode()
    path.write_bytes(raw)
    return raw


def commands_of(groups: list[dict[str, Any]]) -> list[str]:
    return [h["command"] for g in groups for h in g["hooks"]]


def test_install_merges_keeps_other_settings_and_is_idempotent(tmp_path: Path, exe: Path) -> None:
    project = tmp_path / "proj"
    settings_file = project / ".claude" / "settings.json"
    original_bytes = write_json(settings_file, ORIGINAL_SETTINGS)
    settings = make_settings(tmp_path, project)

    report = install(project, settings, str(exe))

    merged = json.loads(settings_file.read_text())
    for key in ("permissions", "env", "model"):
        assert merged[key] == ORIGINAL_SETTINGS[key]
    assert merged["hooks"]["PreToolUse"] == ORIGINAL_SETTINGS["hooks"]["PreToolUse"]
    prompt_cmds = commands_of(merged["hooks"]["UserPromptSubmit"])
    stop_cmds = commands_of(merged["hooks"]["Stop"])
    assert prompt_cmds[0] == "echo other-prompt-hook" and stop_cmds[0] == "./notify.sh"
    assert prompt_cmds[1:] == [report.hook_commands["UserPromptSubmit"]]
    assert stop_cmds[1:] == [report.hook_commands["Stop"]]
    ours_prompt = merged["hooks"]["UserPromptSubmit"][1]["hooks"][0]
    ours_stop = merged["hooks"]["Stop"][1]["hooks"][0]
    assert ours_prompt["timeout"] == 20 and ours_prompt["statusMessage"]
    # Synchronous: an async hook is killed when `claude -p` exits; this one hands off and returns.
    assert "async" not in ours_stop and ours_stop["timeout"] == 10
    quoted = '"' + str(exe).replace("$", "\\$") + '"'  # `$` escaped inside sh double quotes
    assert ours_prompt["command"] == f"OCTYBOT_PROJECT=my-proj {quoted} hook prompt"

    claude = project / ".claude"
    files = [settings_file, claude / "commands" / COMMAND_NAME, claude / RECORD_NAME]
    before = {path: path.read_bytes() for path in files}
    again = install(project, settings, str(exe))
    assert again.changed is False
    assert {path: path.read_bytes() for path in files} == before

    removed = uninstall(project, settings)
    assert removed.changed is True
    assert json.loads(settings_file.read_text()) == ORIGINAL_SETTINGS
    assert settings_file.read_bytes() == original_bytes  # formatting kept too
    assert not (claude / "commands").exists()
    assert not (claude / RECORD_NAME).exists()
    assert claude.is_dir()  # it was there before install


def test_install_into_empty_folder_then_uninstall_leaves_nothing(tmp_path: Path, exe: Path) -> None:
    project = tmp_path / "empty"
    project.mkdir()
    settings = make_settings(tmp_path, project)

    report = install(project, settings, str(exe))

    assert (project / ".claude" / "settings.json").is_file()
    assert (project / ".claude" / "commands" / COMMAND_NAME).is_file()
    assert settings.paths.memory_dir.is_dir() and settings.paths.debug_dir.is_dir()
    assert (settings.paths.memory_dir.stat().st_mode & 0o777) == 0o700
    assert report.reminders and any("OCTYBOT_PROJECT=my-proj" in r for r in report.reminders)
    assert "my-proj" in report.render()

    uninstall(project, settings)
    assert list(project.iterdir()) == []
    assert settings.paths.memory_dir.is_dir()  # memory is never deleted by uninstall


def test_invalid_settings_json_is_refused_untouched(tmp_path: Path, exe: Path) -> None:
    project = tmp_path / "bad"
    settings_file = project / ".claude" / "settings.json"
    settings_file.parent.mkdir(parents=True)
    settings_file.write_bytes(b'{"hooks": {"Stop": [}, // comment\n')
    settings = make_settings(tmp_path, project)

    with pytest.raises(InstallError, match="not valid JSON"):
        install(project, settings, str(exe))

    assert settings_file.read_bytes() == b'{"hooks": {"Stop": [}, // comment\n'
    assert sorted(p.name for p in (project / ".claude").iterdir()) == ["settings.json"]
    assert not settings.paths.memory_dir.exists()
    with pytest.raises(InstallError):
        uninstall(project, settings)


def test_wrong_hooks_shape_is_refused(tmp_path: Path, exe: Path) -> None:
    project = tmp_path / "shape"
    write_json(project / ".claude" / "settings.json", {"hooks": {"Stop": {"command": "x"}}})
    with pytest.raises(InstallError, match="must be a list"):
        install(project, make_settings(tmp_path, project), str(exe))


def test_missing_target_is_refused(tmp_path: Path, exe: Path) -> None:
    with pytest.raises(InstallError, match="is not a folder"):
        install(tmp_path / "nope", make_settings(tmp_path, tmp_path), str(exe))


def test_hook_commands_run_under_sh_with_pinned_project(tmp_path: Path, exe: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    report = install(project, make_settings(tmp_path, project), str(exe))
    env = {k: v for k, v in os.environ.items() if k != "OCTYBOT_PROJECT"}

    for event, expected in (("UserPromptSubmit", "hook prompt"), ("Stop", "hook stop")):
        out = subprocess.run(
            ["sh", "-c", report.hook_commands[event]],
            cwd=elsewhere,  # a `cd` in the session must not move the memory
            env=env,
            capture_output=True,
            text=True,
            timeout=10,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == f"project=my-proj args={expected}"


def test_slash_command_file_runs_and_preapproves_itself(tmp_path: Path, exe: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    install(project, make_settings(tmp_path, project), str(exe))
    text = (project / ".claude" / "commands" / COMMAND_NAME).read_text()

    match = re.match(r"^---\n(.*?)\n---\n(.*)$", text, re.S)
    assert match, text
    front = yaml.safe_load(match.group(1))
    prefix = command_prefix(str(exe), "my-proj")
    assert front["disable-model-invocation"] is True
    assert front["description"] and front["argument-hint"]
    assert f"Bash({prefix} *)" in front["allowed-tools"]
    body = match.group(2)
    assert "verbatim" in body
    block = re.search(r"^```!\n(.*?)^```$", body, re.M | re.S)
    assert block, body
    script = block.group(1)
    assert script.startswith(f"{prefix} slash <<'")
    assert "$ARGUMENTS" in script

    # A stand-in that shows its arguments and what it reads on stdin.
    echo = tmp_path / "echo-octygraph"
    echo.write_text('#!/bin/sh\necho "project=$OCTYBOT_PROJECT args=$*"\ncat\n')
    echo.chmod(0o755)
    script = script.replace(quote_for_sh(str(exe)), quote_for_sh(str(echo)))
    typed = (
        "search Peter's account",
        'search "Peter account" $HOME `id` ; echo injected',
        "memory list",
        "",
    )
    for args in typed:
        # What Claude Code does: paste the typed text in place of $ARGUMENTS, then run it with sh.
        out = subprocess.run(
            ["sh", "-c", script.replace("$ARGUMENTS", args)],
            capture_output=True,
            text=True,
            timeout=10,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout == f"project=my-proj args=slash\n{args}\n"


def test_seeds_database_from_small_baseline_profile(
    tmp_path: Path, exe: Path, embedder: LocalEmbeddings
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    settings = make_settings(tmp_path, project)
    settings.paths.profiles_dir.mkdir(parents=True)
    with MemoryStore.open(settings.paths.profiles_dir / "small-baseline.db", embedder) as src:
        peter = src.add_node("fact", "Peter handles Anderson")
        other = src.add_node("fact", "The office closes at six")

    report = install(project, settings, str(exe))

    assert report.seeded is True
    with MemoryStore.open(settings.paths.db, embedder, create=False) as db:
        assert sorted(n.id for n in db.iter_all()) == sorted([peter.id, other.id])
        assert db.search("who handles Anderson")[0].node.id == peter.id
        db.delete_node(other.id)
    assert (settings.paths.db.stat().st_mode & 0o777) == 0o600

    # An existing database is never overwritten.
    assert install(project, settings, str(exe)).seeded is False
    with MemoryStore.open(settings.paths.db, embedder, create=False) as db:
        assert [n.id for n in db.iter_all()] == [peter.id]


def test_reinstall_with_new_executable_replaces_old_hooks(tmp_path: Path, exe: Path) -> None:
    project = tmp_path / "proj"
    settings_file = project / ".claude" / "settings.json"
    write_json(settings_file, ORIGINAL_SETTINGS)
    settings = make_settings(tmp_path, project)
    other = tmp_path / "other-bin" / "octygraph"
    other.parent.mkdir()
    other.write_text("#!/bin/sh\n")

    install(project, settings, str(exe))
    report = install(project, settings, str(other))

    merged = json.loads(settings_file.read_text())
    prompt_cmds = commands_of(merged["hooks"]["UserPromptSubmit"])
    assert prompt_cmds == ["echo other-prompt-hook", report.hook_commands["UserPromptSubmit"]]
    assert str(other) in prompt_cmds[1] and str(exe) not in json.dumps(merged)
    assert str(other) in (project / ".claude" / "commands" / COMMAND_NAME).read_text()

    uninstall(project, settings)
    assert json.loads(settings_file.read_text()) == ORIGINAL_SETTINGS


def test_uninstall_keeps_changes_made_after_install(tmp_path: Path, exe: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    settings = make_settings(tmp_path, project)
    install(project, settings, str(exe))
    settings_file = project / ".claude" / "settings.json"
    data = json.loads(settings_file.read_text())
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "./later.sh"}]})
    data["model"] = "opus"
    settings_file.write_text(json.dumps(data))

    uninstall(project, settings)

    assert json.loads(settings_file.read_text()) == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "./later.sh"}]}]},
        "model": "opus",
    }


def test_foreign_command_file_is_restored(tmp_path: Path, exe: Path) -> None:
    project = tmp_path / "proj"
    command_file = project / ".claude" / "commands" / COMMAND_NAME
    command_file.parent.mkdir(parents=True)
    command_file.write_text("# someone else's /octybot\n")
    settings = make_settings(tmp_path, project)

    install(project, settings, str(exe))
    assert "managed by octygraph" in command_file.read_text()
    uninstall(project, settings)

    assert command_file.read_text() == "# someone else's /octybot\n"
    assert not (project / ".claude" / "settings.json").exists()


def test_uninstall_without_record_removes_hooks_by_shape(tmp_path: Path, exe: Path) -> None:
    project = tmp_path / "proj"
    settings_file = project / ".claude" / "settings.json"
    write_json(settings_file, ORIGINAL_SETTINGS)
    settings = make_settings(tmp_path, project)
    install(project, settings, str(exe))
    (project / ".claude" / RECORD_NAME).unlink()

    report = uninstall(project, settings)

    assert report.changed
    assert json.loads(settings_file.read_text()) == ORIGINAL_SETTINGS
    assert not (project / ".claude" / "commands" / COMMAND_NAME).exists()


# --- project id and --scope user -------------------------------------------------------------------


def test_default_project_id_is_the_git_root_or_claude_project_dir(tmp_path: Path) -> None:
    from octygraph.config.settings import default_project_id

    repo = tmp_path / "shop-repo"
    sub = repo / "services" / "billing"
    sub.mkdir(parents=True)
    (repo / ".git").mkdir()
    plain = tmp_path / "notes"
    plain.mkdir()
    worktree = tmp_path / "shop-wt"
    (worktree / "src").mkdir(parents=True)
    (worktree / ".git").write_text("gitdir: elsewhere\n")  # a worktree's .git is a file

    assert default_project_id({}, sub) == "shop-repo"
    assert default_project_id({}, repo) == "shop-repo"
    assert default_project_id({}, plain) == "notes"
    assert default_project_id({}, worktree / "src") == "shop-wt"
    # Claude Code's project folder wins over a hook's working folder (which follows `cd`).
    assert default_project_id({"CLAUDE_PROJECT_DIR": str(sub)}, plain) == "shop-repo"
    assert default_project_id({"CLAUDE_PROJECT_DIR": str(plain)}, sub) == "notes"
    # A relative or missing folder is ignored.
    assert default_project_id({"CLAUDE_PROJECT_DIR": "relative/dir"}, plain) == "notes"
    assert default_project_id({"CLAUDE_PROJECT_DIR": str(tmp_path / "gone")}, sub) == "shop-repo"

    home = {"OCTYBOT_HOME": str(tmp_path / "home")}
    assert Settings.from_env(env=home, cwd=sub).project_id == "shop-repo"
    pinned = {**home, "OCTYBOT_PROJECT": "pinned", "CLAUDE_PROJECT_DIR": str(plain)}
    assert Settings.from_env(env=pinned, cwd=sub).project_id == "pinned"


@pytest.mark.slow
def test_a_subfolder_of_a_repository_shares_its_memory(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    repo = tmp_path / "shop"
    (repo / "web" / "src").mkdir(parents=True)
    (repo / ".git").mkdir()
    env = {"OCTYBOT_HOME": str(tmp_path / "home")}
    added = run_cli("memory", "add", "Maria owns the billing service.", env=env, cwd=repo / "web")
    assert added.returncode == 0, added.stderr
    found = run_cli("search", "billing", "--json", env=env, cwd=repo / "web" / "src")
    assert found.returncode == 0, found.stderr
    assert [h["content"] for h in json.loads(found.stdout)] == ["Maria owns the billing service."]
    assert (tmp_path / "home" / "projects" / "shop" / "memory" / "memory.db").is_file()


def test_user_scope_install_pins_no_project_and_uninstalls_cleanly(
    tmp_path: Path, exe: Path
) -> None:
    claude_dir = tmp_path / "userhome" / ".claude"
    settings_file = claude_dir / "settings.json"
    original = {
        "model": "sonnet",
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]},
    }
    write_json(settings_file, original)
    settings = make_settings(tmp_path, tmp_path)

    report = install(claude_dir, settings, str(exe), user_scope=True)

    assert report.project_id is None and "all your projects" in report.render()
    data = json.loads(settings_file.read_text())
    assert data["model"] == "sonnet"
    prompt_commands = commands_of(data["hooks"]["UserPromptSubmit"])
    assert prompt_commands == [f"{quote_for_sh(str(exe))} hook prompt"]
    assert commands_of(data["hooks"]["Stop"]) == ["x", f"{quote_for_sh(str(exe))} hook stop"]
    command_text = (claude_dir / "commands" / COMMAND_NAME).read_text()
    assert (
        "OCTYBOT_PROJECT" not in command_text and "OCTYBOT_PROJECT" not in settings_file.read_text()
    )
    # No project folders: each project gets its own on its first prompt.
    assert not (tmp_path / "home").exists()
    assert not install(claude_dir, settings, str(exe), user_scope=True).changed

    removed = uninstall(claude_dir, settings, user_scope=True)

    assert removed.changed
    assert json.loads(settings_file.read_text()) == original
    assert not (claude_dir / "commands").exists()
    assert not (claude_dir / RECORD_NAME).exists()
    assert claude_dir.is_dir()  # the user's Claude folder itself is never removed


def test_uninstall_without_a_record_finds_user_scope_hooks(tmp_path: Path, exe: Path) -> None:
    claude_dir = tmp_path / ".claude"
    original = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x hook stop"}]}]}}
    write_json(claude_dir / "settings.json", original)
    settings = make_settings(tmp_path, tmp_path)
    install(claude_dir, settings, str(exe), user_scope=True)
    (claude_dir / RECORD_NAME).unlink()

    uninstall(claude_dir, settings, user_scope=True)

    # Ours are found by their shape (no OCTYBOT_PROJECT= prefix); someone else's look-alike stays.
    assert json.loads((claude_dir / "settings.json").read_text()) == original


@pytest.mark.slow
def test_cli_install_scope_user_writes_the_user_settings(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    home = tmp_path / "userhome"
    home.mkdir()
    env = {"HOME": str(home), "OCTYBOT_HOME": str(tmp_path / "octy"), "CLAUDE_CONFIG_DIR": ""}
    done = run_cli("install", "--scope", "user", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    assert set(hooks) == {"UserPromptSubmit", "Stop", "SessionStart", "SessionEnd"}
    assert all("OCTYBOT_PROJECT" not in c for g in hooks.values() for c in commands_of(g))

    both = run_cli("install", str(tmp_path), "--scope", "user", env=env, cwd=tmp_path)
    assert both.returncode == 1 and "no folder" in both.stderr
    neither = run_cli("install", env=env, cwd=tmp_path)
    assert neither.returncode == 1 and "--scope user" in neither.stderr

    gone = run_cli("uninstall", "--scope", "user", env=env, cwd=tmp_path)
    assert gone.returncode == 0, gone.stderr
    assert not (home / ".claude" / "settings.json").exists()
