"""Errors of the LLM layer."""

from __future__ import annotations


class LLMUnavailable(RuntimeError):
    """No provider produced a usable reply; the pipeline takes its deterministic path."""


class LLMConfigError(LLMUnavailable):
    """The configured model cannot be reached as set up; the message says what to do."""
