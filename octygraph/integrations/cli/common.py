"""What every command module shares: the consoles, user errors, settings of this invocation, dates.

Command modules import this one, never each other's, so the CLI has no import cycle.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from octygraph.config.settings import Settings, SettingsError
from octygraph.integrations.cli.guard import sentence

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

F = TypeVar("F", bound=Callable[..., Any])

# Set by the top-level --project option before any command runs.
state: dict[str, str | None] = {"project": None}


class UserError(Exception):
    """A mistake the user can fix; its message is shown as is."""


def settings() -> Settings:
    """Settings for this invocation (environment, `.env` files and the --project option)."""
    return Settings.from_env(project_id=state["project"])


def fail(message: str) -> typer.Exit:
    # One line whatever the message carries: a file name may hold a newline or a record separator.
    err.print(sentence(message), markup=False, highlight=False)
    return typer.Exit(1)


def user_errors(func: F) -> F:
    """Turn the errors a user can cause into one sentence and exit code 1."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from octygraph.embeddings import EmbeddingModelError
        from octygraph.llm.errors import LLMConfigError
        from octygraph.store import StoreError

        try:
            return func(*args, **kwargs)
        except (UserError, StoreError, SettingsError, EmbeddingModelError, LLMConfigError) as exc:
            raise fail(_redacted(str(exc))) from None
        except KeyboardInterrupt:
            raise fail("Interrupted; nothing was half-written.") from None
        except OSError as exc:
            raise fail(
                _redacted(f"{exc.strerror or exc}: {exc.filename or ''}".strip(": "))
            ) from None

    return wrapper  # type: ignore[return-value]


def _redacted(text: str) -> str:
    try:
        return settings().redact(text)
    except Exception:
        return text


def parse_date(value: str | None, option: str) -> str | None:
    """Accept YYYY-MM-DD or an ISO date-time; anything else is a user error."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise UserError(f"{option} {value!r} is not a date; use YYYY-MM-DD.") from None
    return parsed.strftime("%Y-%m-%d") if len(value.strip()) <= 10 else parsed.isoformat()


def progress_bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    )


def echo_json(payload: Any) -> None:
    typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))
