"""The learned judgement: what is stored (storage gate) and what is injected (relevance model).

Each failure class seen on real coding-assistant traffic has its own examples here, written for these
tests; the held-out part of the training sets (never trained on) checks that the shipped weights still
generalise.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from octygraph.config.settings import Settings
from octygraph.judgement.decoration import strip_decoration
from octygraph.judgement.gate import Judged, judged_segments, storage_gate
from octygraph.judgement.patterns import recorded_rules
from octygraph.judgement.relevance import MemoryText, relevance_model
from octygraph.judgement.segments import segments
from octygraph.judgement.standalone import standalone
from octygraph.judgement.storage import MAX_REPLY_ITEMS, filter_storage
from octygraph.pipeline.runner import RunOptions, run_prompt
from octygraph.pipeline.tools.writes import is_restatement, key_tokens
from octygraph.store.opening import open_store
from training.common import held_out, read_jsonl

TRAINING = Path(__file__).resolve().parent.parent / "training"


def stored_texts(message: str, *, assistant: bool = False) -> list[str]:
    decision = filter_storage(message, assistant=assistant, project="shopfront")
    return [item.content for item in decision.items]


# ----------------------------------------------------------------------------- what is stored


@pytest.mark.parametrize(
    "message",
    [
        "Convert the billing service from promises to async/await",
        "run prettier on the whole repo and fix whatever it complains about",
        "make sure the new /orders endpoint returns 422 on a bad payload",
        "can you add pagination to the admin users table",
    ],
)
def test_one_off_task_requests_are_not_stored_as_rules(message: str) -> None:
    assert stored_texts(message) == []


@pytest.mark.parametrize(
    "message",
    [
        "It says AttributeError: 'NoneType' object has no attribute 'items'",
        "still broken, same error: ReferenceError: window is not defined",
        'Traceback (most recent call last):\n  File "app.py", line 12, in <module>\n'
        "    main()\nValueError: invalid literal for int() with base 10: 'abc'",
        "ok lets do the second option",
        "yes",
        "you changed the wrong config file, revert it",
    ],
)
def test_pasted_errors_follow_ups_and_acknowledgements_are_not_stored(message: str) -> None:
    assert stored_texts(message) == []


@pytest.mark.parametrize(
    "message",
    ["Ice is cold.", "HTTP 500 means a server error", "JavaScript runs in the browser"],
)
def test_common_sense_and_world_knowledge_are_not_stored(message: str) -> None:
    assert stored_texts(message) == []


@pytest.mark.parametrize(
    ("message", "why"),
    [
        ("I'd like to know why the payments service uses two databases.", "a question"),
        ("I'm just curious what the usual on-call rotation would be for us.", "a question"),
        ("I wasnt sure if you updated the staging config or the production one.", "a question"),
        ("I suppose the pricing tiers nest, with pro including everything in starter.", "a guess"),
        ("my guess is the CDN keeps serving the old bundle for a day", "a guess"),
        ("If they match, go ahead and update the deploy docs for the team.", "a go-ahead"),
        (
            "I'd like to start planning out a release process where the mobile team signs its own "
            "builds.",
            "the work at hand",
        ),
        (
            "i want this migration split into two commits so each half is easy to revert",
            "the work at hand",
        ),
        ("Cover the points you listed about caching in the new section.", "earlier in the conv"),
        ("Add a changelog entry for everything we changed thus far.", "earlier in the conv"),
    ],
)
def test_asking_guessing_or_giving_a_go_ahead_is_not_telling(message: str, why: str) -> None:
    decision = filter_storage(message, project="shopfront")
    assert decision.items == [] and why in decision.reason


def test_a_wish_addressed_to_the_assistant_as_a_standing_rule_is_still_stored() -> None:
    assert stored_texts("i'd like you to always run the linter before you commit") == [
        "The user would like you to always run the linter before you commit"
    ]


def test_what_the_speaker_states_beside_the_conversation_is_still_stored() -> None:
    # "As you said" introduces a fact, and a decision may name whose idea it was.
    (fact,) = stored_texts("As you said, we deploy every service through fly.io")
    assert fact.endswith("we deploy every service through fly.io")
    assert stored_texts("we're going with the two-column layout you proposed, final")
    # A wish about the project as a whole is a standing preference, not the work at hand.
    assert stored_texts("i want the api to stay boring rest, no graphql")


def test_a_sentence_about_an_it_only_a_request_names_is_not_stored() -> None:
    decision = filter_storage(
        "write a readme for the cli. It helps agents share one codebase without conflicts.",
        project="shopfront",
    )
    assert decision.items == [] and "refers back" in decision.reason
    # "They" for the one person the sentence before names is that person.
    said = "Mina Okafor is our backend lead. They handle the payments service."
    assert "refers back" not in filter_storage(said, project="shopfront").reason
    # On its own, "it" is most likely the project, and the gate judges it.
    assert stored_texts("its a tauri 2 desktop app with a svelte frontend")


def test_a_standing_rule_worded_as_a_go_ahead_is_still_a_rule() -> None:
    texts = stored_texts("From now on, go ahead and merge dependency bumps without asking.")
    assert len(texts) == 1 and "dependency bumps" in texts[0]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("the storefront is a Remix app deployed on Fly.io", "Remix"),
        ("from now on never push directly to the release branch", "release branch"),
        ("we use pnpm workspaces for every package in the monorepo", "pnpm"),
        ("Sofia owns the payments service", "Sofia"),
    ],
)
def test_durable_statements_are_stored(message: str, expected: str) -> None:
    texts = stored_texts(message)
    assert len(texts) == 1 and expected in texts[0]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("team rule: staging deploys need a green pipeline first", "green pipeline"),
        (
            "bump the aws provider and run the plan. each lambda should have its own log group.",
            "log group",
        ),
        ("any new table needs to have a created_at column", "created_at"),
        (
            "the deploy worked, nice. the logs look clean too. i don't want a staging environment, "
            "just prod. next, set up the nightly cron job. then update the readme with the new env "
            "vars. and bump the version.",
            "staging environment",
        ),
        (
            "ok the build is green now. the lint step was the slow part. i bumped the cache key "
            "too. and yes, apply the migrations yourself, always. next, look at the flaky upload "
            "test. then check the retry count. then push. and ping me after.",
            "migrations yourself",
        ),
        (
            "thanks, that worked. next the billing page. it looks off on mobile. as you know, "
            "Bramble is a custom GPT that I've set up for recipes. can you find where the total is "
            "computed? and add a test. then open a PR. keep it small.",
            "custom GPT",
        ),
        (
            "still seeing the 401 on the profile page. we're not using the session cookie "
            "anymore, we're just using the bearer token. what else could it be?",
            "bearer token",
        ),
        (
            'ok. from now on, never ask me "shall I continue?" when the next step is obvious',
            "never ask the user",
        ),
        (
            "thanks, that fixed it. next the invoice page. the totals look wrong on mobile. its "
            "important to me that every screen reads well in dark mode. can you check the "
            "rounding? then open a PR.",
            "dark mode",
        ),
    ],
)
def test_a_rule_or_what_the_project_uses_said_outright_is_kept_whatever_the_gate_says(
    message: str, expected: str
) -> None:
    assert any(expected in text for text in stored_texts(message))


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "keep every hook in its own file under src/hooks. add a cursor rule recording this "
            "preference. then bump the version",
            ["Keep every hook in its own file under src/hooks."],
        ),
        (
            "add a rule that says feature flags are removed within two releases",
            ["Feature flags are removed within two releases"],
        ),
        (
            "make sure the rule mentions that generated clients are never edited by hand",
            ["Generated clients are never edited by hand"],
        ),
        ("we squash merge everything. put that in CLAUDE.md", ["We squash merge everything."]),
    ],
)
def test_a_rule_the_user_asks_to_have_written_down_is_stored(
    message: str, expected: list[str]
) -> None:
    assert stored_texts(message) == expected


@pytest.mark.parametrize(
    "message",
    [
        "fix the rule that parses the date header",
        "rename the helper. add a test for this.",
        "update the lint rule for this file to allow any",
        "rename the helper. document this.",
        "add the clone command. note that as a rule, we keep domain logic out of commands",
    ],
)
def test_rules_in_the_code_and_other_requests_about_this_are_not_recorded_rules(
    message: str,
) -> None:
    assert recorded_rules([s.text for s in segments(message)]) == ({}, set())


@pytest.mark.parametrize(
    "rule",
    ["going forward the admin is vue with vuetify", "please use named imports, in all cases"],
)
def test_an_explicit_standing_rule_is_stored_as_an_instruction(rule: str) -> None:
    # The gate's kind model may call it a plan or an event; its form says it is a rule.
    items = filter_storage(rule).items
    assert [item.type for item in items] == ["instruction"]


def test_a_prohibition_is_stored_with_the_reason_given_for_it() -> None:
    # The clause splitter cuts the reason off; alone it would not say what it is a reason for.
    rule = "Do not regenerate the lockfile, we pin transitive versions for the build server"
    assert stored_texts(rule) == [rule]
    # A prohibition about the work at hand is not a standing rule.
    assert not any("don't" in t.lower() for t in stored_texts("don't change this file, we use it"))


def test_a_mixed_prompt_stores_only_its_durable_part() -> None:
    texts = stored_texts("Add caching to the product page; we cache everything in Redis here")
    assert len(texts) == 1
    assert "Redis" in texts[0] and "product page" not in texts[0]


def test_a_statement_said_in_one_breath_is_stored_whole() -> None:
    # The clauses are judged one by one; when no clause is a task, the memory is the whole sentence.
    said = (
        "the mobile app still talks to the old SOAP gateway, we never call it from the web client"
    )
    assert stored_texts(said) == [said[0].upper() + said[1:]]
    # A request, or the user's next step in the conversation, is not part of the statement.
    assert stored_texts("we use pnpm in this repo, i'll paste the error below") == [
        "We use pnpm in the shopfront repo"
    ]
    assert stored_texts("we use pnpm in this repo; find out why npm ran in CI") == [
        "We use pnpm in the shopfront repo"
    ]


def test_a_question_quoted_in_a_rule_stays_in_the_rule_in_the_user_s_words() -> None:
    rule = 'from now on, never reply "Shall I go ahead?" when the next step is obvious'
    assert stored_texts(rule) == [
        'From now on, never reply "Shall I go ahead?" when the next step is obvious'
    ]


def test_a_request_that_sets_the_project_up_is_stored_as_what_the_project_is() -> None:
    texts = stored_texts("bootstrap a quarkus service for the parcel tracking api")
    assert texts == ["The project is a quarkus service for the parcel tracking api"]
    # A project made to try something out says nothing about this one.
    assert stored_texts("spin up a scratch django app to try the new orm feature") == []


def test_pasted_output_never_merges_with_the_sentence_before_it() -> None:
    parts = segments("the deploy broke again\n    at Server.listen (node:net:1780:7)\nany idea?")
    assert [p.machine for p in parts] == [False, True, False]


def test_a_clause_break_inside_inline_code_does_not_cut_the_sentence() -> None:
    message = "always run `ruff check -- --fix` before you push; the ci job does the same"
    assert [s.text for s in segments(message)] == [
        "always run `ruff check -- --fix` before you push",
        "the ci job does the same",
    ]
    # Outside code the same marks still part a task from the fact said with it.
    assert [s.text for s in segments("bump the client; we pin it in constraints.txt")] == [
        "bump the client",
        "we pin it in constraints.txt",
    ]


def test_first_person_memories_say_who_spoke() -> None:
    assert standalone("my laptop is an M3 MacBook Air") == "The user's laptop is an M3 MacBook Air"
    assert standalone("I use fish as my shell") == "The user uses fish as the user's shell"
    assert standalone("I deployed the worker to Fly.io", speaker="assistant").startswith(
        "The assistant deployed"
    )
    assert (
        standalone("this repo uses yarn 4", project="shopfront") == "The shopfront repo uses yarn 4"
    )
    assert standalone("never ping me on weekends") == "Never ping the user on weekends"
    # Code and names are not pronouns.
    assert standalone("the config for `my-app` lives in infra/, ask me first") == (
        "The config for `my-app` lives in infra/, ask the user first"
    )
    assert standalone("we deploy the my-app service, my call") == (
        "We deploy the my-app service, the user's call"
    )
    # What marks background ("as you know, ...", "reminder: ...") is not part of the memory.
    assert standalone("Reminder: the main branch must stay deployable") == (
        "The main branch must stay deployable"
    )
    assert standalone("context.Context comes first in every Go handler").startswith(
        "Context.Context"
    )
    assert standalone("As you know, Bramble is a custom GPT that I've set up") == (
        "Bramble is a custom GPT that the user has set up"
    )
    # Quoted words are left as said; "me" inside a word is not a pronoun.
    assert standalone('reply "tell me more" to the bot, my call') == (
        'Reply "tell me more" to the bot, the user\'s call'
    )
    # Every spelling of "I'm" and "I'll" people type, and "myself".
    assert standalone("Im running postgres in docker myself, dont start another") == (
        "The user is running postgres in docker themselves, dont start another"
    )
    assert standalone("I’m on the platform team") == "The user is on the platform team"
    assert standalone("we ship on fridays and i'll be on call for those") == (
        "We ship on fridays and the user will be on call for those"
    )
    assert standalone("Imagine the cache is cold") == "Imagine the cache is cold"


def test_the_rewriter_can_be_imported_before_anything_else() -> None:
    # A notebook may import it first: that used to be an import cycle through the storage filter.
    code = "from octygraph.judgement.standalone import standalone; print(standalone('I use fish'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "The user uses fish"


@pytest.mark.parametrize(
    ("said", "remembered"),
    [
        ("I want the parser tested directly", "The user wants the parser tested directly"),
        ("I don't want to rely on --forceExit", "The user doesn't want to rely on --forceExit"),
        ("i dont run the ui locally", "The user doesn't run the ui locally"),
        ("I already have a staging project", "The user already has a staging project"),
        ("I really prefer vitest", "The user really prefers vitest"),
        ("for docs I'd rather use mkdocs", "For docs the user would rather use mkdocs"),
        ("I haven't enabled 2FA on npm", "The user hasn't enabled 2FA on npm"),
        ("I discuss releases on Mondays", "The user discusses releases on Mondays"),
        ("keep the layout I laid out before", "Keep the layout the user laid out before"),
        (
            "FYI that I'm not running the admin UI locally",
            "The user is not running the admin UI locally",
        ),
        ("btw that the staging db resets nightly", "The staging db resets nightly"),
        ("fyi that endpoint is deprecated", "That endpoint is deprecated"),
        ("That I'm on call this week is known", "That the user is on call this week is known"),
    ],
)
def test_first_person_verbs_agree_with_the_user(said: str, remembered: str) -> None:
    assert standalone(said) == remembered


def test_the_stop_hook_keeps_lasting_outcomes_not_narration() -> None:
    reply = (
        "Let me look at the deployment config first. I migrated the sessions table to Postgres 16 "
        "and switched the cache to Redis. Next, I'll add tests for the edge cases. "
        "Would you like me to continue?"
    )
    texts = stored_texts(reply, assistant=True)
    assert texts and all("Let me" not in t and "Next" not in t for t in texts)
    assert any("Postgres 16" in t or "Redis" in t for t in texts)
    assert stored_texts("Sure, I'll take a look at the file now.", assistant=True) == []
    assert stored_texts("You want the button to be bigger.", assistant=True) == []


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("We can now get started on the onboarding emails!", "an exclamation"),
        ("Switched to the new branch `feat/billing-export`.", "a change of branch"),
        ('"Strict mode" means: every preview deployment needs a login.', "an explanation"),
    ],
)
def test_a_reply_s_exclamation_or_change_of_branch_is_not_a_lasting_outcome(
    reply: str, why: str
) -> None:
    decision = filter_storage(reply, assistant=True, project="shopfront")
    assert decision.items == [] and why in decision.reason


DECORATION = ("**", "✅", "🚀", "🔐", "[tool", "⏺")


def test_a_reply_line_loses_its_decoration_and_a_prompt_is_left_as_typed() -> None:
    assert strip_decoration("- ✅ **Deployed** the API to Render") == "Deployed the API to Render"
    assert strip_decoration("[tool use] Bash: make test") == "Bash: make test"
    assert strip_decoration("⏺ Read(setup.cfg)") == "Read(setup.cfg)"
    assert strip_decoration("1. *Kept* `f(**kwargs)` and `__init__.py`") == (
        "Kept `f(**kwargs)` and `__init__.py`"
    )
    assert strip_decoration("Moved DNS from GoDaddy → Route 53 🎉") == (
        "Moved DNS from GoDaddy → Route 53"
    )
    prompt = "- **always** run the linter ✅\n- we deploy on fridays"
    assert judged_segments(prompt, assistant=False) == segments(prompt)


def test_a_decorated_summary_reply_stores_nothing() -> None:
    reply = """## ✅ Done!

Here's a summary of what I changed:

### Changes
- **`src/stores/basket.ts`**: extracted the price rounding into `roundCents()`
- **`src/components/BasketRow.vue`**: the quantity stepper now disables at zero
- ✅ Added six unit tests for the rounding edge cases
- 🧹 Removed the unused `legacyTotals` helper

**Result:** the basket logic is now far easier to follow and much less error-prone.

**Tests:** `vitest run` → 58 passed, 0 failed ✔️

`roundCents()` takes a float amount and returns integer cents, rounding half to even.

**Next steps:**
1. Wire the stepper into the mobile layout
2. Consider memoising the totals

You asked me to make the basket totals match the invoice PDF, and they do now.
Would you like me to apply the same rounding to the refunds page? 😊"""
    assert stored_texts(reply, assistant=True) == []


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        (
            "## Summary\n"
            "- ✅ **Deployed** the `reminder-worker` service to Fly.io in the `ams` region\n"
            "- 🧪 All 73 tests pass",
            "Fly.io",
        ),
        (
            "### What I did\n"
            "* ✅ Applied the migration `0019_add_refund_reason` to the production Postgres "
            "database `ledger-main`\n* The code is much cleaner now 🎉",
            "ledger-main",
        ),
        (
            "**Changes:**\n- Reworded the empty-state copy\n"
            "- **Library:** chose `valibot` over `yup` for form validation, for its smaller bundle\n"
            "- ✅ Lint and type checks are green\n\nShould I also update the signup form?",
            "valibot",
        ),
    ],
)
def test_a_lasting_outcome_in_a_decorated_list_is_stored_without_the_decoration(
    reply: str, outcome: str
) -> None:
    texts = stored_texts(reply, assistant=True)
    assert any(outcome in t for t in texts), texts
    assert all(mark not in t for t in texts for mark in DECORATION), texts
    assert all(not t.lstrip().startswith(("-", "*", "#")) for t in texts), texts


def test_a_reply_stores_the_checked_items_of_a_task_list_not_the_pending_ones() -> None:
    reply = (
        "Progress on the production set-up:\n"
        "- [x] Migrated the `orders` table to the Postgres 16 cluster `shop-main`\n"
        "- [ ] Point the frontend at the production Supabase project\n"
        "- [ ] Move the Stripe webhook secret into the hosting provider's secrets\n"
        "1. [ ] Switch the cron jobs to the new worker"
    )
    texts = stored_texts(reply, assistant=True)
    assert any("shop-main" in t for t in texts), texts
    assert not any("Supabase" in t or "Stripe" in t or "cron" in t for t in texts), texts
    assert stored_texts("- [ ] Staging database on Neon with daily backups", assistant=True) == []
    # A user's own checklist is judged as typed.
    prompt = "- [ ] we deploy the API on Fly.io"
    assert judged_segments(prompt, assistant=False) == segments(prompt)


def test_a_tool_call_marked_line_is_not_stored_as_such() -> None:
    reply = (
        "[tool use] Bash: fly deploy --app reminder-worker\n"
        "[tool use] Bash: alembic upgrade head\n"
        "[tool use] Edit: billing/models.py\n"
        "⏺ Update(src/components/BasketRow.vue)\n"
        "I'll check the logs next."
    )
    assert stored_texts(reply, assistant=True) == []


def test_one_reply_stores_at_most_a_few_items_the_most_probable_first() -> None:
    # Five outcomes the gate would all keep: the verdicts are given, so the cap alone is under test.
    outcomes = [
        ("Deployed the `quotes-api` to Render as a web service in Frankfurt.", 0.91),
        ("Applied the migration `0007_quotes_currency` to the database `quotes-db`.", 0.97),
        ("Created the S3 bucket `quotes-pdf-archive` in eu-central-1 for the PDFs.", 0.88),
        ("Moved the Mailgun API key into Doppler under the project `quotes`.", 0.99),
        ("Set up a GitHub Actions workflow that runs the tests on every pull request.", 0.93),
    ]
    judged = [Judged(text, p, "fact", keep=True) for text, p in outcomes]
    reply = "\n".join(f"- ✅ {text}" for text, _ in outcomes)
    decision = filter_storage(reply, assistant=True, judged=judged, project="shopfront")
    assert MAX_REPLY_ITEMS < len(outcomes)
    surest = sorted(outcomes, key=lambda o: -o[1])[:MAX_REPLY_ITEMS]
    expected = [text for text, _ in outcomes if (text, dict(outcomes)[text]) in surest]
    assert [item.content for item in decision.items] == expected
    # A user prompt is not capped this way.
    assert len(filter_storage(reply, judged=judged, project="shopfront").items) == len(outcomes)


def test_restatements_merge_but_a_different_name_or_number_does_not() -> None:
    assert is_restatement(
        "Peter handles the Anderson account", "peter handles the Anderson account.", 0.99
    )
    assert is_restatement("We deploy with Fly.io", "We deploy on Fly.io", 0.95)
    assert not is_restatement(
        "Always run ruff before deploying Falcon", "Always run ruff before deploying Osprey", 0.96
    )
    assert not is_restatement(
        "The API limit is 100 per minute", "The API limit is 200 per minute", 0.97
    )
    assert not is_restatement("Maria handles Anderson", "Peter handles Anderson", 0.93)
    assert key_tokens("Maria handles Anderson") == {"maria", "anderson"}


def test_two_rules_that_differ_by_one_name_are_both_stored(home: Path) -> None:
    settings = Settings.from_env(project_id="rules")

    async def go() -> list[str]:
        with open_store(settings) as store:
            contents = []
            for text in (
                "from now on always ping Dana before merging into the billing repo",
                "from now on always ping Omar before merging into the billing repo",
            ):
                result = await run_prompt(text, settings, store, RunOptions(offline=True))
                contents += [r["content"] for r in result["stored"]]
            return contents

    contents = asyncio.run(go())
    assert any("Dana" in c for c in contents) and any("Omar" in c for c in contents)


def test_a_rule_asked_to_be_written_down_is_stored_by_the_pipeline(home: Path) -> None:
    settings = Settings.from_env(project_id="recorded")
    prompt = (
        "keep every hook in its own file under src/hooks. add a cursor rule recording this "
        "preference. then bump the version"
    )

    async def go() -> list[str]:
        with open_store(settings) as store:
            result = await run_prompt(prompt, settings, store, RunOptions(offline=True))
            return [r["content"] for r in result["stored"]]

    assert asyncio.run(go()) == ["Keep every hook in its own file under src/hooks."]


def test_an_error_name_is_not_stored_as_an_entity(home: Path) -> None:
    settings = Settings.from_env(project_id="errs")

    async def go() -> list[dict[str, str]]:
        with open_store(settings) as store:
            result = await run_prompt(
                "It says KeyError: 'user_id' when I open the profile page",
                settings,
                store,
                RunOptions(offline=True),
            )
            return result["stored"]

    assert asyncio.run(go()) == []


def _held_out_items() -> list[dict]:
    items = []
    for path in sorted((TRAINING / "storage").glob("*.jsonl")):
        items += [i for i in read_jsonl(path) if "text" in i and held_out(i["text"])]
    return items


@pytest.mark.slow
def test_the_gate_generalises_to_the_held_out_part_of_its_training_set() -> None:
    items = _held_out_items()
    assert len(items) >= 300
    gate = storage_gate()
    kept = []
    for item in items:
        verdicts = gate.judge(item["text"], assistant=item.get("source") == "assistant")
        kept.append(any(v.keep for v in verdicts))
    truth = np.array([bool(i["durable"]) for i in items])
    keep = np.array(kept)
    precision = (keep & truth).sum() / max(1, keep.sum())
    recall = (keep & truth).sum() / max(1, truth.sum())
    report = json.loads((TRAINING / "gate_report.json").read_text())
    assert report["held_out"] > 0
    assert precision >= 0.85, f"held-out precision {precision:.2f}"
    assert recall >= 0.6, f"held-out recall {recall:.2f}"


# ----------------------------------------------------------------------------- what is injected


def test_bars_past_twelve_sentences_follow_the_tail_of_the_non_durable_scores() -> None:
    from training.train_gate import COUNTED_SEGMENTS, bars_by_length

    # Non-durable scores whose log-odds have an exponential top (scale 1.4), as the gate's do; the bars
    # are set from 1,200 of them, as from the reply sentences, and checked on a million more.
    rng = np.random.default_rng(3)

    def scores(n: int) -> np.ndarray:
        return 1 / (1 + np.exp(-(rng.normal(-4.0, 1.5, n) + rng.exponential(1.4, n))))

    fitted = scores(1200)
    bars, scale = bars_by_length(np.zeros(1200, dtype=bool), fitted, 0.05)
    assert len(bars) == 48 and bars == sorted(bars) and bars[-1] <= 0.999
    assert all(b > bars[COUNTED_SEGMENTS - 1] for b in bars[COUNTED_SEGMENTS:])
    assert 1.0 < scale < 2.5
    fresh = scores(1_000_000)
    for k in (12, 24, 48):
        kept = float((fresh >= bars[k - 1]).mean())
        # About the 5%/k the bar aims at (an estimate from 1,200 scores), not the 5%/12 of the
        # 12-sentence bar nor far below.
        assert 0.05 / k / 5 < kept <= 1.5 * 0.05 / k, (k, kept)


def test_the_weight_decay_is_the_strongest_that_fits_as_well_within_noise() -> None:
    from training.train_gate import strongest_within_noise

    rng = np.random.default_rng(5)
    y = rng.random(4000) < 0.3
    truth = np.where(y, 0.7, 0.2)
    noisy = np.clip(truth + rng.normal(0, 0.05, y.size), 0.01, 0.99)
    # 0.03 loses a hair against 0.01, well within the rows' noise: the smoother fit is taken.
    assert strongest_within_noise(y, {0.01: noisy, 0.03: np.clip(noisy + 0.002, 0, 1)}) == 0.03
    # A decay that fits clearly worse is not, however strong.
    assert strongest_within_noise(y, {0.01: noisy, 0.1: np.full(y.size, 0.3)}) == 0.01


def test_relevance_is_a_probability_that_prefers_the_memory_the_prompt_needs() -> None:
    model = relevance_model()
    memories = [
        MemoryText("The agent service listens on port 3001", "fact"),
        MemoryText("The marketing site uses Tailwind", "fact"),
        MemoryText("Priya owns the iOS app", "fact"),
    ]
    p = model.score("which port does the agent service listen on?", memories)
    assert ((p >= 0) & (p <= 1)).all()
    assert p[0] == p.max() and p[0] >= model.threshold
    assert (p[1:] < model.threshold).all()


def test_a_rule_applies_by_the_activity_it_governs() -> None:
    model = relevance_model()
    memories = [
        MemoryText("Always run the full test suite before deploying", "instruction", 1.0),
        MemoryText("Never log customer emails", "instruction", 1.0),
    ]
    _, applies = model.judge("push the new build to production", memories)
    assert applies.tolist() == [True, False]
    _, applies = model.judge("ok go ahead", memories)
    assert not applies.any()


def _run(
    settings: Settings, text: str, session: str | None = None, transcript: Path | None = None
) -> dict:
    options = RunOptions(
        offline=True, session_id=session, transcript_path=str(transcript) if transcript else None
    )

    async def go() -> dict:
        with open_store(settings) as store:
            return await run_prompt(text, settings, store, options)

    return asyncio.run(go())


def _seed(settings: Settings, memories: list[tuple[str, str, float | None]]) -> None:
    with open_store(settings) as store:
        for content, kind, scope in memories:
            store.add_node(kind, content, scope=scope)


UNRELATED = [
    ("Peter handles the Anderson account", "fact", None),
    ("Never store real passwords in fixtures", "instruction", 1.0),
    ("The mobile app is built with Flutter 3.19", "fact", None),
    ("Invoices go out on the first Monday of the month", "fact", None),
    ("Use British spelling in customer emails", "instruction", 1.0),
    ("The data warehouse is Snowflake, refreshed nightly", "fact", None),
]


def test_an_unrelated_prompt_gets_no_context(home: Path) -> None:
    settings = Settings.from_env(project_id="quiet")
    _seed(settings, UNRELATED)
    for prompt in (
        "Fix the typo in the README heading",
        "why is this loop so slow?",
        "ok go ahead",
    ):
        assert _run(settings, prompt)["context"] == "", prompt


def test_a_rule_surfaces_for_a_prompt_on_its_topic_that_shares_no_words(home: Path) -> None:
    settings = Settings.from_env(project_id="topic")
    _seed(settings, [*UNRELATED, ("Always run the tests before deploying", "instruction", 1.0)])
    context = _run(settings, "ship the api to staging")["context"]
    assert "Always run the tests before deploying" in context


@pytest.mark.slow
def test_global_rules_are_candidates_however_many_memories_are_closer(home: Path) -> None:
    settings = Settings.from_env(project_id="crowd")
    crowd = [
        (f"Deploy service {n} to the staging cluster with the blue-green script", "fact", None)
        for n in range(400)
    ]
    _seed(settings, [*crowd, ("Always run the tests before deploying", "instruction", 1.0)])
    context = _run(settings, "ship the api to staging")["context"]
    assert "Always run the tests before deploying" in context


def test_a_session_does_not_see_the_same_memory_twice_until_it_is_compacted(home: Path) -> None:
    from octygraph.session.hooks import handle

    settings = Settings.from_env(project_id="sess")
    _seed(settings, [("The staging database is Postgres 16 on Neon", "fact", None)])
    first = _run(settings, "what postgres version is staging on?", "s1")
    assert "Postgres 16" in first["context"]
    again = _run(settings, "and which postgres does staging run?", "s1")
    assert "Postgres 16" not in again["context"]
    other = _run(settings, "what postgres version is staging on?", "s2")
    assert "Postgres 16" in other["context"]

    payload = {"hook_event_name": "SessionStart", "source": "compact", "session_id": "s1"}
    env = {"OCTYBOT_HOME": str(home), "OCTYBOT_PROJECT": "sess"}
    asyncio.run(handle("session-start", json.dumps(payload).encode(), env=env))
    after = _run(settings, "what postgres version is staging on?", "s1")
    assert "Postgres 16" in after["context"]


def test_what_a_session_stored_is_not_injected_back_into_that_session(
    home: Path, tmp_path: Path
) -> None:
    settings = Settings.from_env(project_id="own")
    transcript = tmp_path / "s1.jsonl"
    transcript.write_text('{"type": "user"}\n')
    told = _run(settings, "fyi the staging database is Postgres 16 on Neon", "s1", transcript)
    assert told["stored"]
    asked = _run(settings, "what postgres version is staging on?", "s1", transcript)
    assert "Postgres 16" not in asked["context"]
    # The session's own words are in its conversation, whether or not the hook names a transcript.
    blind = _run(settings, "what postgres version is staging on?", "s1")
    assert "Postgres 16" not in blind["context"]
    fresh = _run(settings, "what postgres version is staging on?", "s2", transcript)
    assert "Postgres 16" in fresh["context"]
    # `octygraph run` is not a conversation: each run may be given what an earlier one stored.
    assert "Postgres 16" in _run(settings, "what postgres version is staging on?", "cli")["context"]
