"""Build the chat model for a layer: provider routing, retries and the Claude fallback.

Routing, by model name, in one place:

- `@cf/...` -> Cloudflare Workers AI's OpenAI-compatible endpoint, with `CLOUDFLARE_API_TOKEN` or
  the OAuth token of the local Wrangler login;
- else `OCTY_LLM_BASE_URL` (+ `OCTY_LLM_API_KEY`): any OpenAI-compatible server (Ollama, vLLM...);
- else OpenRouter, sorted by provider throughput.

The fallback is Claude: `langchain-anthropic` when `ANTHROPIC_API_KEY` is set, else the `claude`
command when it is on PATH. Environment knobs read here: `OCTY_OPENROUTER_BASE_URL`,
`OCTY_CF_BASE_URL` (the API root before `/accounts/...`), `ANTHROPIC_BASE_URL`,
`OCTY_FALLBACK_MODEL`, `OCTY_LLM_RETRY_BASE_S`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from octygraph.config.settings import OPENROUTER_BASE_URL, Settings
from octygraph.llm.claude_cli import ClaudeCLIChatModel, inside_fallback
from octygraph.llm.errors import LLMConfigError
from octygraph.llm.usage import MODEL_KEY, PROVIDER_KEY, UsageCallback, UsageTracker
from octygraph.llm.wrangler import read_wrangler_token

if TYPE_CHECKING:
    # The provider SDKs behind it take seconds to import: only a configured LLM pays for them.
    from octygraph.llm.resilient import Route

CF_API_ROOT = "https://api.cloudflare.com/client/v4"
ANTHROPIC_API = "https://api.anthropic.com"
DEFAULT_FALLBACK_MODEL = "claude-sonnet-4-6"
DEFAULT_RETRY_BASE_S = 1.0
PRIMARY_RETRIES = 3
FALLBACK_RETRIES = 1
OPENROUTER_EXTRA_BODY: dict[str, Any] = {"provider": {"sort": "throughput"}}


@dataclass(frozen=True)
class Endpoint:
    """Where a model's requests go."""

    provider: Literal["workers-ai", "openai-compatible", "openrouter"]
    model: str
    base_url: str


def layer_model(settings: Settings, layer: Literal["l1", "l2"]) -> str:
    """The model name configured for a layer (`LAYER1` / `LAYER2`)."""
    return settings.layer1_model if layer == "l1" else settings.layer2_model


def resolve_endpoint(
    settings: Settings, model: str, env: Mapping[str, str] | None = None
) -> Endpoint | None:
    """Route a model name to its endpoint; None when nothing is configured for it."""
    env = os.environ if env is None else env
    if model.startswith("@cf/"):
        if not settings.cf_account_id:
            raise LLMConfigError(
                f"The model {model} runs on Cloudflare Workers AI and needs CF_ACCOUNT_ID; "
                "set it in the environment or in .env."
            )
        root = (env.get("OCTY_CF_BASE_URL") or CF_API_ROOT).rstrip("/")
        return Endpoint("workers-ai", model, f"{root}/accounts/{settings.cf_account_id}/ai/v1")
    if settings.llm_base_url:
        return Endpoint("openai-compatible", model, settings.llm_base_url.rstrip("/"))
    if settings.openrouter_api_key:
        base = env.get("OCTY_OPENROUTER_BASE_URL") or OPENROUTER_BASE_URL
        return Endpoint("openrouter", model, base.rstrip("/"))
    return None


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


def _primary(
    settings: Settings,
    endpoint: Endpoint,
    env: Mapping[str, str],
    timeout_s: float,
    callbacks: list[BaseCallbackHandler] | None,
) -> Route:
    from langchain_openai import ChatOpenAI  # heavy import, only when an LLM is used

    from octygraph.llm.resilient import Route

    extra: dict[str, Any] = {}
    if endpoint.provider == "workers-ai":
        key = _secret(settings.cloudflare_api_token) or read_wrangler_token(env)
    elif endpoint.provider == "openai-compatible":
        # local servers usually ignore the key, but the client insists on one
        key = _secret(settings.llm_api_key) or "not-needed"
    else:
        key = _secret(settings.openrouter_api_key) or ""
        extra = {"extra_body": OPENROUTER_EXTRA_BODY, "default_headers": {"X-Title": "octygraph"}}
    model = ChatOpenAI(
        model=endpoint.model,
        base_url=endpoint.base_url,
        api_key=SecretStr(key),
        timeout=timeout_s,
        max_retries=0,  # retries are ours: empty replies count, 429 doubles the delay
        callbacks=callbacks,
        metadata={PROVIDER_KEY: endpoint.provider, MODEL_KEY: endpoint.model},
        **extra,
    )
    return Route(
        endpoint.provider,
        endpoint.model,
        model,
        retries=PRIMARY_RETRIES,
        endpoint=endpoint.base_url,
    )


def _fallback(
    settings: Settings,
    env: Mapping[str, str],
    timeout_s: float,
    callbacks: list[BaseCallbackHandler] | None,
) -> Route | None:
    from octygraph.llm.resilient import Route

    name = env.get("OCTY_FALLBACK_MODEL") or DEFAULT_FALLBACK_MODEL
    meta = {MODEL_KEY: name}
    if settings.anthropic_api_key:
        try:
            from langchain_anthropic import ChatAnthropic
        except ImportError:
            pass  # optional dependency; try the claude command instead
        else:
            base_url = (
                env.get("ANTHROPIC_BASE_URL") or env.get("ANTHROPIC_API_URL") or ANTHROPIC_API
            )
            model: BaseChatModel = ChatAnthropic(
                model_name=name,
                api_key=settings.anthropic_api_key,
                max_retries=0,
                timeout=timeout_s,
                stop=None,
                max_tokens_to_sample=4096,
                callbacks=callbacks,
                metadata={**meta, PROVIDER_KEY: "anthropic"},
                base_url=base_url,
            )
            return Route("anthropic", name, model, retries=FALLBACK_RETRIES, endpoint=base_url)
    command = shutil.which("claude", path=env.get("PATH"))
    if command and not inside_fallback(env):
        cli = ClaudeCLIChatModel(
            command=command,
            timeout_s=max(60.0, 3 * timeout_s),
            base_env=dict(env),
            callbacks=callbacks,
            metadata={PROVIDER_KEY: "claude-cli", MODEL_KEY: "sonnet"},
        )
        return Route("claude-cli", "sonnet", cli, retries=0, supports_tools=False, endpoint=command)
    return None


def make_chat_model(
    settings: Settings,
    layer: Literal["l1", "l2"],
    *,
    usage: UsageTracker | None = None,
    timeout_s: float = 20,
    env: Mapping[str, str] | None = None,
    retry_base_s: float | None = None,
) -> BaseChatModel | None:
    """The chat model for `layer`, or None when no LLM endpoint is configured.

    Args:
        settings: Resolved settings (model names, keys, base URL, Cloudflare account).
        layer: `l1` uses `LAYER1`, `l2` uses `LAYER2` (also for curation and reconciliation:
            pass `config={"metadata": {"octy_layer": "curation"}}` to bill those calls there).
        usage: Tracker that records every provider call, including retried ones.
        timeout_s: Per-request timeout.
        env: Environment for base-URL overrides, the Wrangler login and PATH; default os.environ.
        retry_base_s: First retry delay; default `OCTY_LLM_RETRY_BASE_S` or 1 s.

    Raises:
        LLMConfigError: The model needs Cloudflare credentials that are missing or expired.
    """
    env = os.environ if env is None else env
    endpoint = resolve_endpoint(settings, layer_model(settings, layer), env)
    if endpoint is None:
        return None
    from octygraph.llm.resilient import ResilientChatModel

    callbacks: list[BaseCallbackHandler] | None = (
        [UsageCallback(usage, layer, weak=True)] if usage is not None else None
    )
    routes = [_primary(settings, endpoint, env, timeout_s, callbacks)]
    fallback = _fallback(settings, env, timeout_s, callbacks)
    if fallback is not None:
        routes.append(fallback)
    if retry_base_s is None:
        try:
            retry_base_s = float(env.get("OCTY_LLM_RETRY_BASE_S") or DEFAULT_RETRY_BASE_S)
        except ValueError:
            retry_base_s = DEFAULT_RETRY_BASE_S
    return ResilientChatModel(
        routes=routes,
        model_name=endpoint.model,
        retry_base_s=max(0.0, retry_base_s),
        callbacks=callbacks,
    )
