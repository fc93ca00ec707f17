"""Claude through the `claude` command in headless mode: the last-resort fallback.

It answers text only (no tool calls): the resilient model leaves it out of tool-bound calls.
The child runs without `CLAUDECODE` (or `claude` refuses to start inside a Claude Code hook), in
the temp folder (so the project's hooks and CLAUDE.md are not loaded), with `OCTY_NO_HOOKS=1` so
that an octygraph hook installed for the user stays quiet instead of recursing.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import tempfile
from collections.abc import Mapping
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult

from octygraph.llm.errors import LLMUnavailable

NO_HOOKS_ENV = "OCTY_NO_HOOKS"
_ROLES = {"system": "Instructions", "human": "User", "ai": "Assistant", "tool": "Tool result"}


def render_prompt(messages: list[BaseMessage]) -> str:
    """Flatten a chat into one prompt for a single headless turn."""
    if len(messages) == 1 and messages[0].type == "human":
        return messages[0].text
    parts = [f"[{_ROLES.get(m.type, m.type)}]\n{m.text}" for m in messages]
    parts.append("[Task]\nReply to the last user message, following the instructions above.")
    return "\n\n".join(parts)


def parse_reply(stdout: str) -> AIMessage:
    """Turn the `--output-format json` result into an AIMessage.

    Raises:
        LLMUnavailable: The output is not a successful result.
    """
    try:
        data: Any = json.loads(stdout)
    except json.JSONDecodeError:
        raise LLMUnavailable("The claude command returned output that is not JSON.") from None
    if isinstance(data, list):  # verbose mode prints every event; the result is the last one
        data = next((d for d in reversed(data) if isinstance(d, dict) and "result" in d), {})
    if (
        not isinstance(data, dict)
        or data.get("is_error")
        or not isinstance(data.get("result"), str)
    ):
        raise LLMUnavailable("The claude command did not return a result.")
    raw_usage = data.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    input_tokens = sum(
        int(usage.get(k) or 0)
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    output_tokens = int(usage.get("output_tokens") or 0)
    model_usage = data.get("modelUsage")
    model = next(iter(model_usage), "claude-cli") if isinstance(model_usage, dict) else "claude-cli"
    meta: dict[str, Any] = {"model_name": model}
    if isinstance(data.get("total_cost_usd"), int | float):
        meta["octy_cost_usd"] = float(data["total_cost_usd"])
    return AIMessage(
        content=data["result"],
        usage_metadata=UsageMetadata(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=input_tokens + output_tokens,
        ),
        response_metadata=meta,
    )


class ClaudeCLIChatModel(BaseChatModel):
    """Chat model that runs `claude -p --output-format json` with the prompt on stdin."""

    command: str
    model_alias: str = "sonnet"
    timeout_s: float = 60.0
    base_env: dict[str, str] | None = None

    @property
    def _llm_type(self) -> str:
        return "claude-cli"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"command": self.command, "model": self.model_alias}

    def _argv(self) -> list[str]:
        return [
            self.command,
            "-p",
            "--output-format",
            "json",
            "--model",
            self.model_alias,
            "--tools",
            "",
            "--no-session-persistence",
            "--strict-mcp-config",
        ]

    def _env(self) -> dict[str, str]:
        env = dict(self.base_env if self.base_env is not None else os.environ)
        env.pop("CLAUDECODE", None)
        env[NO_HOOKS_ENV] = "1"
        return env

    def _result(self, returncode: int | None, stdout: bytes, stderr: bytes) -> ChatResult:
        if returncode != 0:
            detail = stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise LLMUnavailable(f"The claude command failed ({returncode}): {detail[0][:200]}")
        message = parse_reply(stdout.decode(errors="replace"))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        try:
            done = subprocess.run(
                self._argv(),
                input=render_prompt(messages).encode(),
                capture_output=True,
                env=self._env(),
                cwd=tempfile.gettempdir(),
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise LLMUnavailable(
                f"The claude command took more than {self.timeout_s:g} s."
            ) from None
        except OSError as exc:
            raise LLMUnavailable(f"The claude command could not start: {exc}.") from None
        return self._result(done.returncode, done.stdout, done.stderr)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._argv(),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._env(),
                cwd=tempfile.gettempdir(),
            )
        except OSError as exc:
            raise LLMUnavailable(f"The claude command could not start: {exc}.") from None
        try:
            async with asyncio.timeout(self.timeout_s):
                stdout, stderr = await proc.communicate(render_prompt(messages).encode())
        except TimeoutError:
            raise LLMUnavailable(
                f"The claude command took more than {self.timeout_s:g} s."
            ) from None
        finally:
            # a timeout or a cancelled run must not leave a billing process behind
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        return self._result(proc.returncode, stdout, stderr)


def inside_fallback(env: Mapping[str, str]) -> bool:
    """True when this process already runs inside a fallback `claude` started by octygraph."""
    return env.get(NO_HOOKS_ENV) == "1"
