"""What the memory service does while no request is under way, never on a hook's answering path.

- With `OCTY_AUTO_LEARN` on, once enough new approvals and forgets exist (`learning.learn_due`), the
  storage verdict is refitted to them as `octygraph memory learn` does, in a process of its own
  (`python -m octygraph.memory.learning`); a learned verdict is used from the next prompt on (the verdict is
  looked up by the file's identity on each use), a refused one is not written; `health` and the log say
  which, and why.
- Once the service has been idle `SETTLE_IDLE_S` (or before it stops for idleness), every session that
  stored memories since it was last settled, SessionEnd never having come (Claude Code killed), gets the
  SessionEnd consolidation pass (`octygraph.session.consolidation`), and its session log says so. With an LLM
  configured, its candidates are judged too, with the transcript its requests named (a session only a
  service before this one served is settled without the judge: its transcript is not known).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from octygraph.config.settings import Settings
    from octygraph.pipeline.store_lease import StoreLease
    from octygraph.session.consolidation import Settled
    from octygraph.session.hooks import HookSession

log = logging.getLogger("octygraph.serve")

SETTLE_IDLE_S = 300.0
"""Idle this long (or the idle timeout, when shorter), the service settles sessions whose SessionEnd
never came: five minutes without a prompt in any session."""
KNOWN_SESSIONS = 1000
"""Sessions whose request settings are remembered for that pass (others use the service's own)."""
LEARN_TIMEOUT_S = 1800.0
LEARN_NICE = 10
"""The learning process yields the CPU to hooks (and to everything else)."""

Start = Callable[[Coroutine[Any, Any, None]], None]
"""Runs upkeep work as a task the service waits for when it stops."""


class KnownSession(NamedTuple):
    """What the settling pass needs of a session this service served."""

    settings: Settings
    """The settings its requests ran with."""
    transcript_path: str
    """Claude Code's transcript of the session, for the judge ("" when no request named one)."""


class Upkeep:
    """The service's upkeep: what its learning did, and the sessions its requests came from."""

    def __init__(
        self, home: Path, idle_s: float, *, start: Start, quiet_since: Callable[[], float | None]
    ) -> None:
        """`quiet_since` gives the service's last activity (a request that came or ended), None once it
        is stopping: work that finds it changed stops, the service is busy again."""
        from octygraph.config import setting_table

        self.home = home
        self.idle_s = idle_s
        self._start = start
        self._quiet_since = quiet_since
        self.auto_learn: bool = setting_table.lenient("OCTY_AUTO_LEARN", os.environ)
        self.last_learn: dict[str, Any] | None = None
        """What the last learn did (this service's, or before it the command's or another service's)."""
        self._learning = False
        self._examples_seen: tuple[int, int, int] | None = None
        self._sessions: collections.OrderedDict[Path, KnownSession] = collections.OrderedDict()
        """Session log -> what its requests said, for the idle settling pass."""
        self._settled_for: float | None = None
        """The last activity of the idle stretch the settling pass last ran in."""
        self.settled_sessions = 0

    def health(self) -> dict[str, Any]:
        """Upkeep's part of the service's `health`."""
        return {
            "auto_learn": {
                "enabled": self.auto_learn,
                "running": self._learning,
                "last": self.last_learn,
            },
            # Sessions settled when idle, their SessionEnd never having come.
            "settled_sessions": self.settled_sessions,
        }

    # ------------------------------------------------------------------ learning

    async def read_last_learn(self) -> None:
        """What the last learn before this service did (for `health`)."""
        from octygraph.memory import learning

        self.last_learn = await asyncio.to_thread(learning.last_learn, self.home)

    def learn_if_due(self) -> None:
        """Start learning from the user's examples when `OCTY_AUTO_LEARN` is on and the examples file
        changed since the last look (`learning.learn_due` decides whether enough are new)."""
        if not self.auto_learn or self._learning:
            return
        from octygraph.memory.feedback import examples_path

        try:
            info = examples_path(self.home).stat()
        except OSError:
            return
        seen = (info.st_ino, info.st_mtime_ns, info.st_size)
        if seen == self._examples_seen:
            return
        self._examples_seen = seen
        self._learning = True
        self._start(self._learn())

    async def _learn(self) -> None:
        try:
            from octygraph.memory import learning

            if not await asyncio.to_thread(learning.learn_due, self.home):
                return
            log.info("learning the storage verdict from your examples, in the background")
            report = await asyncio.to_thread(self._run_learner)
            if not report.get("ran"):
                return  # another learn held the lock, or it was no longer due
            self.last_learn = await asyncio.to_thread(learning.last_learn, self.home) or report
            if report.get("shipped"):
                log.info("learned: %s (%s)", report.get("reason"), report.get("checked"))
            else:
                log.info("not learned: %s (%s)", report.get("reason"), report.get("checked"))
        except Exception:
            log.exception("learning from your examples failed")
        finally:
            self._learning = False

    def _run_learner(self) -> dict[str, Any]:
        """`python -m octygraph.memory.learning` at low priority; its one-line JSON report."""
        proc = subprocess.Popen(
            [sys.executable, "-m", "octygraph.memory.learning"],
            cwd=self.home,
            env={**os.environ, "OCTYBOT_HOME": str(self.home)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # a service that stops does not take it along
        )
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, proc.pid, LEARN_NICE)
        try:
            out, err = proc.communicate(timeout=LEARN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        lines = out.strip().splitlines()
        try:
            report = json.loads(lines[-1]) if lines else None
        except ValueError:
            report = None
        if isinstance(report, dict):
            return report
        last = (err.strip().splitlines() or ["no output"])[-1]
        return {
            "ran": True,
            "shipped": False,
            "reason": f"The learning process failed (exit {proc.returncode}: {last}); nothing changed.",
        }

    # ------------------------------------------------------------------ sessions

    def note_request(self, session: HookSession | None) -> None:
        """Remember the session a request came from (as the hook call named it) for the settling pass;
        a SessionEnd's session is forgotten (its own pass settled what the session stored)."""
        if session is None:
            return
        from octygraph.pipeline.sessions import SessionLog

        path = SessionLog(session.settings.paths.memory_dir, session.session_id).path
        if session.ended:
            self._sessions.pop(path, None)
            return
        known = KnownSession(session.settings, session.transcript_path)
        before = self._sessions.get(path)
        if not known.transcript_path and before is not None:  # the one named before still holds
            known = known._replace(transcript_path=before.transcript_path)
        self._sessions[path] = known
        self._sessions.move_to_end(path)
        while len(self._sessions) > KNOWN_SESSIONS:
            self._sessions.popitem(last=False)

    def settle_when_idle(self, stores: StoreLease) -> bool:
        """Start the settling pass once per idle stretch, when idle long enough; whether it started."""
        since = self._quiet_since()
        if since is None or since == self._settled_for:
            return False
        if time.monotonic() - since < min(self.idle_s, SETTLE_IDLE_S):
            return False
        self._settled_for = since
        self._start(self._settle_sessions(stores))
        return True

    async def _settle_sessions(self, stores: StoreLease) -> None:
        """The SessionEnd pass for every session that stored memories since it was last settled."""
        from octygraph.pipeline.sessions import every_log

        try:
            sessions = await asyncio.to_thread(every_log, self.home)
        except OSError as exc:
            log.warning("sessions not settled: %s", exc)
            return
        for session in sessions:
            if self._quiet_since() != self._settled_for:
                return  # a request came (the session may be going on), or the service stops
            ids = await asyncio.to_thread(session.unsettled)
            if not ids:
                continue
            try:
                done = await self._consolidate(stores, session.path, ids)
            except Exception as exc:  # tried again at the next idle stretch
                log.warning("session %s not settled: %s", session.path.stem, exc)
                continue
            if done is None:
                continue
            await asyncio.to_thread(session.mark_settled, ids)
            self._sessions.pop(session.path, None)
            self.settled_sessions += 1
            log.info(
                "session %s settled without its SessionEnd: %s", session.path.stem, done.summary()
            )

    async def _consolidate(
        self, stores: StoreLease, log_path: Path, ids: list[str]
    ) -> Settled | None:
        """`consolidate` the session's ids in its project's store, judged with its transcript when an
        LLM is configured; None when the store cannot be written now.

        A session this service did not serve (a stopped service did) is settled in the store the
        service's own settings name for its project, without the judge: its transcript is unknown."""
        from octygraph.config.settings import Settings
        from octygraph.session.consolidation import (
            Settled,
            consolidate,
            record_judged,
            session_judge,
        )
        from octygraph.store.opening import store_exists

        known = self._sessions.get(log_path)
        if known is None:
            project = log_path.parent.parent.parent.name  # projects/<id>/memory/sessions/<file>
            known = KnownSession(
                Settings.from_env(env=os.environ, cwd=self.home, project_id=project), ""
            )
        settings = known.settings
        if not await asyncio.to_thread(store_exists, settings):
            return Settled()  # nothing was kept where it would be: nothing to settle
        async with stores(settings) as store:
            if getattr(store, "read_only", False):
                return None
            # Made on the service's loop: the judge's calls run there while `consolidate` waits for
            # them in a worker thread.
            judge = session_judge(settings, known.transcript_path)
            settled = await asyncio.to_thread(
                consolidate, store, ids, judge=judge, expire_after_days=settings.candidate_days
            )
        if judge is not None:
            await asyncio.to_thread(record_judged, settings, log_path.stem, judge, settled)
        return settled
