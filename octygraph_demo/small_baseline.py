"""The `small-baseline` profile: a small, hand-written memory of a software team.

About a hundred memories of Brightline, a small software company: people, clients and their accounts,
services, tools, rules with universal / team / entity scopes (1.0 / 0.5 / 0.2), dated plans (some already
past, some ahead), events, opinions and a few facts that were later corrected (superseded). Dates are
relative to an anchor day, so the same anchor always gives the same graph, ids and timestamps included.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from octygraph.profiles.graph import GraphBuilder, GraphSpec, days_from, stable_id, stamp
from octygraph.store import NewNode

# The day the baseline's "now" is pinned to (a Monday). Past plans fall before it, future plans after.
DEFAULT_ANCHOR = date(2026, 11, 16)
NAMESPACE = "small-baseline"

# key, name, subtype, aliases, days before the anchor it was first mentioned
# fmt: off
ENTITIES: tuple[tuple[str, str, str, tuple[str, ...], int], ...] = (
    ("brightline", "Brightline", "org", ("Brightline Software",), 240),
    ("peter", "Peter Novak", "person", ("Peter",), 230),
    ("lisa", "Lisa Chen", "person", ("Lisa",), 230),
    ("dave", "Dave Okafor", "person", ("Dave",), 228),
    ("sarah", "Sarah Kim", "person", ("Sarah",), 226),
    ("maria", "Maria Lopez", "person", ("Maria",), 220),
    ("tom", "Tom Becker", "person", ("Tom",), 218),
    ("priya", "Priya Raman", "person", ("Priya",), 200),
    ("jonas", "Jonas Weber", "person", ("Jonas",), 235),
    ("anderson", "Anderson & Co", "org", ("Anderson", "Anderson and Co"), 210),
    ("acme", "Acme Corp", "org", ("Acme",), 205),
    ("globex", "Globex", "org", ("Globex Corporation",), 190),
    ("anderson_acct", "Anderson account", "account", (), 210),
    ("acme_acct", "Acme account", "account", (), 205),
    ("globex_acct", "Globex account", "account", (), 190),
    ("billing", "billing service", "project", ("billing",), 225),
    ("atlas", "Atlas mobile app", "project", ("Atlas",), 222),
    ("portal", "customer portal", "project", ("portal",), 215),
    ("platform", "platform team", "org", ("platform",), 212),
    ("mobile", "mobile team", "org", (), 212),
    ("github_actions", "GitHub Actions", "tool", (), 180),
    ("sentry", "Sentry", "tool", (), 170),
    ("terraform", "Terraform", "tool", (), 168),
    ("linear", "Linear", "tool", (), 160),
    ("pagerduty", "PagerDuty", "tool", (), 158),
    ("grafana", "Grafana", "tool", (), 150),
    ("postgres", "Postgres", "tool", ("PostgreSQL",), 224),
    ("slack", "Slack", "tool", (), 232),
    ("onepassword", "1Password", "tool", (), 140),
    ("berlin", "Berlin office", "place", ("Berlin",), 236),
    ("runbook", "deployment runbook", "document", ("runbook",), 120),
    ("onboarding_guide", "Anderson onboarding guide", "document", (), 20),
    ("release", "release process", "process", (), 130),
    ("error_budget", "error budget", "concept", (), 100),
)
# fmt: on

# Entity-to-entity edges: (source, edge type, target).
RELATIONS: tuple[tuple[str, str, str], ...] = (
    *(
        (p, "works_for", "brightline")
        for p in ("peter", "lisa", "dave", "sarah", "maria", "tom", "priya", "jonas")
    ),
    ("peter", "handles", "anderson_acct"),
    ("peter", "handles", "acme_acct"),
    ("priya", "handles", "globex_acct"),
    ("lisa", "owns", "billing"),
    ("sarah", "manages", "mobile"),
    ("mobile", "works_on", "atlas"),
    ("dave", "works_on", "platform"),
    ("tom", "works_on", "platform"),
    ("maria", "works_on", "portal"),
    ("lisa", "reports_to", "jonas"),
    ("dave", "reports_to", "jonas"),
    ("sarah", "reports_to", "jonas"),
    ("anderson_acct", "belongs_to", "anderson"),
    ("acme_acct", "belongs_to", "acme"),
    ("globex_acct", "belongs_to", "globex"),
    ("anderson", "client_of", "brightline"),
    ("acme", "client_of", "brightline"),
    ("globex", "client_of", "brightline"),
    ("billing", "uses", "postgres"),
    ("billing", "uses", "sentry"),
    ("portal", "uses", "sentry"),
    ("platform", "uses", "terraform"),
    ("release", "uses", "github_actions"),
    ("runbook", "part_of", "release"),
    ("onboarding_guide", "about", "anderson"),
    ("lisa", "located_in", "berlin"),
    ("dave", "located_in", "berlin"),
)


@dataclass(frozen=True)
class Memory:
    """One hand-written memory; `{d+N}` / `{d-N}` in the text become dates N days from the anchor."""

    node_type: str
    subtype: str | None
    text: str
    about: tuple[str, ...]
    days_ago: int
    scope: float | None = None
    plan_day: int | None = None  # valid_from, in days from the anchor
    plan_until: int | None = None
    source: str = "user"
    salience: float = 1.0
    key: str | None = None  # names a memory that a later one replaces
    replaces: str | None = None


M = Memory  # a short name keeps the table below readable


# fmt: off
MEMORIES: tuple[Memory, ...] = (
    # ---- facts
    M("fact", "definitional", "Peter handles the Anderson account",
      ("peter", "anderson_acct"), 200),
    M("fact", "definitional", "Lisa owns the billing service", ("lisa", "billing"), 190),
    M("fact", "definitional", "The billing service runs on Postgres 15 in the eu-west-1 region",
      ("billing", "postgres"), 185),
    M("fact", "definitional", "Anderson & Co's contract renews on 31 March 2027 at $48,000 a year",
      ("anderson", "anderson_acct"), 150),
    M("fact", "definitional", "Dave is the on-call lead for the platform team",
      ("dave", "platform"), 170),
    M("fact", "definitional", "Sarah manages the mobile team, which builds the Atlas mobile app",
      ("sarah", "mobile", "atlas"), 175),
    M("fact", "definitional",
      "Staging deploys run automatically from the main branch through GitHub Actions",
      ("github_actions", "release"), 95),
    M("fact", "definitional", "The public API rate limit is 300 requests per minute per key",
      (), 160, key="rate-limit"),
    M("fact", "definitional", "The public API rate limit is 600 requests per minute per key",
      (), 35, replaces="rate-limit"),
    M("fact", "definitional", "Acme pays its invoices quarterly by bank transfer",
      ("acme", "acme_acct"), 140),
    M("fact", "definitional",
      "Sentry alerts for the billing service go to the #billing-alerts Slack channel",
      ("sentry", "billing", "slack"), 110),
    M("fact", "definitional", "Jonas is the CTO and approves every new vendor contract",
      ("jonas",), 220),
    M("fact", "definitional",
      "Maria leads QA and keeps the regression suite in the qa-suite repository", ("maria",), 165),
    M("fact", "definitional", "Tom handles the Globex account",
      ("tom", "globex_acct"), 185, key="globex-owner"),
    M("fact", "definitional",
      "Priya handles the Globex account now that Tom has moved to the platform team",
      ("priya", "globex_acct"), 50, replaces="globex-owner"),
    M("fact", "causal",
      "Billing invoices went out late in October because the nightly export job timed out",
      ("billing",), 12),
    M("fact", "conditional",
      "If the customer portal's error budget drops below 20%, feature releases pause until it recovers",
      ("portal", "error_budget"), 90),
    M("fact", "comparative", "The Atlas app crashes half as often as it did before the 2.5 release",
      ("atlas",), 25),
    M("fact", "negation", "The billing service does not store card numbers; Stripe holds them",
      ("billing",), 130),
    M("fact", "definitional", "The deployment runbook lives in the ops section of the wiki",
      ("runbook",), 118),
    M("fact", "definitional", "The Berlin office hosts the platform and billing teams",
      ("berlin", "platform"), 210),
    M("fact", "definitional", "Production dashboards in Grafana are in the prod-overview folder",
      ("grafana",), 80),
    M("fact", "definitional", "The customer portal is written in TypeScript with Next.js",
      ("portal",), 200),
    M("fact", "definitional", "Globex wants every invoice in euros", ("globex", "globex_acct"), 60),
    # ---- instructions: universal (1.0), team or tool wide (0.5), one entity (0.2)
    M("instruction", "rule", "Always run the tests before deploying", ("release",), 180, scope=1.0),
    M("instruction", "rule", "Never push directly to main; open a pull request and get one review",
      ("github_actions",), 178, scope=1.0),
    M("instruction", "rule", "Never commit secrets to a repository; keep them in 1Password",
      ("onepassword",), 139, scope=1.0),
    M("instruction", "process",
      "Every production deploy needs a rollback plan in the pull request description",
      ("release", "runbook"), 100, scope=1.0),
    M("instruction", "tool_usage",
      "Use Terraform for every infrastructure change on the platform team",
      ("terraform", "platform"), 150, scope=0.5),
    M("instruction", "rule",
      "Billing service database migrations need Lisa's review before they merge",
      ("billing", "lisa"), 120, scope=0.5),
    M("instruction", "tool_usage", "Track bugs in Linear, not in GitHub issues",
      ("linear",), 155, scope=0.5),
    M("instruction", "process", "Post release notes in #releases after every Atlas mobile release",
      ("atlas", "slack"), 70, scope=0.5),
    M("instruction", "tool_usage", "Page the on-call engineer through PagerDuty, never by phone",
      ("pagerduty",), 150, scope=0.5),
    M("instruction", "process", "Run the smoke tests after deploying",
      ("release",), 128, scope=0.5, key="smoke-tests"),
    M("instruction", "process",
      "Run the full smoke suite against staging right after each production deploy",
      ("release",), 30, scope=0.5, replaces="smoke-tests"),
    M("instruction", "instruction", "Bill Acme quarterly, not monthly",
      ("acme", "acme_acct"), 140, scope=0.2),
    M("instruction", "instruction", "Send Anderson & Co a status report every Friday before noon",
      ("anderson", "peter"), 145, scope=0.2),
    M("instruction", "rule", "Globex support staff must use two-factor authentication",
      ("globex",), 58, scope=0.2),
    M("instruction", "rule", "Do not deploy the customer portal on Fridays after 3 pm",
      ("portal",), 85, scope=0.2),
    M("instruction", "instruction", "Announce billing changes in #billing one day ahead",
      ("billing", "lisa"), 75, scope=0.2),
    # ---- plans: two already past, the rest ahead of the anchor
    M("plan", "scheduled", "Billing v2 launches on {d-18}",
      ("billing", "lisa"), 60, scope=0.5, plan_day=-18),
    M("plan", "intended", "Peter plans to send Anderson & Co the renewal proposal on {d-5}",
      ("peter", "anderson"), 21, plan_day=-5),
    M("plan", "scheduled", "Anderson & Co quarterly business review on {d+32}",
      ("anderson", "peter"), 14, plan_day=32),
    M("plan", "intended", "Upgrade the billing database to Postgres 16 on {d+79}",
      ("billing", "postgres"), 9, plan_day=79),
    M("plan", "scheduled", "Sarah is on vacation from {d+35} to {d+49}",
      ("sarah",), 8, plan_day=35, plan_until=49),
    M("plan", "scheduled", "Atlas 3.0 ships to the app stores on {d+24}",
      ("atlas", "mobile"), 16, plan_day=24),
    M("plan", "requested", "Acme asked for a security review of the customer portal by {d+25}",
      ("acme", "portal"), 4, plan_day=25),
    M("plan", "scheduled", "The holiday deploy freeze starts on {d+29}",
      ("release",), 40, scope=1.0, plan_day=29, key="freeze"),
    M("plan", "scheduled", "The holiday deploy freeze starts on {d+32}",
      ("release",), 6, scope=1.0, plan_day=32, replaces="freeze"),
    M("plan", "intended", "Jonas plans to hire two platform engineers in the first quarter of 2027",
      ("jonas", "platform"), 26, plan_day=63),
    # ---- events
    M("event", "action", "Peter finished the Anderson onboarding guide on {d-6}",
      ("peter", "onboarding_guide", "anderson"), 6),
    M("event", "incident",
      "The billing service had a 42-minute outage on {d-30}; an expired TLS certificate was the cause",
      ("billing",), 30),
    M("event", "decision", "On {d-62} the team decided to move CI from CircleCI to GitHub Actions",
      ("github_actions",), 62),
    M("event", "conversation",
      "Lisa and Jonas agreed on {d-12} to rewrite the invoice exporter next quarter",
      ("lisa", "jonas", "billing"), 12),
    M("event", "outcome", "Atlas 2.5 was released on {d-40}", ("atlas", "mobile"), 40),
    M("event", "incident",
      "Maria found a data-loss bug in the customer portal's CSV import on {d-3}",
      ("maria", "portal"), 3),
    M("event", "action", "Dave rotated all production database passwords on {d-20}",
      ("dave", "postgres"), 20),
    M("event", "outcome", "Acme signed a two-year contract extension on {d-90}",
      ("acme", "acme_acct"), 90),
    M("event", "completed_plan",
      "The Terraform migration of the staging network finished on {d-45}",
      ("terraform", "platform"), 45),
    M("event", "action", "Priya took over the Globex account from Tom on {d-50}",
      ("priya", "tom", "globex_acct"), 50),
    # ---- opinions
    M("opinion", None,
      "Lisa thinks the billing codebase needs a rewrite before it can support usage-based pricing",
      ("lisa", "billing"), 33),
    M("opinion", None, "Dave prefers Grafana over Datadog for dashboards", ("dave", "grafana"), 88),
    M("opinion", None,
      "The mobile team finds the staging environment too slow for end-to-end tests",
      ("mobile", "sarah"), 27, source="claude"),
    M("opinion", None, "Jonas believes Anderson & Co is the most important client for 2027",
      ("jonas", "anderson"), 19),
    M("opinion", None, "Maria thinks flaky portal tests waste about a day a week",
      ("maria", "portal"), 15),
)
# fmt: on


def long_date(day: date) -> str:
    """`Friday 4 December 2026`: how people write a date in a sentence."""
    return f"{day.strftime('%A')} {day.day} {day.strftime('%B %Y')}"


def fill_dates(text: str, anchor: date) -> str:
    """Replace `{d+N}` / `{d-N}` with the long date N days from `anchor`."""
    out = text
    while "{d" in out:
        start = out.index("{d")
        end = out.index("}", start)
        offset = int(out[start + 2 : end])
        out = out[:start] + long_date(days_from(anchor, offset)) + out[end + 1 :]
    return out


def baseline_count() -> int:
    """How many nodes the small baseline has (entities plus memories, old versions included)."""
    return len(ENTITIES) + len(MEMORIES)


def build_baseline(builder: GraphBuilder, anchor: date = DEFAULT_ANCHOR) -> dict[str, str]:
    """Add the small baseline to `builder`; returns entity key -> node id (for look-alike generators)."""
    entity_ids: dict[str, str] = {}
    for i, (key, name, subtype, aliases, days_ago) in enumerate(ENTITIES):
        node_id = stable_id(NAMESPACE, "entity", key)
        attributes: dict[str, Any] | None = {"aliases": list(aliases)} if aliases else None
        builder.node(
            NewNode(
                node_type="entity",
                content=name,
                subtype=subtype,
                attributes=attributes,
                id=node_id,
                created_at=stamp(days_from(anchor, -days_ago), 8 * 60 + i),
            )
        )
        entity_ids[key] = node_id
    for source, edge_type, target in RELATIONS:
        builder.link(entity_ids[source], edge_type, entity_ids[target])

    keyed: dict[str, str] = {}
    for i, memory in enumerate(MEMORIES):
        content = fill_dates(memory.text, anchor)
        node_id = stable_id(NAMESPACE, memory.node_type, content)
        replaced = {"supersedes": keyed[memory.replaces]} if memory.replaces else None
        builder.node(
            NewNode(
                node_type=memory.node_type,
                content=content,
                subtype=memory.subtype,
                salience=memory.salience,
                source=memory.source,
                scope=memory.scope,
                valid_from=_day_or_none(anchor, memory.plan_day),
                valid_until=_day_or_none(anchor, memory.plan_until),
                attributes=replaced,
                id=node_id,
                created_at=stamp(days_from(anchor, -memory.days_ago), 9 * 60 + 7 * i),
            ),
            about=[entity_ids[k] for k in memory.about],
        )
        if memory.key:
            keyed[memory.key] = node_id
        if memory.replaces:
            builder.supersede(keyed[memory.replaces], node_id)
    return entity_ids


def small_baseline_graph(anchor: date = DEFAULT_ANCHOR) -> GraphSpec:
    """The small-baseline profile as a `GraphSpec` (same anchor, same graph)."""
    builder = GraphBuilder()
    build_baseline(builder, anchor)
    return builder.spec


def _day_or_none(anchor: date, offset: int | None) -> str | None:
    return None if offset is None else days_from(anchor, offset).isoformat()
