"""Per-model prices, in USD per million tokens.

Prices are the providers' published list prices (checked November 2026). OpenRouter bills the price
of whichever upstream provider served the call; when its reply reports the billed `cost`, the usage
tracker uses that figure instead of this table. A model that is not in the table is unpriced:
`cost()` returns None and nothing is guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Price:
    """List price of one model, USD per million tokens."""

    input_per_mtok: float
    output_per_mtok: float = 0.0


PRICES: dict[str, Price] = {
    # OpenRouter (list price of the cheapest upstream; the reported cost wins when present)
    "openai/gpt-oss-120b": Price(0.039, 0.19),
    "openai/gpt-4o-mini": Price(0.15, 0.60),
    "openai/gpt-4.1-mini": Price(0.40, 1.60),
    "openai/gpt-4.1-nano": Price(0.10, 0.40),
    "openai/gpt-5-mini": Price(0.25, 2.00),
    "google/gemini-2.5-flash": Price(0.30, 2.50),
    "google/gemini-2.5-flash-lite": Price(0.10, 0.40),
    "anthropic/claude-sonnet-4.6": Price(3.00, 15.00),
    "anthropic/claude-sonnet-4.5": Price(3.00, 15.00),
    "anthropic/claude-haiku-4.5": Price(1.00, 5.00),
    # Cloudflare Workers AI
    "@cf/openai/gpt-oss-120b": Price(0.35, 0.75),
    "@cf/openai/gpt-oss-20b": Price(0.20, 0.30),
    "@cf/meta/llama-3.3-70b-instruct-fp8-fast": Price(0.293, 2.253),
    "@cf/meta/llama-3.1-8b-instruct-fp8-fast": Price(0.045, 0.384),
    "@cf/meta/llama-3.2-3b-instruct": Price(0.051, 0.335),
    "@cf/qwen/qwen3-30b-a3b-fp8": Price(0.051, 0.335),
    # Anthropic (direct API and the claude CLI)
    "claude-sonnet-4-6": Price(3.00, 15.00),
    "claude-sonnet-4-5": Price(3.00, 15.00),
    "claude-sonnet-4": Price(3.00, 15.00),
    "claude-haiku-4-5": Price(1.00, 5.00),
    "claude-opus-4-6": Price(5.00, 25.00),
    "claude-opus-4-5": Price(5.00, 25.00),
    # Voyage embeddings (input only)
    "voyage-4": Price(0.06),
    "voyage-4-lite": Price(0.02),
    "voyage-4-large": Price(0.12),
    "voyage-3.5": Price(0.06),
    "voyage-3.5-lite": Price(0.02),
    # Local models cost nothing
    "local-minilm": Price(0.0, 0.0),
}

# Anthropic snapshot ids carry a date: claude-sonnet-4-5-20250929 is priced as claude-sonnet-4-5.
_DATED = re.compile(r"^(claude-[a-z0-9-]+?)-\d{8}$")


def price(model: str) -> Price | None:
    """The list price of `model`, or None when it is not known."""
    name = model.strip()
    if name in PRICES:
        return PRICES[name]
    if name.endswith(":free"):  # OpenRouter's free variants
        return Price(0.0, 0.0)
    dated = _DATED.match(name)
    if dated and dated.group(1) in PRICES:
        return PRICES[dated.group(1)]
    return None


def cost(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """USD cost of one call, or None when the model is unpriced."""
    p = price(model)
    if p is None:
        return None
    return (input_tokens * p.input_per_mtok + output_tokens * p.output_per_mtok) / 1_000_000
