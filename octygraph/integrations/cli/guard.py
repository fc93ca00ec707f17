"""The command line's outer guard: every error ends as one sentence on stderr and exit code 1.

Commands turn the errors a user can cause into sentences themselves (`cli.user_errors`); this guard
catches the rest at the one entry point: arguments that are not valid UTF-8, usage mistakes, and any
exception a command did not expect, which would otherwise print a traceback. With OCTY_DEBUG=1 the
traceback is printed too.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

MAX_MESSAGE = 400


def sentence(text: str) -> str:
    """One line, secrets redacted, ending with a full stop."""
    line = " ".join(str(text).split())
    try:
        from octygraph.safety.secrets import redact_secrets

        line = redact_secrets(line)[0]
    except Exception:
        pass
    if len(line) > MAX_MESSAGE:
        line = line[: MAX_MESSAGE - 1].rstrip() + "…"
    return line if line.endswith((".", "?", "!", "…")) else line + "."


def _say(text: str) -> None:
    try:
        sys.stderr.write(sentence(text) + "\n")
        sys.stderr.flush()
    except Exception:
        pass


def _fail(text: str, exc: BaseException | None = None) -> NoReturn:
    if exc is not None and os.environ.get("OCTY_DEBUG", "").strip().lower() in (
        "1",
        "true",
        "yes",
        "on",
    ):
        traceback.print_exception(exc)
    _say(text)
    sys.exit(1)


def _is(exc: BaseException, name: str) -> bool:
    """Whether `exc` is a click `name` (typer ships its own copy of click, so match by class name)."""
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def run(app: Callable[..., Any], args: Sequence[str] | None = None) -> NoReturn:
    """Run the typer `app` and exit: 0 on success, 1 with one sentence on any error."""
    # Bytes that are not UTF-8 (kept by Python as lone surrogates) become U+FFFD: the rest of the
    # text is still searched, run or stored.
    from octygraph.text.utf8 import valid_text

    args = [valid_text(arg) for arg in (sys.argv[1:] if args is None else args)]
    try:
        code = app(args=args, standalone_mode=False, prog_name="octygraph")
    except SystemExit:
        raise
    except KeyboardInterrupt as exc:
        _fail("Interrupted; nothing was half-written", exc)
    except Exception as exc:
        if _is(exc, "NoArgsIsHelpError"):
            exc.show()  # type: ignore[attr-defined]  # a command group alone: its help, as before
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        if _is(exc, "Exit"):
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        if _is(exc, "UsageError"):
            ctx = getattr(exc, "ctx", None)
            where = ctx.command_path if ctx is not None else "octygraph"
            option = str(getattr(exc, "option_name", "") or "")
            if _is(exc, "NoSuchOption") and any(c.isspace() for c in option):
                # A prompt or memory that starts with "-" ("--- BEGIN NOTES ---\n...") reads as an option.
                _fail(
                    f"Text that starts with '-' reads as an option: put `--` before it, as in "
                    f'`{where} -- "..."`',
                    exc,
                )
            message = exc.format_message().rstrip(".")  # type: ignore[attr-defined]
            _fail(f"{message}; see `{where} --help`", exc)
        if _is(exc, "Abort"):
            _fail("Interrupted; nothing was half-written", exc)
        if _is(exc, "ClickException"):
            _fail(exc.format_message(), exc)  # type: ignore[attr-defined]
        _fail(_describe(exc), exc)
    sys.exit(code if isinstance(code, int) else 0)


def _describe(exc: Exception) -> str:
    """A sentence for an exception no command expected."""
    if isinstance(exc, RecursionError):
        return "The input is nested too deeply to read"
    if isinstance(exc, UnicodeError):
        return "Some text is not valid UTF-8; nothing was done"
    from octygraph.config.settings import SettingsError

    if isinstance(exc, SettingsError):
        return str(exc)
    message = str(exc).strip() or type(exc).__name__
    if isinstance(exc, OSError) and exc.strerror:
        message = f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return f"octygraph could not finish: {message} ({type(exc).__name__})"
