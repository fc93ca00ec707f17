"""Deterministic ("no-LLM") reasoning: layer 1 classification, the layer 1.5 search plan, and
reconciliation of a new memory against an existing one.

Pure functions over the sentence analysis of `octygraph.judgement` and `octygraph.models`; each runs
in a few milliseconds per prompt. They are the pipeline's mode of thinking when no LLM is configured,
and its fallback when an LLM call fails or does not parse.
"""
