"""What one Claude Code hook call does: `handle` turns its event and stdin payload into its reply.

The hook process (`octygraph hook prompt`, ..., in `octygraph.service.client`) hands the payload to the
resident service, which runs `handle` (as does the team server); when no service answers, the client
runs it in its own process through `answer`. The service sits above this module; what it shares with
the service's resume of unfinished runs (the store lease, the bookkeeping after a run) sits below it.

Whatever happens (bad stdin, a broken database, an LLM that is down, the time budget running out) these
give valid output or nothing and return normally, so the hook always exits 0 and the prompt goes
through. Why a run degraded is written to the project's trace folder.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from octygraph.claude import hook_io, modes
from octygraph.config import setting_table as table
from octygraph.config.private import private_mkdir
from octygraph.config.settings import Settings, is_folder
from octygraph.pipeline.run_bookkeeping import after_run
from octygraph.pipeline.sessions import SessionLog
from octygraph.pipeline.store_lease import StoreBusy, StoreLease, open_store_for_run

if TYPE_CHECKING:
    from octygraph.pipeline.runner import CheckpointerLease, OnAnswer

log = logging.getLogger("octygraph.hooks")

ANSWER_MARGIN_S = 0.75
"""A prompt run stops this long before its deadline's end, to write its trace and answer."""
KEPT_S = table.KEPT_S
"""Seconds of its budget every hook keeps, whatever the LLM does: the run's deadline (and so every LLM
call, bounded by it) ends this much before the budget, on top of `ANSWER_MARGIN_S`. On a loaded machine
the answer still goes out in time."""
MIN_RUN_S = 0.05
START_BUDGET_S = table.START_BUDGET_S


def _read_only(settings: Settings) -> bool:
    """Whether the project's memory database is there to read but may not be written here."""
    db = settings.paths.db
    if settings.database_url is not None or not db.exists():
        return False
    return not (os.access(db, os.W_OK) and os.access(db.parent, os.W_OK | os.X_OK))


def run_deadline(started: float, budget_s: float) -> float:
    """When a hook's run must be over: `KEPT_S` and `ANSWER_MARGIN_S` before its budget ends.

    Every LLM call of the run is bounded by this deadline (less its own reserve, see
    `Context.llm_config`), so a slow or hanging model never eats the last `KEPT_S` seconds.
    """
    return started + budget_s - KEPT_S - ANSWER_MARGIN_S


def _deadline(started: float, budget_s: float, until: float | None) -> float:
    """`run_deadline`, and in a hook's own process no later than `ANSWER_MARGIN_S` before `until`."""
    deadline = run_deadline(started, budget_s)
    return deadline if until is None else min(deadline, until - ANSWER_MARGIN_S)


def degraded_notice(exc: BaseException, settings: Settings | None) -> str:
    """One line for the user about a failure that leaves memory off, e.g. a bad setting.

    A file the system refused is said in words ("… cannot be used (permission denied)"), its path cut
    to its end when long, rather than as the raw "[Errno 13] …" text.
    """
    reason = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, OSError) and exc.strerror and exc.filename:
        name = os.fsdecode(exc.filename)
        name = name if len(name) <= 120 else "…" + name[-119:]
        reason = f"{name} cannot be used ({exc.strerror.lower()})"
    if settings is not None:
        reason = settings.redact(reason)
    return f"memory is off: {reason[:300]}"


def _settings(cwd: str | None, env: Mapping[str, str] | None = None) -> Settings:
    folder = Path(cwd) if cwd and is_folder(cwd) else None
    return Settings.from_env(env=env, cwd=folder)


def _record_failure(
    settings: Settings | None, event: str, reason: str, env: Mapping[str, str] | None = None
) -> None:
    """Leave a trace of why a hook gave less context; never raises."""
    try:
        if settings is None:
            settings = Settings.from_env(env=env)
        from octygraph.pipeline.traces import new_trace_id, write_trace

        paths = settings.paths
        private_mkdir(paths.debug_dir)
        write_trace(
            paths.debug_dir,
            {
                "trace_id": new_trace_id(),
                "event": event,
                "degraded": True,
                "notes": [settings.redact(reason)],
                "context": "",
                "stored": [],
            },
        )
        modes.dev_log(paths, f"{event}-failed", {"reason": settings.redact(reason)})
    except Exception:
        pass


def _configure_logging(settings: Settings) -> None:
    if settings.debug or modes.is_on(settings.paths.verbose_flag):
        logging.basicConfig(
            stream=sys.stderr,
            level=logging.INFO,
            format="%(asctime)s octygraph %(levelname)s %(message)s",
        )
        from octygraph.safety.secrets import redact_logs

        redact_logs()


async def _run(
    settings: Settings,
    prompt: str,
    session_id: str,
    *,
    store_only: bool,
    deadline: float,
    stores: StoreLease,
    transcript_path: str = "",
    on_answer: OnAnswer | None = None,
    checkpointers: CheckpointerLease | None = None,
) -> dict[str, Any]:
    from octygraph.llm.errors import LLMConfigError
    from octygraph.pipeline.runner import RunOptions, run_prompt

    async with stores(settings, deadline=deadline) as store:
        options = RunOptions(
            session_id=session_id,
            transcript_path=transcript_path or None,
            source="claude" if store_only else "user",
            store_only=store_only,
            deadline=deadline,
            checkpointers=checkpointers,
        )
        try:
            result = await run_prompt(prompt, settings, store, options, on_answer=on_answer)
        except LLMConfigError as exc:
            # A broken LLM set-up (e.g. an expired Wrangler login) must not cost the prompt its memory.
            log.warning("LLM not usable, thinking without it: %s", exc)
            options.offline = True
            result = await run_prompt(prompt, settings, store, options, on_answer=on_answer)
        if not store_only and (result.get("context") or result.get("needed_again")):
            # The answer went out long ago: count a use of each memory it gave, and of each it needed
            # that the session already had (ranks the start block, keeps a used one in it).
            try:
                from octygraph.memory.uses import note_access
                from octygraph.pipeline.nodes.assemble import rendered_ids

                ids = rendered_ids(result.get("sections") or {}, result.get("context") or "")
                needed = result.get("needed_again") or []
                await asyncio.to_thread(note_access, store, [*ids, *needed])
            except Exception as exc:
                log.warning("memory use not recorded: %s", exc)
        return result


class HookSession(NamedTuple):
    """The session a hook call came from, as its request named it: what the service's upkeep keeps."""

    settings: Settings
    """The settings the call ran with."""
    session_id: str
    transcript_path: str
    """Claude Code's transcript of the session ("" when the request named none)."""
    ended: bool
    """A SessionEnd: its own pass has settled what the session stored."""


@dataclass
class HookReply:
    """A hook's answer: the text for stdout, and the bookkeeping to do once it has been sent."""

    stdout: str = ""
    after: Callable[[], None] | None = None
    notice: str = ""
    """One line for the user when memory is degraded (a bad setting, an unreadable database), else ""."""
    rest: asyncio.Task[Any] | None = None
    """The run's store half, still going when the answer was ready: await `settle()` after replying."""
    session: HookSession | None = None
    """The session the call named, when it named one."""
    error: BaseException | None = None
    """Why the run failed, when it did (its store half included, once settled); None when it did not."""

    async def settle(self) -> None:
        """Wait for the store half (it writes the trace when done); never raises."""
        if self.rest is None:
            return
        try:
            await self.rest
        except Exception as exc:
            self.error = exc
            log.warning("storing after the answer failed: %s", exc)

    def finish(self) -> None:
        """Run the bookkeeping (manifest, dev log, usage report); never raises."""
        if self.after is not None:
            try:
                self.after()
            except Exception as exc:
                log.warning("after-run work failed: %s", exc)


async def handle(
    event: str,
    raw: bytes,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stores: StoreLease | None = None,
    started: float | None = None,
    checkpointers: CheckpointerLease | None = None,
    until: float | None = None,
) -> HookReply:
    """Turn one hook call (its event and stdin bytes) into its stdout text; never raises.

    Shared by the in-process hook and the resident service.

    Args:
        event: `prompt` (UserPromptSubmit), `stop`, `session-start` or `session-end`.
        raw: The hook's stdin bytes.
        env: The environment to read settings from (default `os.environ`): the service passes the client's.
        cwd: Working folder when the payload names none (default the current one).
        stores: How to get the project's store (default: open it and close it after the run).
        started: `time.monotonic()` when the hook started; the prompt budget counts from there.
        checkpointers: How to get the project's checkpointer (default: open one per run).
        until: `time.monotonic()` by which the hook's own process stops waiting for the run (see
            `answer`): the run's deadline ends `ANSWER_MARGIN_S` before it. None in the service.

    Returns:
        The stdout text (the documented JSON, or "") and the after-run work, still to be done by the caller.
    """
    started = time.monotonic() if started is None else started
    stores = stores or open_store_for_run
    settings: Settings | None = None
    try:
        request = hook_io.parse_payload(event, raw)
        if request is None:
            return HookReply()
        settings = _settings(request.cwd or cwd, env)
        _configure_logging(settings)
        reply = await _dispatch(settings, request, env, started, stores, checkpointers, until)
        if request.session_id:
            reply.session = HookSession(
                settings,
                request.session_id,
                getattr(request, "transcript_path", ""),  # a SessionStart names none
                ended=isinstance(request, hook_io.SessionEndRequest),
            )
        return reply
    except StoreBusy as exc:  # every store lent until the deadline: less context, as on a timeout
        _record_failure(settings, event, str(exc), env)
        return HookReply(error=exc)
    except Exception as exc:  # the prompt must go through, whatever failed
        _record_failure(
            settings, event, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}", env
        )
        return HookReply(notice=degraded_notice(exc, settings), error=exc)


async def _dispatch(
    settings: Settings,
    request: hook_io.HookRequest,
    env: Mapping[str, str] | None,
    started: float,
    stores: StoreLease,
    checkpointers: CheckpointerLease | None,
    until: float | None,
) -> HookReply:
    if isinstance(request, hook_io.PromptRequest):
        return await _prompt(settings, request, started, stores, checkpointers, until)
    if isinstance(request, hook_io.StopRequest):
        return await _stop(settings, request, started, stores, checkpointers, until)
    if isinstance(request, hook_io.SessionStartRequest):
        return await _session_start(
            settings, request, os.environ if env is None else env, stores, started, until
        )
    return HookReply(rest=asyncio.create_task(_session_end(settings, request, stores)))


_EMBEDDING: set[asyncio.Future[Any]] = set()
"""Embeddings started ahead of the pipeline, held until done (the event loop keeps only weak references)."""


def _start_embedding(text: str) -> None:
    """Embed `text` with the local model in a worker thread, into the shared cache; errors are the
    pipeline's to meet when it asks for the same vector."""
    from octygraph.embeddings.local import cached_local_embed

    task = asyncio.ensure_future(asyncio.to_thread(cached_local_embed, [text]))
    _EMBEDDING.add(task)

    def done(finished: asyncio.Future[Any]) -> None:
        _EMBEDDING.discard(finished)
        if not finished.cancelled():
            finished.exception()  # retrieved: the pipeline meets the same error and says so

    task.add_done_callback(done)


async def _prompt(
    settings: Settings,
    prompt: hook_io.PromptRequest,
    started: float,
    stores: StoreLease,
    checkpointers: CheckpointerLease | None,
    until: float | None = None,
) -> HookReply:
    """UserPromptSubmit: answer with the retrieve half's context; the store half goes on in `rest`."""
    # The answer must reach the client before its budget (counted from the hook process's start)
    # runs out: the run stops early enough to leave room for writing its trace.
    deadline = _deadline(started, settings.hook_budget_s, until)
    if deadline - time.monotonic() <= MIN_RUN_S:
        _record_failure(settings, "prompt", "no time left in the hook budget")
        return HookReply()
    # The prompt's local vector (the query's, the relevance model's) starts now, beside the run's
    # set-up (settings, trace record, checkpointer), which takes about 5 ms before it would be asked.
    _start_embedding(prompt.prompt)
    # Answer first: the reply goes out when the retrieve half has its context; the store half goes on
    # in `rest`, which the caller awaits after replying.
    ready: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

    async def on_answer(early: dict[str, Any]) -> None:
        if not ready.done():
            ready.set_result(early)

    run = asyncio.create_task(
        _run(
            settings,
            prompt.prompt,
            prompt.session_id,
            store_only=False,
            deadline=deadline,
            stores=stores,
            transcript_path=prompt.transcript_path,
            on_answer=on_answer,
            checkpointers=checkpointers,
        )
    )
    await asyncio.wait({run, ready}, return_when=asyncio.FIRST_COMPLETED)
    early = ready.result() if ready.done() else run.result()
    output = hook_io.format_prompt_output(
        early.get("context") or "",
        max_chars=min(9000, settings.context_budget_chars + 500),
    )
    notice = ""
    if early.get("notice") or _read_only(settings):
        from octygraph.pipeline.runner import read_only_notice

        notice = read_only_notice(settings)

    def after() -> None:  # once the whole run is done: its final result has what it stored
        after_run(settings, "prompt", prompt.session_id, run.result())

    return HookReply(output, after, notice, rest=None if run.done() else run)


async def _stop(
    settings: Settings,
    stop: hook_io.StopRequest,
    started: float,
    stores: StoreLease,
    checkpointers: CheckpointerLease | None,
    until: float | None = None,
) -> HookReply:
    """Stop: store what the assistant's last message holds; nothing to answer."""
    result = await _run(
        settings,
        stop.last_assistant_message,
        stop.session_id,
        store_only=True,
        # Four prompt budgets, as the in-process watchdog allows; the same margin kept.
        deadline=_deadline(started, settings.hook_budget_s * 4, until),
        stores=stores,
        checkpointers=checkpointers,
    )
    return HookReply("", functools.partial(after_run, settings, "stop", stop.session_id, result))


async def _session_start(
    settings: Settings,
    start: hook_io.SessionStartRequest,
    env: Mapping[str, str],
    stores: StoreLease,
    started: float,
    until: float | None = None,
) -> HookReply:
    """SessionStart: forget the ledger after a compaction or a clear, then give the standing block.

    The block (see `octygraph.session.start`) is recorded in the session's ledger as injected, so no
    prompt of the session injects its records again. Bounded by `START_BUDGET_S`; nothing on a timeout.
    """
    from octygraph.memory.uses import note_shown
    from octygraph.session import start as session_start
    from octygraph.store.opening import store_exists

    log_ = SessionLog(settings.paths.memory_dir, start.session_id) if start.session_id else None
    if log_ is not None and start.source in ("compact", "clear"):
        # The transcript is now a summary (or empty): what was injected or stored may be needed again.
        log_.forget()
    if not store_exists(settings):
        return HookReply()
    budget_s = min(settings.hook_budget_s, START_BUDGET_S)
    left = _deadline(started, budget_s, until) - time.monotonic()
    if left <= MIN_RUN_S:
        _record_failure(settings, "session-start", "no time left in the hook budget", env)
        return HookReply()
    folder = Path(start.cwd) if start.cwd and is_folder(start.cwd) else settings.cwd

    async def block() -> tuple[str, list[str]]:
        seen = await asyncio.to_thread(log_.seen) if log_ is not None else set()
        known = await asyncio.to_thread(
            lambda: session_start.passages(session_start.loaded_text(folder, env))
        )
        async with stores(settings, deadline=time.monotonic() + left) as store:
            text, ids = await asyncio.to_thread(
                session_start.build,
                store,
                budget=settings.start_budget_chars,
                seen=seen,
                known=known,
            )
            if text and not _read_only(settings):
                note_shown(store, ids)  # written with the next uses, off this hook's path
            return text, ids

    try:
        text, ids = await asyncio.wait_for(block(), timeout=left)
    except TimeoutError:
        _record_failure(settings, "session-start", "the session-start block took too long", env)
        return HookReply()
    output = hook_io.format_session_start_output(text, max_chars=settings.start_budget_chars)
    if not output:
        return HookReply()
    if _read_only(settings):
        # Nothing can be recorded here: the block is given, and a prompt may give its records again.
        from octygraph.pipeline.runner import read_only_notice

        return HookReply(output, notice=read_only_notice(settings))
    if log_ is not None:
        await asyncio.to_thread(log_.add, injected=ids)
    # Not counted as uses: the block is given whatever the session needs, and counting it would keep
    # whatever it gave once in every later block. They are counted as shows (`block`), so that what
    # no prompt needs leaves it.
    return HookReply(output)


async def _session_end(
    settings: Settings, end: hook_io.SessionEndRequest, stores: StoreLease
) -> None:
    """SessionEnd: settle the candidates the session stored (`octygraph.session.consolidation`); with an LLM,
    judge the rest with the session's transcript in view."""
    from octygraph.session.consolidation import consolidate, record_judged, session_judge
    from octygraph.store.opening import store_exists

    if not store_exists(settings):
        return
    session = SessionLog(settings.paths.memory_dir, end.session_id)
    ids = await asyncio.to_thread(session.stored)
    async with stores(settings) as store:
        if getattr(store, "read_only", False):
            return
        judge = session_judge(settings, end.transcript_path) if ids else None
        settled = await asyncio.to_thread(
            consolidate, store, ids, judge=judge, expire_after_days=settings.candidate_days
        )
    if judge is not None:
        await asyncio.to_thread(record_judged, settings, end.session_id, judge, settled)
    # Said where the pass ran, so the service's idle pass never settles this session again.
    await asyncio.to_thread(session.mark_settled, ids)
    if settled.changed():
        log.info("session %s ended: %s", end.session_id, settled.summary())


async def _answer(
    event: str,
    raw: bytes,
    started: float | None,
    emit: Callable[[str], None] | None,
    until: float | None,
    settled: Callable[[], None] | None,
) -> HookReply:
    reply = await handle(event, raw, started=started, until=until)
    if emit is not None:
        emit(reply.stdout)  # the prompt goes on now; the store half finishes below
    await reply.settle()
    if settled is not None:
        settled()
    return reply


def answer(
    event: str,
    raw: bytes,
    *,
    started: float | None = None,
    notices: list[str] | None = None,
    emit: Callable[[str], None] | None = None,
    until: float | None = None,
    settled: Callable[[], None] | None = None,
) -> str:
    """Run one hook call in this process, do its bookkeeping, and return its stdout text; never raises.

    A notice for the user (memory degraded) is appended to `notices` when given. With `emit`, the stdout
    text is handed to it as soon as it is ready, before the store half of the run is done; `settled` is
    called once the run (its store half included) is done, before the bookkeeping. `until` is when the
    caller stops waiting (see `handle`).
    """
    try:
        reply = asyncio.run(_answer(event, raw, started, emit, until, settled))
        if reply.notice and notices is not None:
            notices.append(reply.notice)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            return ""
        _record_failure(None, event, f"{type(exc).__name__}: {exc}")
        return ""
    reply.finish()
    return reply.stdout
