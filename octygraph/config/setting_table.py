"""Every environment variable octygraph reads: name, default, parser, and who depends on it.

Standard library only: the hook client imports this on every prompt. `Settings`, the service protocol
(which variables travel with each request, which ones make a running service restart), the runtime
context defaults, `octygraph doctor` and the tests all read this one table.

Scopes:

- `request`: read through `Settings.from_env(env=...)`. The client sends them with every request, so one
  service answers shells and projects that set them differently; a change never restarts it.
- `service`: read from the service's own process environment (base-URL overrides, retry delays,
  tracing). A client whose value differs gets a fresh service.
- `client`: read by the hook client or to configure the service process; never restarts it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs the hook client time
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


class SettingValueError(ValueError):
    """A variable holds a value its parser refuses; the message names it and says what is expected."""


def text(raw: str) -> str:
    return raw


def positive_float(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise SettingValueError(f"must be a number, got {raw!r}") from None
    if not value > 0 or value == float("inf"):
        raise SettingValueError(f"must be greater than zero, got {raw!r}")
    return value


def positive_int(raw: str) -> int:
    return int(positive_float(raw))


def days_or_never(raw: str) -> float:
    """A number of days, or 0 for never."""
    try:
        value = float(raw)
    except ValueError:
        raise SettingValueError(f"must be a number of days (0: never), got {raw!r}") from None
    if not 0 <= value < float("inf"):
        raise SettingValueError(f"must be 0 (never) or more days, got {raw!r}")
    return value


def flag(raw: str) -> bool:
    return raw.strip().lower() not in ("", "0", "false", "no", "off")


def embeddings_choice(raw: str) -> str:
    value = (raw or "auto").strip().lower()
    if value not in ("auto", "local", "voyage"):
        raise SettingValueError(f"must be 'local' or 'voyage', got {raw!r}")
    return value


class Setting:
    """One variable: its default (as the environment would spell it), parser and scope."""

    __slots__ = ("default", "dotenv", "help", "name", "parser", "scope", "secret")

    def __init__(
        self,
        name: str,
        default: str | None,
        parser: Callable[[str], Any],
        scope: str,
        help: str,
        *,
        secret: bool = False,
        dotenv: bool = False,
    ) -> None:
        self.name = name
        self.default = default
        self.parser = parser
        self.scope = scope
        self.help = help
        self.secret = secret
        self.dotenv = dotenv  # also read from `.env` in the working folder or its parent

    def parse(self, env: Mapping[str, str]) -> Any:
        """The parsed value from `env` (empty or unset means the default).

        Raises:
            SettingValueError: the value does not parse; the message names the variable.
        """
        raw = env.get(self.name)
        if raw is None or raw == "":
            if self.default is None:
                return None
            raw = self.default
        try:
            return self.parser(raw)
        except SettingValueError as exc:
            raise SettingValueError(f"{self.name} {exc}.") from None


_R, _S, _C = "request", "service", "client"

TABLE: tuple[Setting, ...] = (
    # Where memory lives
    Setting("OCTYBOT_HOME", None, text, _R, "data folder (default ~/.octybot)"),
    Setting("OCTYBOT_PROJECT", None, text, _R, "project id (default: the git root's folder name)"),
    Setting("CLAUDE_PROJECT_DIR", None, text, _R, "project folder Claude Code names for the hooks"),
    Setting("CLAUDE_CONFIG_DIR", None, text, _R, "Claude Code's config folder (default ~/.claude)"),
    Setting("DB_PATH", None, text, _R, "database file instead of the project's memory.db"),
    Setting(
        "OCTY_DATABASE_URL",
        None,
        text,
        _R,
        "postgresql://... to keep memories on a PostgreSQL server with pgvector",
        secret=True,
    ),
    # Thinking with an LLM
    Setting("OPENROUTER_API_KEY", None, text, _R, "OpenRouter key", secret=True, dotenv=True),
    Setting("OCTY_LLM_BASE_URL", None, text, _R, "OpenAI-compatible endpoint", dotenv=True),
    Setting("OCTY_LLM_API_KEY", None, text, _R, "its key", secret=True, dotenv=True),
    Setting("CLOUDFLARE_API_TOKEN", None, text, _R, "Workers AI token", secret=True, dotenv=True),
    Setting("CF_ACCOUNT_ID", None, text, _R, "Workers AI account", dotenv=True),
    Setting("ANTHROPIC_API_KEY", None, text, _R, "fallback model key", secret=True, dotenv=True),
    Setting("LAYER1", "openai/gpt-oss-120b", text, _R, "model for classification"),
    Setting("LAYER2", "openai/gpt-oss-120b", text, _R, "model for planning and curation"),
    # Embeddings
    Setting("OCTY_EMBEDDINGS", "auto", embeddings_choice, _R, "local or voyage"),
    Setting("VOYAGE_API_KEY", None, text, _R, "Voyage key", secret=True, dotenv=True),
    Setting("VOYAGE_MODEL", "voyage-4", text, _R, "Voyage model"),
    # Usage reporting
    Setting("WORKER_URL", None, text, _R, "usage report endpoint", dotenv=True),
    # Limits
    Setting("OCTY_MAX_TURNS", "8", positive_int, _R, "store-agent turns (retrieve: 1)"),
    Setting("OCTY_LOOP_TIMEOUT_S", "30", positive_float, _R, "seconds per ReAct loop"),
    Setting("OCTY_CONTEXT_BUDGET", "6000", positive_int, _R, "characters of injected context"),
    Setting("OCTY_START_BUDGET", "1500", positive_int, _R, "characters of the session-start block"),
    Setting("OCTY_HOOK_BUDGET_S", "12", positive_float, _R, "seconds a prompt hook may take"),
    Setting("OCTY_DEBUG", "0", flag, _R, "log every stage to stderr"),
    # Retention of debug traces and their checkpoints
    Setting("OCTY_TRACE_KEEP", "500", positive_int, _R, "debug traces (and checkpoints) kept"),
    Setting("OCTY_TRACE_MAX_DAYS", "30", positive_float, _R, "days a debug trace is kept"),
    Setting(
        "OCTY_CANDIDATE_DAYS",
        "30",
        days_or_never,
        _R,
        "days an unused candidate waits for review before it is archived (0: never)",
    ),
    # Read from the service's own environment
    Setting("OCTY_OPENROUTER_BASE_URL", None, text, _S, "OpenRouter base URL override"),
    Setting("OCTY_CF_BASE_URL", None, text, _S, "Workers AI base URL override"),
    Setting("OCTY_FALLBACK_MODEL", None, text, _S, "fallback model name"),
    Setting("OCTY_LLM_RETRY_BASE_S", None, text, _S, "first retry delay of LLM calls"),
    Setting("ANTHROPIC_BASE_URL", None, text, _S, "fallback model endpoint"),
    Setting("ANTHROPIC_API_URL", None, text, _S, "fallback model endpoint (older name)"),
    Setting("LANGSMITH_TRACING", None, text, _S, "LangSmith tracing"),
    Setting("LANGSMITH_API_KEY", None, text, _S, "LangSmith key", secret=True),
    Setting("LANGSMITH_PROJECT", None, text, _S, "LangSmith project"),
    Setting("LANGSMITH_ENDPOINT", None, text, _S, "LangSmith endpoint"),
    Setting("LANGCHAIN_TRACING_V2", None, text, _S, "LangSmith tracing (older name)"),
    Setting("LANGCHAIN_API_KEY", None, text, _S, "LangSmith key (older name)", secret=True),
    Setting("LANGCHAIN_PROJECT", None, text, _S, "LangSmith project (older name)"),
    Setting("LANGCHAIN_ENDPOINT", None, text, _S, "LangSmith endpoint (older name)"),
    Setting(
        "OCTY_AUTO_LEARN",
        "1",
        flag,
        _S,
        "the service runs `memory learn` itself when enough new approvals and forgets exist",
    ),
    # The hook client and the service process itself
    Setting("OCTY_NO_SERVICE", "0", flag, _C, "run hooks in their own process"),
    Setting("OCTY_NO_HOOKS", "0", flag, _C, "turn the hooks off"),
    Setting("OCTY_SERVE_IDLE_S", "1800", positive_float, _C, "service idle timeout (seconds)"),
    Setting(
        "OCTY_SERVE_MAX_STORES",
        "32",
        positive_int,
        _C,
        "open memory stores (and checkpoint files) the service keeps, across projects",
    ),
    Setting(
        "OCTY_SERVER_URL", None, text, _C, "team server (octygraph serve --http) for the hooks"
    ),
    Setting("OCTY_SERVER_TOKEN", None, text, _C, "bearer token for the team server", secret=True),
)

BY_NAME: dict[str, Setting] = {s.name: s for s in TABLE}
REQUEST_VARS = frozenset(s.name for s in TABLE if s.scope == _R)
SERVICE_VARS = frozenset(s.name for s in TABLE if s.scope == _S)
CLIENT_VARS = frozenset(s.name for s in TABLE if s.scope == _C)
SECRET_NAMES = tuple(s.name for s in TABLE if s.secret)


def value(name: str, env: Mapping[str, str]) -> Any:
    """The parsed value of one variable (see `Setting.parse`)."""
    return BY_NAME[name].parse(env)


START_BUDGET_S = 8.0
"""SessionStart answers within this from the hook's start, whatever `OCTY_HOOK_BUDGET_S` says (Claude Code
gives that hook 10 s). Kept here, where the stdlib-only thin client can read it too."""
KEPT_S = 2.0
"""Seconds of its budget every hook process keeps, whatever the LLM or the machine's load does: its
process has ended (the service's answer printed, or an in-process run given up) this long before its
budget, counted from the process's start, runs out. Here for the thin client, which keeps it too."""


def default(name: str) -> Any:
    """The parsed default of one variable."""
    return BY_NAME[name].parse({})


def lenient(name: str, env: Mapping[str, str]) -> Any:
    """The parsed value, or the default when the value is bad (hooks never fail on a setting)."""
    try:
        return BY_NAME[name].parse(env)
    except SettingValueError:
        return default(name)


def problems(env: Mapping[str, str]) -> list[str]:
    """One sentence per variable whose value does not parse."""
    found: list[str] = []
    for setting in TABLE:
        try:
            setting.parse(env)
        except SettingValueError as exc:
            found.append(str(exc))
    return found
