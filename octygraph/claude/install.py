"""Install octygraph into a project (or for every project of the user) for Claude Code, and take it out.

`install` merges the hooks into `TARGET/.claude/settings.json` (UserPromptSubmit runs the pipeline, Stop
does post-response work, SessionStart gives the standing block, SessionEnd settles the session's
candidate memories), writes the `/octybot` slash command,
creates the project's data folders and seeds its database. What it added is recorded in
`TARGET/.claude/.octygraph-install.json` so `uninstall` removes exactly that and nothing else. Installing
twice changes nothing.

With `user_scope=True` the same goes into the user's Claude folder (`~/.claude`, or
`$CLAUDE_CONFIG_DIR`), so the hooks run in every project; their commands pin no project id, so it comes
from `CLAUDE_PROJECT_DIR` or the git root of the working folder (see `octygraph.config.settings`). The Claude
Code plugin in the repository (`plugin/hooks/hooks.json`, `plugin/commands/octybot.md`) holds the same
commands, made by `plugin_files`.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from octygraph.config.settings import ProjectPaths, Settings

RECORD_NAME = ".octygraph-install.json"
COMMAND_NAME = "octybot.md"
RECORD_VERSION = 1
PROMPT_TIMEOUT_S = 20  # Claude Code's own limit is 30 s; the pipeline budgets itself below this.
STOP_TIMEOUT_S = 10  # the hook hands its payload to the service (or a spool file) and returns
SESSION_START_TIMEOUT_S = 10
PROMPT_STATUS = "octybot: recalling memories"
# The file `octygraph memory bootstrap` builds from the demo package (`octygraph_demo`); a fresh install
# seeds an empty project from it when it is there.
BASELINE_PROFILE = "small-baseline.db"
COMMAND_MARKER = "managed by octygraph"
ARGS_DELIMITER = "OCTYBOT_ARGUMENTS"
EVENTS = ("UserPromptSubmit", "Stop", "SessionStart", "SessionEnd")


class InstallError(ValueError):
    """Install or uninstall cannot go ahead; the message says why and what to do."""


@dataclass
class InstallReport:
    """What `install` did, and what the user may still want to do."""

    target_dir: Path
    project_id: str | None  # None: user scope, the project follows the working folder
    settings_file: Path
    command_file: Path
    record_file: Path
    memory_dir: Path
    db: Path
    hook_commands: dict[str, str] = field(default_factory=dict)
    actions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    reminders: list[str] = field(default_factory=list)
    seeded: bool = False
    changed: bool = False

    def render(self) -> str:
        """Plain text for the terminal."""
        if self.project_id is None:
            lines = [
                f"octygraph installed for all your projects ({self.settings_file}); each project's "
                "memory is named after its git root folder (or the folder Claude Code runs in)."
            ]
        else:
            lines = [f"octygraph installed into {self.target_dir} (project id: {self.project_id})."]
        lines += [f"  - {action}" for action in self.actions]
        lines += [f"  ! {warning}" for warning in self.warnings]
        if self.reminders:
            lines.append("Next:")
            lines += [f"  * {reminder}" for reminder in self.reminders]
        return "\n".join(lines)


@dataclass
class UninstallReport:
    """What `uninstall` removed; project memory is always kept."""

    target_dir: Path
    memory_dir: Path
    actions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    changed: bool = False

    def render(self) -> str:
        """Plain text for the terminal."""
        head = (
            f"octygraph removed from {self.target_dir}."
            if self.changed
            else f"Nothing of octygraph was installed in {self.target_dir}."
        )
        lines = [head]
        lines += [f"  - {action}" for action in self.actions]
        lines += [f"  ! {warning}" for warning in self.warnings]
        lines.append(f"Memory is kept in {self.memory_dir}; delete that folder to erase it.")
        return "\n".join(lines)


# --- commands -------------------------------------------------------------------------------------


def quote_for_sh(path: str) -> str:
    """Double-quote a path for `sh -c` (escaping `\\`, `"`, `$` and backquote)."""
    return '"' + re.sub(r'([\\"$`])', r"\\\1", path) + '"'


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def shell_word(executable: str) -> str:
    """The executable as one `sh` word: a bare name looked up on PATH as it is (`octygraph`, the
    plugin), a path double-quoted (what `install` writes)."""
    return executable if _PLAIN_NAME.fullmatch(executable) else quote_for_sh(executable)


def command_prefix(executable: str, project_id: str | None) -> str:
    """`OCTYBOT_PROJECT=<id> "<exe>"`: the start of every command install writes.

    Without a project id (user scope, the plugin) the command is the executable alone, and octygraph
    works out the project from where Claude Code runs it.
    """
    if project_id is None:
        return shell_word(executable)
    return f"OCTYBOT_PROJECT={shlex.quote(project_id)} {shell_word(executable)}"


def hook_commands(executable: str, project_id: str | None) -> dict[str, str]:
    """The shell command of each hook, by event name."""
    prefix = command_prefix(executable, project_id)
    return {
        "UserPromptSubmit": f"{prefix} hook prompt",
        "Stop": f"{prefix} hook stop",
        # After a compaction the transcript is a summary: memories may be injected again.
        "SessionStart": f"{prefix} hook session-start",
        # Hands the session to the service, which settles the candidates it stored.
        "SessionEnd": f"{prefix} hook session-end",
    }


def hook_handler(event: str, command: str) -> dict[str, Any]:
    """The settings.json handler object for one of our hooks."""
    if event == "UserPromptSubmit":
        return {
            "type": "command",
            "command": command,
            "timeout": PROMPT_TIMEOUT_S,
            "statusMessage": PROMPT_STATUS,
        }
    if event == "SessionStart":
        return {"type": "command", "command": command, "timeout": SESSION_START_TIMEOUT_S}
    # Synchronous on purpose: the hook only hands the report to the service and returns within a
    # second, and an `async` hook is killed when a `claude -p` run exits, losing what it would store.
    return {"type": "command", "command": command, "timeout": STOP_TIMEOUT_S}


_YAML_UNSAFE_START = tuple("-?:,[]{}#&*!|>'\"%@`")


def _yaml_value(value: str) -> str:
    """A YAML scalar for `value`: plain when that parses back unchanged, else single-quoted."""
    plain_ok = (
        value
        and value == value.strip()
        and not value.startswith(_YAML_UNSAFE_START)
        and ": " not in value
        and " #" not in value
        and not value.endswith(":")
        and "\n" not in value
    )
    return value if plain_ok else "'" + value.replace("'", "''") + "'"


def command_file_text(executable: str, project_id: str | None) -> str:
    """The `.claude/commands/octybot.md` slash command: runs octygraph with the typed arguments."""
    prefix = command_prefix(executable, project_id)
    exe = shell_word(executable)
    # Claude Code never prompts for `!` commands: anything not pre-approved aborts the command.
    allowed = f"Bash({prefix} *)" if prefix == exe else f"Bash({prefix} *), Bash({exe} *)"
    description = (
        f"Octybot long-term memory, {COMMAND_MARKER} (search, memory, dev-mode, verbose-mode)"
    )
    hint = "search <words> | memory help|list|active|load <profile>|unload|freeze ... | dev-mode"
    return (
        "---\n"
        f"description: {_yaml_value(description)}\n"
        f"argument-hint: {_yaml_value(hint)}\n"
        f"allowed-tools: {_yaml_value(allowed)}\n"
        "disable-model-invocation: true\n"
        "---\n"
        # The typed arguments go through a here-document with a quoted delimiter, so quotes, `$` and
        # backquotes in them reach octygraph untouched instead of breaking the shell (`Peter's`).
        # No `|| true` or `2>&1`: Claude Code refuses to run a here-document followed by more shell
        # syntax, and `slash` prints its errors on stdout and always exits 0 by itself.
        "```!\n"
        f"{prefix} slash <<'{ARGS_DELIMITER}'\n"
        "$ARGUMENTS\n"
        f"{ARGS_DELIMITER}\n"
        "```\n"
        "\n"
        "Show the output above to the user verbatim, in a code block. Do not run other commands or "
        "take any further action unless the user asks.\n"
    )


PLUGIN_EXECUTABLE = "octygraph"
PLUGIN_HOOKS_FILE = Path("hooks") / "hooks.json"
PLUGIN_COMMAND_FILE = Path("commands") / COMMAND_NAME


def plugin_files() -> dict[Path, str]:
    """The Claude Code plugin's hook and command files (path in the plugin folder -> text).

    The plugin runs `octygraph` from PATH (installed once with pipx or uv tool) and pins no project,
    like a user-scope install. `tests/test_plugin.py` checks the files in the repository match.
    """
    hooks = {
        event: [{"hooks": [hook_handler(event, command)]}]
        for event, command in hook_commands(PLUGIN_EXECUTABLE, None).items()
    }
    hooks_json = {
        "description": "octygraph long-term memory: recall on each prompt, store after each answer.",
        "hooks": hooks,
    }
    return {
        PLUGIN_HOOKS_FILE: json.dumps(hooks_json, indent=2) + "\n",
        PLUGIN_COMMAND_FILE: command_file_text(PLUGIN_EXECUTABLE, None),
    }


def write_plugin_files(root: Path) -> list[Path]:
    """Write `plugin_files()` under `root` (the plugin folder); returns the files that changed."""
    changed = []
    for relative, text in plugin_files().items():
        path = Path(root) / relative
        try:
            if path.read_text(encoding="utf-8") == text:
                continue
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        changed.append(path)
    return changed


def user_claude_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user's Claude Code folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    env = os.environ if env is None else env
    configured = env.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".claude"


# --- files ----------------------------------------------------------------------------------------


def _write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Write through a temporary file and a rename, so readers never see half a file."""
    target = path.resolve() if path.is_symlink() else path
    try:
        mode = target.stat().st_mode & 0o777
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


Style = tuple[int | str, bool]  # (indent, ends with a newline)
DEFAULT_STYLE: Style = (2, True)


def _detect_style(text: str) -> Style:
    """The indent and final newline of a JSON file, so a rewrite keeps its look."""
    match = re.search(r"\n([ \t]+)\S", text)
    indent: int | str = 2
    if match:
        space = match.group(1)
        indent = space if "\t" in space else len(space)
    return indent, text.endswith("\n") or not text.strip()


def _dump_settings(data: dict[str, Any], style: Style = DEFAULT_STYLE) -> str:
    indent, newline = style
    return json.dumps(data, indent=indent, ensure_ascii=False) + ("\n" if newline else "")


def _load_settings(path: Path) -> tuple[dict[str, Any] | None, Style]:
    """Parse settings.json and note its formatting; (None, default) when it does not exist.

    Raises:
        InstallError: when the file is not a JSON object or its `hooks` have the wrong shape.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return None, DEFAULT_STYLE
    except (OSError, UnicodeDecodeError) as exc:
        raise InstallError(f"Cannot read {path} ({exc}); fix it and run install again.") from None
    if not text.strip():
        return {}, DEFAULT_STYLE
    try:
        data = json.loads(text)
    except ValueError:
        raise InstallError(
            f"{path} is not valid JSON; fix or remove it and run install again."
        ) from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} must hold a JSON object; fix it and run install again.")
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise InstallError(f'"hooks" in {path} must be an object; fix it and run install again.')
    for event in EVENTS:
        if isinstance(hooks, dict) and event in hooks and not isinstance(hooks[event], list):
            raise InstallError(
                f'"hooks.{event}" in {path} must be a list; fix it and run install again.'
            )
    return data, _detect_style(text)


def _load_record(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("version") == RECORD_VERSION else None


def _empty_record() -> dict[str, Any]:
    return {
        "version": RECORD_VERSION,
        "project_id": None,
        "executable": None,
        "created": {
            "claude_dir": False,
            "settings_file": False,
            "hooks_key": False,
            "events": [],
            "commands_dir": False,
            "command_file": False,
        },
        "hooks": [],
        "command_file_original": None,
    }


# --- settings.json merge --------------------------------------------------------------------------


def _has_handler(groups: list[Any], command: str) -> bool:
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            continue
        for handler in group["hooks"]:
            if isinstance(handler, dict) and handler.get("command") == command:
                return True
    return False


def _remove_handlers(data: dict[str, Any], ours: list[dict[str, str]]) -> int:
    """Remove our handlers (by event and exact command) and the groups they leave empty."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return 0
    removed = 0
    for item in ours:
        groups = hooks.get(item["event"])
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                kept_groups.append(group)
                continue
            kept = [
                h
                for h in handlers
                if not (isinstance(h, dict) and h.get("command") == item["command"])
            ]
            removed += len(handlers) - len(kept)
            if kept or not handlers:
                kept_groups.append({**group, "hooks": kept})
            # A group emptied by the removal was ours (install adds one group per handler).
        hooks[item["event"]] = kept_groups
    return removed


def _prune(data: dict[str, Any], created: dict[str, Any]) -> None:
    """Drop the event lists and the `hooks` object that install created, once they are empty."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event in created.get("events", []):
        if hooks.get(event) == []:
            del hooks[event]
    if created.get("hooks_key") and hooks == {}:
        del data["hooks"]


# --- install --------------------------------------------------------------------------------------


def _absolute_executable(executable: str) -> str:
    if "\n" in executable or "`" in executable or not executable.strip():
        raise InstallError(
            "The octygraph executable path cannot be used in a hook; reinstall octygraph in a "
            "folder whose path has no backquotes or line breaks."
        )
    if os.path.isabs(executable):
        return executable
    found = shutil.which(executable)
    return os.path.abspath(found or executable)


def _seed_database(paths: ProjectPaths) -> bool:
    """Copy the small-baseline profile into the active database when there is none yet."""
    source = paths.profiles_dir / BASELINE_PROFILE
    if paths.db.exists() or not source.is_file():
        return False
    from octygraph.store.sqlite_files import backup_file  # deferred: only needed when seeding

    # Into a temporary file, then a rename: a failed copy never leaves half a database behind.
    backup_file(source, paths.db)
    return True


def _reminders(target: Path, project_id: str | None, home: Path) -> list[str]:
    if project_id is None:
        return [
            "Optional: put OPENROUTER_API_KEY (LLM) and VOYAGE_API_KEY (embeddings) in your "
            "environment; without any key octygraph works offline with a local embedding model.",
            "The project id of a session is the name of its git root folder (or of the folder "
            "Claude Code runs in); run octygraph by hand from the same folder, or set "
            "OCTYBOT_PROJECT.",
            "Open Claude Code in any project and check the hooks with /hooks.",
        ]
    return [
        "Optional: put OPENROUTER_API_KEY (LLM) and VOYAGE_API_KEY (embeddings) in "
        f"{target / '.env'}; without any key octygraph works offline with a local embedding model.",
        "The hooks pin OCTYBOT_PROJECT="
        f"{project_id}; set OCTYBOT_PROJECT={project_id} when you run octygraph by hand elsewhere.",
        "Optional: set WORKER_URL in .env and pair a device (token in "
        f"{home / 'device.json'}) to report usage and cost.",
        "Open Claude Code in the project, accept the folder trust prompt, and check the hooks "
        "with /hooks; each prompt then writes a trace to the debug folder.",
    ]


def install(
    target_dir: Path, settings: Settings, executable: str, *, user_scope: bool = False
) -> InstallReport:
    """Install the hooks, the `/octybot` command and the data folders for one project.

    Args:
        target_dir: The project folder Claude Code is opened in; with `user_scope`, the user's Claude
            folder itself (`user_claude_dir()`), created when missing.
        settings: Resolved settings; `settings.project_id` is pinned into the hook commands (not with
            `user_scope`).
        executable: Absolute path of the `octygraph` command to run from the hooks.
        user_scope: Install for every project: no project id pinned, no project folders created.

    Returns:
        What was done, warnings, and the post-install reminders.

    Raises:
        InstallError: when the folder does not exist or its settings.json cannot be merged safely
            (nothing is changed then).
    """
    target = Path(target_dir).expanduser()
    if user_scope:
        target.mkdir(parents=True, exist_ok=True)
    if not target.is_dir():
        raise InstallError(f"{target} is not a folder; create it or pass the project folder.")
    target = target.resolve()
    exe = _absolute_executable(executable)
    project_id = None if user_scope else settings.project_id
    paths = settings.paths

    claude_dir = target if user_scope else target / ".claude"
    settings_file = claude_dir / "settings.json"
    commands_dir = claude_dir / "commands"
    command_file = commands_dir / COMMAND_NAME
    record_file = claude_dir / RECORD_NAME

    # Read and check everything before the first change.
    original, style = _load_settings(settings_file)
    old_record = _load_record(record_file)
    record = copy.deepcopy(old_record) if old_record is not None else _empty_record()
    created = record["created"]
    commands = hook_commands(exe, project_id)
    command_text = command_file_text(exe, project_id)

    report = InstallReport(
        target_dir=target,
        project_id=project_id,
        settings_file=settings_file,
        command_file=command_file,
        record_file=record_file,
        memory_dir=paths.memory_dir,
        db=paths.db,
        hook_commands=commands,
        reminders=_reminders(target, project_id, settings.home),
    )
    if not Path(exe).is_file():
        report.warnings.append(f"{exe} does not exist yet; the hooks will fail until it does.")

    # settings.json: drop hooks of an earlier install that point elsewhere, then add ours once.
    data: dict[str, Any] = copy.deepcopy(original) if original is not None else {}
    stale = [h for h in record["hooks"] if h.get("command") != commands.get(h.get("event", ""))]
    if stale and _remove_handlers(data, stale):
        report.actions.append("Replaced the hooks of an earlier install.")
    record["hooks"] = [h for h in record["hooks"] if h not in stale]
    if original is None:
        created["settings_file"] = True
    if "hooks" not in data:
        data["hooks"] = {}
        created["hooks_key"] = True
    for event, command in commands.items():
        if event not in data["hooks"]:
            data["hooks"][event] = []
            if event not in created["events"]:
                created["events"].append(event)
        if not _has_handler(data["hooks"][event], command):
            data["hooks"][event].append({"hooks": [hook_handler(event, command)]})
            report.actions.append(f"Added the {event} hook to {settings_file}.")
        entry = {"event": event, "command": command}
        if entry not in record["hooks"]:
            record["hooks"].append(entry)

    # The slash command.
    existing_command = None
    try:
        existing_command = command_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError):
        existing_command = ""
    own_earlier = existing_command is None or COMMAND_MARKER in existing_command
    if record["command_file_original"] is None and not created["command_file"]:
        if own_earlier:
            created["command_file"] = True
        else:
            # Someone else's octybot.md: keep it in the record so uninstall can put it back.
            record["command_file_original"] = existing_command
    if not claude_dir.exists():
        created["claude_dir"] = True
    if not commands_dir.exists():
        created["commands_dir"] = True
    record["project_id"] = project_id
    record["executable"] = exe

    # Apply: the record first, so a crash half-way still leaves uninstall able to undo.
    claude_dir.mkdir(exist_ok=True)
    record_text = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
    if old_record is None or json.dumps(old_record, indent=2, ensure_ascii=False) + "\n" != (
        record_text
    ):
        _write_atomic(record_file, record_text)
        report.changed = True
    if original is None or data != original:
        _write_atomic(settings_file, _dump_settings(data, style))
        report.changed = True
    commands_dir.mkdir(exist_ok=True)
    if existing_command != command_text:
        _write_atomic(command_file, command_text)
        report.changed = True
        report.actions.append(f"Wrote the /octybot slash command to {command_file}.")

    if user_scope:
        # Each project's folders and database are made by its first hook run.
        if not report.changed and not report.actions:
            report.actions.append("Already installed; nothing changed.")
        return report

    # Data folders and the starting database.
    existed = paths.memory_dir.is_dir()
    paths.ensure()
    if not existed:
        report.actions.append(f"Created the memory folder {paths.memory_dir}.")
    try:
        report.seeded = _seed_database(paths)
    except Exception as exc:  # a failed seed must not undo a good install
        report.warnings.append(f"Could not seed {paths.db} from {BASELINE_PROFILE}: {exc}")
    if report.seeded:
        report.actions.append(f"Seeded {paths.db} from the {BASELINE_PROFILE} profile.")
    if not report.changed and not report.actions:
        report.actions.append("Already installed; nothing changed.")
    return report


# --- uninstall ------------------------------------------------------------------------------------

_OUR_HOOK = re.compile(
    r'^(?:OCTYBOT_PROJECT=\S+ )?(?:"[^"]*octygraph"|\S*octygraph) hook (?:prompt|stop|session-start|session-end)$'
)


def _guess_record(settings_data: dict[str, Any] | None, command_file: Path) -> dict[str, Any]:
    """Without a record, find our hooks by their shape; nothing is known to be created by us."""
    record = _empty_record()
    hooks = (settings_data or {}).get("hooks")
    if isinstance(hooks, dict):
        for event in EVENTS:
            groups = hooks.get(event)
            only_ours = bool(groups)
            for group in groups if isinstance(groups, list) else []:
                handlers = group.get("hooks") if isinstance(group, dict) else None
                for handler in handlers if isinstance(handlers, list) else []:
                    command = handler.get("command") if isinstance(handler, dict) else None
                    if isinstance(command, str) and _OUR_HOOK.match(command):
                        record["hooks"].append({"event": event, "command": command})
                    else:
                        only_ours = False
            # An event list holding nothing but our hooks was created by an install: drop it too.
            if only_ours:
                record["created"]["events"].append(event)
    try:
        if COMMAND_MARKER in command_file.read_text(encoding="utf-8"):
            record["created"]["command_file"] = True
    except (OSError, UnicodeDecodeError):
        pass
    return record


def _rmdir_if_empty(folder: Path) -> bool:
    try:
        folder.rmdir()
        return True
    except OSError:
        return False


def uninstall(target_dir: Path, settings: Settings, *, user_scope: bool = False) -> UninstallReport:
    """Remove what `install` added to a project, restoring settings.json; memory data is kept.

    Args:
        target_dir: The project folder given to `install` (with `user_scope`, the user's Claude
            folder).
        settings: Resolved settings (used to name the memory folder that is kept).

    Returns:
        What was removed.

    Raises:
        InstallError: when the folder does not exist or settings.json is not valid JSON (nothing is
            changed then).
    """
    target = Path(target_dir).expanduser()
    if not target.is_dir():
        raise InstallError(f"{target} is not a folder; pass the project folder you installed into.")
    target = target.resolve()
    claude_dir = target if user_scope else target / ".claude"
    settings_file = claude_dir / "settings.json"
    commands_dir = claude_dir / "commands"
    command_file = commands_dir / COMMAND_NAME
    record_file = claude_dir / RECORD_NAME
    report = UninstallReport(target_dir=target, memory_dir=settings.paths.memory_dir)

    original, style = _load_settings(settings_file)
    record = _load_record(record_file)
    if record is None:
        record = _guess_record(original, command_file)
        if record_file.exists():
            report.warnings.append(f"{record_file} was unreadable; removed hooks by their shape.")
    created = record["created"]

    # settings.json
    if original is not None:
        data = copy.deepcopy(original)
        removed = _remove_handlers(data, record["hooks"])
        _prune(data, created)
        if removed:
            report.actions.append(f"Removed {removed} octygraph hook(s) from {settings_file}.")
        if created.get("settings_file") and data == {}:
            settings_file.unlink()
            report.actions.append(f"Deleted {settings_file}, which install had created.")
            report.changed = True
        elif data != original:
            _write_atomic(settings_file, _dump_settings(data, style))
            report.changed = True

    # The slash command.
    original_command = record.get("command_file_original")
    if isinstance(original_command, str):
        _write_atomic(command_file, original_command)
        report.actions.append(f"Restored the earlier {command_file}.")
        report.changed = True
    elif created.get("command_file") and command_file.exists():
        text = command_file.read_text(encoding="utf-8", errors="replace")
        if COMMAND_MARKER in text:
            command_file.unlink()
            report.actions.append(f"Deleted {command_file}.")
            report.changed = True
        else:
            report.warnings.append(f"Kept {command_file}: it was edited after install.")

    # The record and the folders install created, when they are empty.
    if record_file.exists():
        record_file.unlink()
        report.changed = True
    if created.get("commands_dir") and _rmdir_if_empty(commands_dir):
        report.actions.append(f"Removed the empty folder {commands_dir}.")
    if created.get("claude_dir") and _rmdir_if_empty(claude_dir):
        report.actions.append(f"Removed the empty folder {claude_dir}.")
    return report
