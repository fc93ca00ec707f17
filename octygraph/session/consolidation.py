"""When a session ends: settle the candidates it stored.

Claude Code's SessionEnd hook hands the session over to the service (it gives hooks 1.5 s in all), which
then writes the uses it noted (`uses.note_access`; a candidate given often enough is confirmed
by use) and merges restatements: a candidate that says again what an ordinary memory says is dropped
(that memory counts one more use), and of two candidates that say the same thing the older one is
confirmed and the newer dropped. Dropped means archived, as `memory forget` does: it can be restored.
Each step is its own transaction, so a pass cut short loses nothing.

With a judge (`session_judge`: when an LLM is configured), the candidates still unsettled then are judged
with the whole session in view, in one structured call: kept (confirmed, `confirmed: judged`), dropped
(archived) or left as candidates. The node's `judged` attribute says what the judge said and why. A judge
that fails, runs out of time or answers nonsense changes nothing: the pass above is all that happened.
The judge's tokens are billed like a prompt's: `record_judged` writes them in a trace of their own (event
`session-end`, layer `curation`), which the usage page and the usage report count.

Last, a candidate of any session that nobody approved, restated or was given within `OCTY_CANDIDATE_DAYS`
(30) of being stored is archived too (`expired_at` says when): the review list holds what is still
worth a look, and nothing is lost.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, Field

from octygraph.claude.transcript import last_prompts
from octygraph.config.settings import Settings
from octygraph.llm.deadline import DEADLINE_KEY
from octygraph.llm.errors import LLMConfigError
from octygraph.llm.factory import make_chat_model
from octygraph.llm.structured import structured_call
from octygraph.llm.usage import LAYER_KEY, UsageTracker
from octygraph.memory.candidate_review import expire_unused
from octygraph.memory.candidates import confirm, is_candidate
from octygraph.memory.uses import record_access, write_noted
from octygraph.pipeline.prompts import JUDGE_CANDIDATES_SYSTEM, JUDGE_CANDIDATES_USER
from octygraph.pipeline.run_bookkeeping import send_usage_report
from octygraph.pipeline.tools.writes import is_restatement
from octygraph.pipeline.traces import new_trace_id, write_trace
from octygraph.safety.secrets import redact_secrets
from octygraph.store import AdminStore, Node, StoreError

log = logging.getLogger("octygraph.consolidation")

RESTATEMENT_HITS = 4
MEMORY_TYPES = ["fact", "opinion", "event", "instruction", "plan"]
JUDGE_BUDGET_S = 15.0
"""The judge's LLM call (retries included) is over within this. It runs after the hook has answered, in
the service (or in the hook's own process, whose watchdog allows four hook budgets)."""
SESSION_CHARS = 12_000
"""What the judge sees of the session: the user's last prompts, this many characters at most."""
MAX_JUDGED = 40
"""At most this many candidates (the session's latest) are judged in one call."""
WHY_CHARS = 200


class CandidateVerdict(BaseModel):
    """Your verdict on one candidate memory."""

    id: str = Field(description="The candidate's id, exactly as written in the list.")
    verdict: Literal["keep", "drop", "leave"] = Field(
        description="keep: a lasting memory; drop: not worth remembering; leave: cannot tell."
    )
    why: str = Field(default="", description="A few words saying why.")


class CandidateVerdicts(BaseModel):
    """Your verdicts on the session's candidate memories, one for each candidate listed."""

    verdicts: list[CandidateVerdict] = Field(default_factory=list)


CandidateJudge = Callable[[Sequence[Node]], Sequence[CandidateVerdict]]
"""Judges a session's remaining candidates; a verdict on an id it was not given is ignored."""


@dataclass
class Settled:
    """What a consolidation pass did, by memory id."""

    confirmed: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    """Candidates archived because another memory says the same."""
    judged_kept: list[str] = field(default_factory=list)
    judged_dropped: list[str] = field(default_factory=list)
    """Candidates the judge found not worth remembering: archived."""
    expired: list[str] = field(default_factory=list)
    """Candidates of any session that waited longer than their time unused: archived."""

    def changed(self) -> bool:
        return any(
            (self.confirmed, self.merged, self.judged_kept, self.judged_dropped, self.expired)
        )

    def summary(self) -> str:
        return (
            f"{len(self.confirmed)} candidates confirmed, {len(self.merged)} merged, "
            f"{len(self.judged_kept)} judged kept, {len(self.judged_dropped)} judged dropped, "
            f"{len(self.expired)} expired"
        )


def consolidate(
    store: AdminStore,
    session_ids: Iterable[str],
    *,
    judge: CandidateJudge | None = None,
    expire_after_days: float = 0,
) -> Settled:
    """Settle the candidates among `session_ids` (what one session stored), and archive any candidate
    left unused for `expire_after_days` (`OCTY_CANDIDATE_DAYS`; 0: never); see the module doc.

    Call it off the event loop (it does database work, and the judge may wait for an LLM).
    """
    write_noted(store)  # the uses noted so far: a candidate given often enough is confirmed
    settled = Settled()
    # Times have one-second resolution: on a tie, what the session stored first is older, and
    # anything from before the session older still.
    stored_order = {node_id: i for i, node_id in enumerate(dict.fromkeys(session_ids))}
    _merge_restatements(store, stored_order, settled)
    if judge is not None:
        _judge(store, list(stored_order), judge, settled)
    settled.expired = expire_unused(store, expire_after_days)
    return settled


def _merge_restatements(store: AdminStore, stored_order: dict[str, int], settled: Settled) -> None:
    for node_id in stored_order:
        node = _current_candidate(
            store, node_id
        )  # as it is now: an earlier merge may have settled it
        if node is None:
            continue
        for hit in store.search(
            node.content, types=MEMORY_TYPES, limit=RESTATEMENT_HITS, mode="vector"
        ):
            other = hit.node
            if other.id == node.id or other.superseded_by:
                continue
            if not is_restatement(node.content, other.content, hit.cosine):
                continue
            if is_candidate(other):
                older, newer = sorted(
                    (node, other), key=lambda n: (n.created_at, stored_order.get(n.id, -1))
                )
                if confirm(store, older.id, "restated") is not None:
                    settled.confirmed.append(older.id)
                store.archive_node(newer.id)
                settled.merged.append(newer.id)
            else:
                record_access(store, [other.id])
                store.archive_node(node.id)
                settled.merged.append(node.id)
            break


def _current_candidate(store: AdminStore, node_id: str) -> Node | None:
    node = store.get_node(node_id)
    if node is None or not is_candidate(node) or node.superseded_by:
        return None
    return node


def _judge(
    store: AdminStore, session_ids: list[str], judge: CandidateJudge, settled: Settled
) -> None:
    """Apply the judge's verdicts on the session's remaining candidates, one transaction each."""
    current = (_current_candidate(store, node_id) for node_id in session_ids)
    remaining = [node for node in current if node is not None][-MAX_JUDGED:]
    if not remaining:
        return
    try:
        verdicts = list(judge(remaining))
    except Exception as exc:  # the deterministic pass stands on its own
        log.warning("the session's candidates were not judged: %s", exc)
        return
    asked = {n.id for n in remaining}
    for verdict in verdicts:
        if verdict.id not in asked:  # an id the model made up, or a second verdict on one
            continue
        asked.discard(verdict.id)
        if verdict.verdict == "leave":
            continue
        record = {
            "verdict": verdict.verdict,
            "why": redact_secrets(" ".join(verdict.why.split()))[0][:WHY_CHARS],
            "at": datetime.now(UTC).isoformat(),
        }
        try:
            if verdict.verdict == "keep":
                if confirm(store, verdict.id, "judged", judged=record) is not None:
                    settled.judged_kept.append(verdict.id)
            elif _current_candidate(store, verdict.id) is not None:
                store.archive_node(verdict.id)
                store.set_attributes(verdict.id, judged=record)
                settled.judged_dropped.append(verdict.id)
        except StoreError as exc:  # settled by someone else meanwhile (approved, forgotten)
            log.warning("verdict on %s not applied: %s", verdict.id, exc)


@dataclass
class SessionJudge:
    """The LLM judge: one structured call that sees the user's prompts of the session and its candidates."""

    model: BaseChatModel
    transcript_path: str
    """Claude Code's transcript of the session: what the user wrote is read from it."""
    redact: Callable[[str], str]
    """Removes configured secret values (`Settings.redact`) from what is sent, on top of `redact_secrets`."""
    loop: asyncio.AbstractEventLoop | None = None
    """The event loop the model's HTTP clients live on (the service's): the call is run there when
    `consolidate` runs in a worker thread. None: a loop of its own."""
    budget_s: float = JUDGE_BUDGET_S
    usage: UsageTracker = field(default_factory=UsageTracker)
    """The judge's calls, tokens and cost; the model records into it (`make_chat_model(usage=...)`)."""

    def __call__(self, candidates: Sequence[Node]) -> list[CandidateVerdict]:
        session = self.session_text()
        if not session:  # nothing to see the candidates against: leave them
            return []
        return self._run(self.ask(session, candidates))

    def session_text(self) -> str:
        """The user's last prompts of the session, numbered, redacted as memories are."""
        prompts = last_prompts(self.transcript_path, SESSION_CHARS)
        return "\n\n".join(
            f"[{i}] {self.redact(redact_secrets(p)[0])}" for i, p in enumerate(prompts, 1)
        )

    async def ask(self, session: str, candidates: Sequence[Node]) -> list[CandidateVerdict]:
        """The model's verdicts; raises when it gave none that parse, or ran out of time."""
        listed = "\n".join(
            f"{n.id}, {n.node_type}: {' '.join(n.content.split())}" for n in candidates
        )
        messages = [
            SystemMessage(JUDGE_CANDIDATES_SYSTEM),
            HumanMessage(JUDGE_CANDIDATES_USER.format(session=session, candidates=listed)),
        ]
        # The deadline bounds every request and retry wait inside; the timeout backs it.
        config: RunnableConfig = {
            "metadata": {DEADLINE_KEY: time.monotonic() + self.budget_s, LAYER_KEY: "curation"}
        }
        async with asyncio.timeout(self.budget_s):
            result = await structured_call(self.model, CandidateVerdicts, messages, config=config)
        if result.parsed is None:
            raise RuntimeError(f"the judge's reply was not usable ({result.error})")
        return result.parsed.verdicts

    def _run(self, call: Coroutine[Any, Any, list[CandidateVerdict]]) -> list[CandidateVerdict]:
        loop, here = self.loop, _running_loop()
        if loop is None or not loop.is_running() or loop is here:
            if here is None:
                return asyncio.run(call)
            call.close()  # waiting here would block the loop this thread runs
            raise RuntimeError("consolidate ran on an event loop: run it in a worker thread")
        future = asyncio.run_coroutine_threadsafe(call, loop)
        try:
            return future.result(self.budget_s + 1)
        except FutureTimeout:
            future.cancel()
            raise


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def session_judge(settings: Settings, transcript_path: str) -> SessionJudge | None:
    """The judge of a session's candidates, for `consolidate(..., judge=...)`.

    None when no LLM is configured (or its set-up is broken) or the hook named no transcript. Called
    inside an event loop, the judge's call runs on that loop.
    """
    if not transcript_path:
        return None
    usage = UsageTracker()
    try:
        model = make_chat_model(settings, "l2", usage=usage, timeout_s=JUDGE_BUDGET_S)
    except LLMConfigError as exc:
        log.warning("the session's candidates are not judged: %s", exc)
        return None
    if model is None:
        return None
    return SessionJudge(
        model,
        transcript_path,
        settings.redact,
        loop=_running_loop(),
        budget_s=JUDGE_BUDGET_S,
        usage=usage,
    )


def record_judged(
    settings: Settings, session_id: str, judge: SessionJudge, settled: Settled
) -> str | None:
    """The judge's trace (what it kept and dropped, its tokens and cost) in the debug folder, and the
    usage report when one is configured; the trace's id, or None when the judge made no call.

    Best effort: a failure is logged, never raised (the session is settled either way)."""
    if not judge.usage.calls:
        return None
    usage = judge.usage.to_dict()
    trace_id = new_trace_id()
    try:
        write_trace(
            settings.paths.debug_dir,
            {
                "trace_id": trace_id,
                "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "project": settings.project_id,
                "session_id": session_id,
                "source": "session-end",
                "event": "session-end",
                "mode": settings.layer2_model,
                # What trace lists show in the prompt's place.
                "prompt": f"(session end: the judge kept {len(settled.judged_kept)} and dropped "
                f"{len(settled.judged_dropped)} candidates)",
                "judged": {"kept": settled.judged_kept, "dropped": settled.judged_dropped},
                "usage": usage,
            },
        )
    except OSError as exc:
        log.warning("the judge's trace was not written: %s", exc)
    send_usage_report(settings, "session-end", session_id, trace_id, usage)
    return trace_id
