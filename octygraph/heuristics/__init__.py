"""Deterministic ("no-LLM") reasoning: classification, planning, the storage filter's patterns,
instructions, dates, safety and reconciliation.

Pure functions over the stdlib and `octygraph.models`; each runs in a few milliseconds per
prompt. They are the pipeline's mode of thinking when no LLM is configured, and its fallback
when an LLM call fails or does not parse.
"""

from __future__ import annotations

from octygraph.heuristics.classify import classify
from octygraph.heuristics.dates import find_date, lookback_days, resolve_date
from octygraph.heuristics.entities import Gazetteer, extract_entities
from octygraph.heuristics.plan import plan_retrieval
from octygraph.heuristics.reconcile import judge, replacement_signal
from octygraph.heuristics.safety import is_grounded, looks_like_injection, redact_secrets
from octygraph.heuristics.text import split_sentences

__all__ = [
    "Gazetteer",
    "classify",
    "extract_entities",
    "find_date",
    "is_grounded",
    "judge",
    "lookback_days",
    "looks_like_injection",
    "plan_retrieval",
    "redact_secrets",
    "replacement_signal",
    "resolve_date",
    "split_sentences",
]
