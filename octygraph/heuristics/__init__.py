"""Deterministic ("no-LLM") reasoning: classification, planning, the storage filter's patterns,
instructions, dates, safety and reconciliation.

Pure functions over the stdlib and `octygraph.models`; each runs in a few milliseconds per
prompt. They are the pipeline's mode of thinking when no LLM is configured, and its fallback
when an LLM call fails or does not parse.
"""
