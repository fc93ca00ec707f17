"""Settings: environment, secrets and per-project paths.

Every value comes from the environment first; secrets also fall back to a `.env` file in the working
directory and then in its parent, as the Octybot configuration does. Secrets are held as
`pydantic.SecretStr`, so they print as `**********` in logs, traces and error messages.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from octygraph.config import setting_table as table
from octygraph.config.private import private_mkdir

DEFAULT_MODEL: str = table.default("LAYER1")
DEFAULT_VOYAGE_MODEL: str = table.default("VOYAGE_MODEL")
OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"

SECRET_NAMES = table.SECRET_NAMES


class SettingsError(ValueError):
    """A setting has a value that cannot be used; the message says which and what to do."""


def read_dotenv(path: Path) -> dict[str, str]:
    """Parse a `.env` file (KEY=VALUE lines, optional `export`, quotes, comments); missing file -> {}."""
    values: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return values
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        if line.startswith("export "):
            line = line[len("export ") :].strip()
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        if key:
            values[key] = value
    return values


def resolve_value(name: str, env: Mapping[str, str], cwd: Path) -> str | None:
    """Resolve one value: environment, then `.env` in `cwd`, then `.env` in its parent."""
    value = env.get(name)
    if value:
        return value
    for folder in (cwd, cwd.parent):
        value = read_dotenv(folder / ".env").get(name)
        if value:
            return value
    return None


def _parsed(env: Mapping[str, str], name: str) -> Any:
    """One variable parsed by its entry in the settings table."""
    try:
        return table.value(name, env)
    except table.SettingValueError as exc:
        raise SettingsError(str(exc)) from None


@dataclass(frozen=True)
class ProjectPaths:
    """Where one project's memory lives: `$OCTYBOT_HOME/projects/<project-id>/memory/`."""

    home: Path
    project_id: str
    memory_dir: Path
    db: Path

    @property
    def checkpoints(self) -> Path:
        return self.memory_dir / "checkpoints.db"

    @property
    def profile_state(self) -> Path:
        return self.memory_dir / "memory-profile-state.json"

    @property
    def debug_dir(self) -> Path:
        return self.memory_dir / "debug"

    @property
    def dev_mode_flag(self) -> Path:
        return self.debug_dir / ".dev-mode"

    @property
    def verbose_flag(self) -> Path:
        return self.debug_dir / ".verbose-mode"

    @property
    def manifest(self) -> Path:
        return self.debug_dir / ".stored-manifest.json"

    @property
    def dev_log(self) -> Path:
        return self.debug_dir / "dev.log"

    @property
    def profiles_dir(self) -> Path:
        return self.memory_dir / "profiles"

    @property
    def snapshots_dir(self) -> Path:
        return self.memory_dir / "snapshots"

    def ensure(self) -> ProjectPaths:
        """Create the missing data folders, private to the user (0700).

        A folder that exists and is writable is made private too (homes from older versions had
        0755); one the user made read-only stays as it is.
        """
        for folder in (
            self.home,
            self.home / "projects",
            self.memory_dir.parent,
            self.memory_dir,
            self.debug_dir,
            self.profiles_dir,
            self.snapshots_dir,
            self.db.parent,
        ):
            private_mkdir(folder)
            if not folder.is_relative_to(self.home) or not os.access(folder, os.W_OK):
                continue  # DB_PATH's folder is the user's own, and a read-only home stays read-only
            try:
                folder.chmod(0o700)
            except OSError:
                pass
        return self


def octybot_home(env: Mapping[str, str]) -> Path:
    """The data folder: `OCTYBOT_HOME`, else ~/.octybot."""
    return Path(env.get("OCTYBOT_HOME") or Path.home() / ".octybot").expanduser()


def sanitize_project_id(raw: str) -> str:
    """Make a project id safe as one folder name.

    An id of up to 100 characters (and 200 bytes) is kept as it is; a longer one becomes its start
    and a hash of the whole, so it stays short, stable and distinct from its neighbours.
    """
    cleaned = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in raw.strip())
    cleaned = cleaned.strip(".-") or "default"
    if len(cleaned) <= 100 and len(cleaned.encode("utf-8", "replace")) <= 200:
        return cleaned
    digest = hashlib.sha256(cleaned.encode("utf-8", "replace")).hexdigest()[:12]
    start = cleaned.encode("utf-8", "replace")[:60].decode("utf-8", "ignore").strip(".-")
    return f"{start}-{digest}" if start else digest


def is_folder(path: str) -> bool:
    """Whether `path` names a folder; one too long to look at ("File name too long") counts.

    A hook's payload names its working folder; when the path is longer than the system lets a
    program look at, it still names the project, and only its name is used.
    """
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError as exc:
        return exc.errno == errno.ENAMETOOLONG
    except ValueError:
        return False


def git_root(folder: Path) -> Path | None:
    """The nearest folder at or above `folder` holding `.git` (a folder, or a worktree's file)."""
    for candidate in (folder, *folder.parents):
        try:
            if (candidate / ".git").exists():
                return candidate
        except OSError:
            continue  # a path too long to look at ("File name too long"): no repository there
    return None


def default_project_id(env: Mapping[str, str], cwd: Path) -> str:
    """The project id when none is pinned: the git root's folder name, else the folder's own name.

    The folder is `$CLAUDE_PROJECT_DIR` when Claude Code set it (a hook's working folder follows `cd`),
    else `cwd`; taking its git root makes every subfolder of a repository one project.
    """
    folder = cwd
    claude_dir = env.get("CLAUDE_PROJECT_DIR")
    if claude_dir and os.path.isabs(claude_dir) and os.path.isdir(claude_dir):
        folder = Path(claude_dir)
    root = git_root(folder) or folder
    return root.name


@dataclass(frozen=True)
class Settings:
    """Everything octygraph reads from the environment, resolved once."""

    home: Path
    project_id: str
    db_path_override: Path | None = None
    # A PostgreSQL server instead of the SQLite file (one schema per project); holds a password.
    database_url: SecretStr | None = None
    cwd: Path = field(default_factory=Path.cwd)
    # LLM
    openrouter_api_key: SecretStr | None = None
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    cloudflare_api_token: SecretStr | None = None
    cf_account_id: str | None = None
    anthropic_api_key: SecretStr | None = None
    layer1_model: str = DEFAULT_MODEL
    layer2_model: str = table.default("LAYER2")
    # Embeddings
    embeddings: str = "auto"  # auto | local | voyage
    voyage_api_key: SecretStr | None = None
    voyage_model: str = DEFAULT_VOYAGE_MODEL
    # Usage reporting
    worker_url: str | None = None
    # Limits
    max_turns: int = table.default("OCTY_MAX_TURNS")
    loop_timeout_s: float = table.default("OCTY_LOOP_TIMEOUT_S")
    context_budget_chars: int = table.default("OCTY_CONTEXT_BUDGET")
    start_budget_chars: int = table.default("OCTY_START_BUDGET")
    hook_budget_s: float = table.default("OCTY_HOOK_BUDGET_S")
    debug: bool = table.default("OCTY_DEBUG")
    trace_keep: int = table.default("OCTY_TRACE_KEEP")
    trace_max_days: float = table.default("OCTY_TRACE_MAX_DAYS")
    candidate_days: float = table.default("OCTY_CANDIDATE_DAYS")

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        project_id: str | None = None,
    ) -> Settings:
        """Read settings from the environment (and `.env` files for secrets)."""
        env = os.environ if env is None else env
        cwd = (cwd or Path.cwd()).resolve()

        def value(name: str) -> str | None:
            return resolve_value(name, env, cwd)

        def secret(name: str) -> SecretStr | None:
            raw = value(name)
            return SecretStr(raw) if raw else None

        home = octybot_home(env)
        pid = project_id or env.get("OCTYBOT_PROJECT") or default_project_id(env, cwd)
        db_override = env.get("DB_PATH")
        embeddings = _parsed(env, "OCTY_EMBEDDINGS")
        return cls(
            home=home,
            project_id=sanitize_project_id(pid),
            db_path_override=Path(db_override).expanduser() if db_override else None,
            database_url=SecretStr(env["OCTY_DATABASE_URL"])
            if env.get("OCTY_DATABASE_URL")
            else None,
            cwd=cwd,
            openrouter_api_key=secret("OPENROUTER_API_KEY"),
            llm_base_url=value("OCTY_LLM_BASE_URL"),
            llm_api_key=secret("OCTY_LLM_API_KEY"),
            cloudflare_api_token=secret("CLOUDFLARE_API_TOKEN"),
            cf_account_id=value("CF_ACCOUNT_ID"),
            anthropic_api_key=secret("ANTHROPIC_API_KEY"),
            layer1_model=_parsed(env, "LAYER1"),
            layer2_model=_parsed(env, "LAYER2"),
            embeddings=embeddings,
            voyage_api_key=secret("VOYAGE_API_KEY"),
            voyage_model=_parsed(env, "VOYAGE_MODEL"),
            worker_url=value("WORKER_URL"),
            max_turns=_parsed(env, "OCTY_MAX_TURNS"),
            loop_timeout_s=_parsed(env, "OCTY_LOOP_TIMEOUT_S"),
            context_budget_chars=_parsed(env, "OCTY_CONTEXT_BUDGET"),
            start_budget_chars=_parsed(env, "OCTY_START_BUDGET"),
            hook_budget_s=_parsed(env, "OCTY_HOOK_BUDGET_S"),
            debug=_parsed(env, "OCTY_DEBUG"),
            trace_keep=_parsed(env, "OCTY_TRACE_KEEP"),
            trace_max_days=_parsed(env, "OCTY_TRACE_MAX_DAYS"),
            candidate_days=_parsed(env, "OCTY_CANDIDATE_DAYS"),
        )

    @property
    def paths(self) -> ProjectPaths:
        memory_dir = self.home / "projects" / self.project_id / "memory"
        db = self.db_path_override or memory_dir / "memory.db"
        return ProjectPaths(self.home, self.project_id, memory_dir, db)

    @property
    def llm_configured(self) -> bool:
        """True when some chat model endpoint has credentials (or a local base URL)."""
        return bool(self.llm_base_url or self.openrouter_api_key)

    @property
    def embedding_backend(self) -> str:
        """`voyage` or `local`: OCTY_EMBEDDINGS wins, else Voyage when its key is set."""
        if self.embeddings in ("local", "voyage"):
            return self.embeddings
        return "voyage" if self.voyage_api_key else "local"

    def redact(self, text: str) -> str:
        """Replace every configured secret value in `text` with `***`."""
        for secret in (
            self.database_url,
            self.openrouter_api_key,
            self.llm_api_key,
            self.cloudflare_api_token,
            self.anthropic_api_key,
            self.voyage_api_key,
        ):
            if secret is not None:
                raw = secret.get_secret_value()
                if raw:
                    text = text.replace(raw, "***")
        return text
