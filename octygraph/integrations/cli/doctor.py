"""`octygraph doctor`: what is wrong with this machine's memory, and how to fix it.

Each check gives one finding: `ok`, `note` (worth knowing, nothing to fix) or `problem` (memory is off or
degraded until it is fixed, with the fix in one sentence). Never raises and never starts a service.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from octygraph.config import setting_table as table


@dataclass(frozen=True)
class Finding:
    """One check's outcome."""

    check: str
    level: str  # ok | note | problem
    message: str
    fix: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"check": self.check, "level": self.level, "message": self.message, "fix": self.fix}


def _settings_findings(env: Mapping[str, str]) -> list[Finding]:
    found: list[Finding] = []
    for setting in table.TABLE:
        try:
            setting.parse(env)
        except table.SettingValueError as exc:
            default = f" (default {setting.default})" if setting.default else ""
            found.append(
                Finding(
                    "settings",
                    "problem",
                    f"{exc} Memory is off while it is set so.",
                    f"Unset {setting.name}{default} or give it a valid value, "
                    "in the environment Claude Code starts with.",
                )
            )
    return found or [Finding("settings", "ok", "Every octygraph setting has a usable value.")]


def _home_findings(home: Path) -> list[Finding]:
    from octygraph.service.client import home_problem

    problem = home_problem(home)
    if problem and (home / "projects").is_dir() and home.is_dir():
        # Memories kept here are still read: recall works, storing does not.
        return [
            Finding(
                "home",
                "problem",
                f"The memory folder {home} is read-only here, so memories are recalled but nothing "
                "new is stored.",
                f"Make {home} a folder you can write to (chmod -R u+w {home}) to store memories again.",
            )
        ]
    if problem:
        return [
            Finding(
                "home",
                "problem",
                f"The memory folder {home} cannot be used: {problem}; nothing is stored or recalled.",
                f"Make {home} a folder you can write to, or point OCTYBOT_HOME at one.",
            )
        ]
    if not home.exists():
        return [Finding("home", "note", f"{home} does not exist yet; the first hook creates it.")]
    return [Finding("home", "ok", f"The memory folder {home} is writable.")]


def _database_findings(env: Mapping[str, str]) -> list[Finding]:
    from octygraph.config.settings import Settings, SettingsError
    from octygraph.store.opening import open_store

    clean = {k: v for k, v in env.items() if not _bad(k, env)}
    try:
        settings = Settings.from_env(env=clean)
    except SettingsError as exc:
        return [Finding("database", "problem", str(exc), "Fix the setting it names.")]
    db = settings.paths.db
    if not db.exists():
        return [
            Finding(
                "database",
                "note",
                f"No database yet for project {settings.project_id} ({db}); the first memory creates it.",
            )
        ]
    try:
        store = open_store(settings, create=False)
    except Exception as exc:
        reason = settings.redact(" ".join(str(exc).split()))
        return [
            Finding(
                "database",
                "problem",
                f"The database {db} cannot be read: {reason}",
                "Restore a snapshot with `octygraph memory freeze load NAME`, or move the file "
                "away so a new one is created.",
            )
        ]
    try:
        count = len(list(store.iter_all()))
    except Exception as exc:
        return [
            Finding(
                "database",
                "problem",
                f"The database {db} is damaged: {' '.join(str(exc).split())}",
                "Restore a snapshot with `octygraph memory freeze load NAME`, or move the file away.",
            )
        ]
    finally:
        store.close()
    return [Finding("database", "ok", f"{db} holds {count} memories.")]


def _bad(name: str, env: Mapping[str, str]) -> bool:
    setting = table.BY_NAME.get(name)
    if setting is None:
        return False
    try:
        setting.parse(env)
    except table.SettingValueError:
        return True
    return False


def _service_findings(home: Path) -> list[Finding]:
    from octygraph.service import client, protocol

    health = client.health_at(home)
    state = health.get("state")
    found: list[Finding] = []
    if health.get("running"):
        found.append(
            Finding("service", "ok", f"The memory service runs (pid {health.get('pid')}).")
        )
    elif state == "not answering":
        pid = health.get("pid")
        found.append(
            Finding(
                "service",
                "problem",
                f"The memory service (pid {pid or '?'}) does not answer; the next prompt replaces it.",
                f"Run `kill -9 {pid}`, or wait for the next prompt."
                if pid
                else "Wait for the next prompt.",
            )
        )
    elif state == "stale socket":
        found.append(
            Finding(
                "service",
                "note",
                "A socket file is left from a service that ended; the next hook replaces it.",
            )
        )
    else:
        found.append(
            Finding("service", "note", "The memory service is not running; hooks start it.")
        )
    try:
        spooled = [
            n for n in os.listdir(protocol.ServicePaths(home).spool_dir) if n.endswith(".json")
        ]
    except OSError:
        spooled = []
    if spooled:
        found.append(
            Finding(
                "service",
                "note",
                f"{len(spooled)} hand-off requests wait in the spool; the service stores them when it runs.",
            )
        )
    return found


def _embedding_findings(env: Mapping[str, str]) -> list[Finding]:
    from octygraph.embeddings import EmbeddingModelError, local_embeddings

    choice = table.lenient("OCTY_EMBEDDINGS", env)
    if choice == "voyage" or (choice == "auto" and env.get("VOYAGE_API_KEY")):
        return [Finding("embeddings", "ok", "Embeddings come from Voyage.")]
    try:
        local_embeddings()
    except EmbeddingModelError as exc:
        return [
            Finding(
                "embeddings",
                "problem",
                f"The local embedding model cannot be loaded: {exc}",
                "Reinstall octygraph with its dependencies (`pip install --force-reinstall octygraph`).",
            )
        ]
    return [Finding("embeddings", "ok", "The local embedding model loads.")]


def diagnose(env: Mapping[str, str] | None = None) -> list[Finding]:
    """Every finding for the environment `env` (default `os.environ`)."""
    from octygraph.service import protocol

    env = os.environ if env is None else env
    home = protocol.home_from_env(env)
    findings: list[Finding] = []
    for check in (
        lambda: _settings_findings(env),
        lambda: _home_findings(home),
        lambda: _database_findings(env),
        lambda: _service_findings(home),
        lambda: _embedding_findings(env),
    ):
        try:
            findings.extend(check())
        except Exception as exc:  # a check that breaks is itself a finding, never a traceback
            findings.append(
                Finding("doctor", "problem", f"A check failed: {type(exc).__name__}: {exc}")
            )
    return findings
