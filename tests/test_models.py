"""The shared pydantic models: schemas the LLM reads, normalisation, merging."""

from __future__ import annotations

from typing import get_args

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ValidationError

from octygraph.models import (
    SUBTYPES,
    Classification,
    EntityKind,
    EntityMention,
    ExtractedInstruction,
    InstructionList,
    Operations,
    ReconcileJudgement,
    RetrievalPlan,
    SearchStep,
    StorageDecision,
    StorageItem,
    merge_classifications,
)

SCHEMAS: list[type[BaseModel]] = [
    Classification,
    RetrievalPlan,
    StorageDecision,
    InstructionList,
    ReconcileJudgement,
]


def test_subtypes_match_the_spec_table() -> None:
    assert SUBTYPES == {
        "entity": (
            "person",
            "org",
            "project",
            "place",
            "tool",
            "process",
            "document",
            "concept",
            "event",
            "account",
        ),
        "fact": ("definitional", "causal", "conditional", "comparative", "negation"),
        "event": ("action", "decision", "conversation", "incident", "outcome", "completed_plan"),
        "opinion": (),
        "instruction": ("instruction", "tool_usage", "rule", "process"),
        "plan": ("scheduled", "intended", "requested"),
    }
    # The LLM schema's entity kinds are the store's entity subtypes.
    assert get_args(EntityKind) == SUBTYPES["entity"]


@pytest.mark.parametrize("model", SCHEMAS)
def test_every_field_the_llm_sees_is_described(model: type[BaseModel]) -> None:
    schema = model.model_json_schema()
    defs = [schema, *schema.get("$defs", {}).values()]
    for definition in defs:
        for name, prop in definition.get("properties", {}).items():
            assert prop.get("description"), f"{definition.get('title')}.{name} has no description"


@pytest.mark.parametrize("model", SCHEMAS)
def test_schemas_convert_to_function_calling_tools(model: type[BaseModel]) -> None:
    tool = convert_to_openai_tool(model)
    params = tool["function"]["parameters"]
    assert tool["function"]["name"] == model.__name__
    assert params["type"] == "object" and params["properties"]


def test_lists_default_to_empty_and_a_bare_object_parses() -> None:
    parsed = Classification.model_validate({})
    assert parsed.entities == [] and parsed.intents == [] and parsed.implied_facts == []
    assert parsed.operations == Operations(retrieve=True, store=False)
    decision = StorageDecision.model_validate({"store": False})
    assert decision.items == [] and decision.reason == ""


def test_llm_slips_are_normalised_not_fatal() -> None:
    parsed = Classification.model_validate(
        {
            "entities": [{"name": " Acme ", "kind": "Company"}, {"name": "Zed", "kind": "gizmo"}],
            "intents": ["Information", "made_up", "correction", "correction"],
        }
    )
    assert [(e.name, e.kind) for e in parsed.entities] == [("Acme", "org"), ("Zed", "concept")]
    assert parsed.intents == ["information", "correction"]


def test_storage_item_defaults_and_cleanup() -> None:
    plan = StorageItem(type="plan", content="Delivery due Friday", valid_from="2026-03-20T09:00:00")
    assert plan.valid_from == "2026-03-20"
    assert plan.subtype == "scheduled" and plan.scope == 0.3
    instruction = StorageItem(type="instruction", subtype="policy", content="Never deploy Fridays")
    assert instruction.subtype == "instruction" and instruction.scope == 0.5
    fact = StorageItem(type="fact", content="x", valid_from="next week", scope=7, replaces="  ")
    assert fact.valid_from is None and fact.scope == 1.0 and fact.replaces is None
    entity = StorageItem(type="entity", subtype="company", content="Acme")
    assert entity.subtype == "org"
    with pytest.raises(ValidationError):
        StorageItem(type="memo", content="x")  # type: ignore[arg-type]


def test_instruction_scope_snaps_to_the_three_levels() -> None:
    def scope(value: object) -> float:
        return ExtractedInstruction.model_validate(
            {"content": "x", "pattern": "ban", "scope": value}
        ).scope

    assert (scope(0.8), scope(0.45), scope(0.1), scope("1")) == (1.0, 0.5, 0.2, 1.0)
    odd = ExtractedInstruction.model_validate({"content": "x", "pattern": "ban", "subtype": "x"})
    assert odd.subtype == "instruction"


def test_verdict_accepts_loose_spelling_but_not_unknown_verdicts() -> None:
    assert ReconcileJudgement.model_validate({"verdict": "supersedes"}).verdict == "SUPERSEDES"
    assert ReconcileJudgement.model_validate({"verdict": "no conflict"}).verdict == "NO_CONFLICT"
    with pytest.raises(ValidationError):
        ReconcileJudgement.model_validate({"verdict": "MAYBE"})


def test_search_step_args_become_strings() -> None:
    step = SearchStep.model_validate(
        {"tool": "search_events", "args": {"query": "x", "days": 7, "entity_id": None}}
    )
    assert step.args == {"query": "x", "days": "7"}


def test_merge_dedups_entities_ors_operations_and_concatenates() -> None:
    first = Classification(
        entities=[EntityMention(name="Peter", kind="person")],
        implied_facts=["Peter handles Anderson"],
        intents=["delegation"],
        operations=Operations(retrieve=False, store=True),
    )
    second = Classification(
        entities=[
            EntityMention(name="peter", kind="org", ambiguous=True),
            EntityMention(name="Lisa", kind="person"),
        ],
        implied_facts=["Peter handles Anderson", "Lisa handles Globex"],
        intents=["delegation", "information"],
        operations=Operations(retrieve=True, store=False),
    )
    merged = merge_classifications([first, second])
    assert [(e.name, e.kind, e.ambiguous) for e in merged.entities] == [
        ("Peter", "person", True),
        ("Lisa", "person", False),
    ]
    assert merged.implied_facts == ["Peter handles Anderson", "Lisa handles Globex"]
    assert merged.intents == ["delegation", "information"]
    assert merged.operations == Operations(retrieve=True, store=True)
    assert merge_classifications([]) == Classification()


def test_models_round_trip_through_json() -> None:
    decision = StorageDecision(
        store=True,
        reason="telling",
        items=[
            StorageItem(
                type="fact",
                content="Lisa handles Anderson now",
                entities=["Lisa", "Anderson"],
                correction=True,
                replaces="handles Anderson",
            )
        ],
    )
    assert StorageDecision.model_validate_json(decision.model_dump_json()) == decision
