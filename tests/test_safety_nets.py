"""The safety nets run once per prompt; the global-instruction net reads the rules
once per change of the database, and sees every change."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from octygraph.config.settings import Settings
from octygraph.pipeline.nodes import safety_nets
from octygraph.pipeline.nodes.safety_nets import _global_instructions
from octygraph.pipeline.runner import RunOptions, run_prompt
from octygraph.pipeline.traces import load_trace
from octygraph.store.opening import open_store


def _contents(store: object) -> set[str]:
    return {n.content for n in _global_instructions(store)}  # type: ignore[arg-type]


def test_global_rules_are_read_again_after_any_write(home: Path) -> None:
    settings = Settings.from_env(project_id="rules")
    with open_store(settings) as store, open_store(settings) as other:
        store.add_node("instruction", "Always run the tests before deploying", scope=1.0)
        store.add_node("instruction", "Use tabs in the Makefile", scope=0.2)  # not global
        assert _contents(store) == {"Always run the tests before deploying"}
        unchanged = _global_instructions(store)
        assert _global_instructions(store) is unchanged  # nothing changed: not read again

        store.add_node("instruction", "Never push to main directly", scope=0.9)  # this connection
        assert "Never push to main directly" in _contents(store)
        other.add_node("instruction", "Write commit messages in English", scope=1.0)  # another one
        assert "Write commit messages in English" in _contents(store)
        old = next(
            n for n in _global_instructions(store) if n.content.startswith("Always run the tests")
        )
        other.supersede(old.id, "Always run the full test suite before deploying")
        assert _contents(store) == {
            "Always run the full test suite before deploying",
            "Never push to main directly",
            "Write commit messages in English",
        }


def test_the_nets_run_once_a_prompt(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings.from_env(project_id="nets")
    calls: list[str] = []
    real = safety_nets._nets

    def counted(store: object, prompt: str) -> safety_nets.Nets:
        calls.append(prompt)
        return real(store, prompt)  # type: ignore[arg-type]

    monkeypatch.setattr(safety_nets, "_nets", counted)
    question = "How do we deploy the billing service?"
    with open_store(settings) as store:
        store.add_node("instruction", "Always run the tests before deploying", scope=1.0)
        asked = asyncio.run(run_prompt(question, settings, store, RunOptions(offline=True)))
        # The retrieve loop starts them beside its own searches; the nets' node finds them running.
        assert calls == [question]
        trace = load_trace(settings.paths.debug_dir, asked["trace_id"])
        nets = [c for c in trace["tool_calls"] if c["tool"] == "safety_nets"]
        assert len(nets) == 1 and "global_instructions=1" in nets[0]["result"], nets
