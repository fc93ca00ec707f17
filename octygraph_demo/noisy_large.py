"""The `noisy-large` profile: the small baseline hidden among thousands of templated look-alikes.

Every node type is generated from sentence templates shaped like the baseline's ("Peter handles the
Anderson account" among "Peter Hall handles the Andersen Logistics account"), linked to generated people,
clients, services and tools, with a few superseded facts. A seeded `random.Random` drives every choice and
ids and timestamps derive from the seed, so the same (size, seed, anchor) always gives the same graph.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

from octygraph.profiles.graph import GraphBuilder, GraphSpec, stable_id, stamp
from octygraph.store import NewNode
from octygraph_demo.small_baseline import (
    DEFAULT_ANCHOR,
    ENTITIES,
    baseline_count,
    build_baseline,
    long_date,
)

DEFAULT_SIZE = 20_000
DEFAULT_SEED = 20_000
NAMESPACE = "noisy-large"

# Share of generated nodes per type (entities first; the rest split the remainder).
ENTITY_SHARE = 0.12
MEMORY_SHARES = (
    ("fact", 0.36),
    ("event", 0.20),
    ("instruction", 0.16),
    ("plan", 0.12),
    ("opinion", 0.08),
    ("superseded", 0.08),  # facts and instructions that a later one replaced (half old, half new)
)
ENTITY_SHARES = (
    ("person", 0.38),
    ("org", 0.14),
    ("account", 0.12),
    ("project", 0.14),
    ("tool", 0.07),
    ("place", 0.03),
    ("document", 0.06),
    ("process", 0.03),
    ("concept", 0.02),
    ("event", 0.01),
)

FIRST = (
    "Peter Lisa Dave Sarah Maria Tom Priya Jonas Anna Mark Lena Omar Chloe Raj Elena Felix Grace Hugo Ines "
    "Jamal Kira Leo Mina Nico Olga Pablo Quinn Rosa Sam Tara Umar Vera Will Yusuf Zoe Ben Carla Diego Emma "
    "Farah Gabe Hana Ivan Julia Kofi Lars Maya Nadia Oscar Paula Ravi Sofia Theo Uma Victor Wendy Yara Zack "
    "Alice Bruno Petra Lise David Sara Marie Tomas Priyanka Jonah"
).split()
LAST = (
    "Hall Chan Okoro Kimura Lopes Baker Rao Wagner Novak Chen Becker Weber Schmidt Silva Dubois Rossi Jensen "
    "Nowak Kowalski Murphy Walsh Ortiz Tanaka Sato Ivanova Petrov Haddad Mensah Osei Nkemelu Moreau Fischer "
    "Keller Brandt Svensson Lindqvist Costa Ferreira Garcia Martin Novakova Cheng Okafor Kim Lopez Raman "
    "Becket Webber Andersen Henderson Sanders Park Lee Singh Patel Khan Ali Cohen Levi Gross Klein"
).split()
ORG_WORDS = (
    "Andersen Henderson Sanderson Anders Acme Akme Globe Globetech Initech Umbrella Stark Wayne Wonka Hooli "
    "Vandelay Soylent Cyberdyne Tyrell Oscorp Massive Pied Piper Northwind Contoso Fabrikam Litware Adatum "
    "Bluebird Redwood Ironbark Silverline Brightwater Brightfield Clearpath Greenleaf Highland Lakeside "
    "Meridian Pinnacle Riverside Stonebridge Summit Sunrise Westbrook Everest Harbor Keystone Crescent"
).split()
ORG_SUFFIX = (
    "Group",
    "Labs",
    "Logistics",
    "Retail",
    "Health",
    "Bank",
    "Media",
    "Foods",
    "Motors",
    "Energy",
    "Systems",
    "Partners",
    "& Co",
    "Corp",
    "Insurance",
    "Travel",
)
AREAS = (
    "billing reports",
    "billing gateway",
    "invoicing",
    "payments",
    "search",
    "notifications",
    "auth",
    "reporting",
    "ledger",
    "checkout",
    "onboarding",
    "shipping",
    "pricing",
    "analytics",
    "export",
    "import",
    "scheduling",
    "messaging",
    "identity",
    "catalog",
    "inventory",
    "recommendations",
    "fraud detection",
    "tax",
    "refunds",
    "subscriptions",
    "audit log",
    "feature flags",
    "email",
    "SMS",
    "webhooks",
    "geocoding",
    "media upload",
    "thumbnails",
    "translation",
    "customer data",
    "support inbox",
    "partner API",
)
CODENAMES = (
    "Orion Vega Nova Lyra Apollo Zephyr Juniper Cobalt Falcon Harbor Beacon Ember Quartz Tundra Willow "
    "Aurora Polaris Titan Comet Nimbus Sierra Delta Echo Kestrel Maple Onyx Pioneer Raven Sable Atlas-Lite "
    "Atlantis Atlas2 Borealis Cedar Dune Fjord Granite Helix Iris Jade Krypton Lumen Mistral Nebula Opal "
    "Prism Quasar Rook Solstice Tempest"
).split()
APP_KINDS = (
    "mobile app",
    "web app",
    "data pipeline",
    "admin console",
    "desktop client",
    "partner portal",
)
TOOLS = (
    "Jenkins",
    "CircleCI",
    "Datadog",
    "New Relic",
    "Kubernetes",
    "Docker",
    "Helm",
    "Argo CD",
    "Vault",
    "Consul",
    "Redis",
    "Kafka",
    "RabbitMQ",
    "Elasticsearch",
    "MySQL",
    "MongoDB",
    "Snowflake",
    "dbt",
    "Airflow",
    "Jira",
    "Confluence",
    "Notion",
    "Asana",
    "Figma",
    "Opsgenie",
    "Prometheus",
    "Loki",
    "Honeycomb",
    "Splunk",
    "LaunchDarkly",
    "Stripe",
    "Twilio",
    "SendGrid",
    "Okta",
    "Auth0",
    "Cloudflare",
    "Fastly",
    "AWS Lambda",
    "BigQuery",
    "Metabase",
    "Looker",
    "Bitbucket",
    "GitLab CI",
    "Buildkite",
    "TeamCity",
    "Bugsnag",
    "Rollbar",
    "Grafana Cloud",
    "Sentry Relay",
    "Postgres 14 cluster",
    "Bitwarden",
    "Linear Insights",
    "PagerTree",
    "Terragrunt",
    "Pulumi",
)
CITIES = (
    "Lisbon Madrid Paris Amsterdam Warsaw Prague Vienna Zurich Munich Hamburg Oslo Stockholm Copenhagen "
    "Dublin London Manchester Toronto Austin Denver Boston Chicago Singapore Sydney Tokyo Seoul Bangalore "
    "Nairobi Lagos Cairo"
).split()
PLACE_KINDS = ("office", "office", "data center", "warehouse", "coworking space")
PROCESS_KINDS = ("release", "incident review", "hiring", "deploy", "code review", "vendor approval")
TEAMS = (
    "payments",
    "growth",
    "data",
    "infra",
    "search",
    "web",
    "identity",
    "checkout",
    "support tools",
    "integrations",
    "security",
    "design systems",
    "reliability",
    "analytics",
    "partner",
)

# Scalar fillers: one of these values per placeholder.
CHOICES: dict[str, tuple[str, ...]] = {
    "region": ("eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-southeast-1"),
    "period": ("monthly", "quarterly", "yearly", "every two months", "weekly"),
    "period2": ("monthly", "quarterly", "yearly", "weekly"),
    "payment": ("bank transfer", "credit card", "direct debit", "purchase order"),
    "channel": (
        "alerts",
        "ops",
        "releases",
        "deploys",
        "incidents",
        "support",
        "billing-ops",
        "platform-alerts",
        "mobile-releases",
        "data-alerts",
        "on-call",
        "sales",
    ),
    "weekday": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"),
    "hour": ("noon", "10 am", "3 pm", "4 pm", "5 pm"),
    "check": (
        "tests",
        "integration tests",
        "linter",
        "type checker",
        "load tests",
        "smoke tests",
        "security scan",
        "contract tests",
        "database migration dry run",
    ),
    "branch": ("main", "master", "release", "production"),
    "purpose": (
        "infrastructure changes",
        "feature flags",
        "secrets",
        "dashboards",
        "incident tracking",
        "release planning",
        "on-call schedules",
        "design reviews",
        "data pipelines",
    ),
    "work": ("bugs", "feature requests", "incidents", "tech debt", "support tickets"),
    "env": ("staging", "preview", "QA", "sandbox", "load-test"),
    "channel_kind": ("phone", "SMS", "email", "direct message"),
    "notice": ("one day", "two days", "a week", "three days"),
    "security": ("two-factor authentication", "hardware keys", "single sign-on", "a VPN"),
    "bad_action": (
        "deploy on a Friday",
        "change the database schema",
        "rotate production keys",
        "merge to main",
        "delete customer data",
        "change DNS records",
    ),
    "approval": (
        "a second review",
        "a change ticket",
        "telling the on-call engineer",
        "a rollback plan",
    ),
    "good_action": (
        "write a changelog entry",
        "update the runbook",
        "tag the release",
        "check the dashboards",
        "announce the change in Slack",
    ),
    "moment": (
        "merging",
        "a release",
        "a customer demo",
        "closing an incident",
        "a database migration",
    ),
    "cause": (
        "an expired TLS certificate",
        "a full disk",
        "a bad config push",
        "a DNS change",
        "a memory leak",
        "an exhausted connection pool",
        "a third-party outage",
    ),
    "bug": ("data-loss bug", "race condition", "memory leak", "timezone bug", "permissions bug"),
    "agreement": (
        "rewrite the exporter next quarter",
        "split the service in two",
        "drop the legacy API",
        "add a second on-call rotation",
        "move the nightly jobs to Airflow",
    ),
    "goal": ("the next price change", "it can scale", "the audit", "the 2027 roadmap"),
    "tests": ("end-to-end tests", "load tests", "integration tests", "demos"),
    "amount_time": ("half a day", "a day", "two hours", "three hours"),
    "section": ("ops", "engineering", "support", "product", "security"),
    "currency": ("euros", "US dollars", "pounds", "Swiss francs"),
    "language": ("Go", "TypeScript", "Python", "Kotlin", "Rust", "Java", "Elixir"),
    "data": ("card numbers", "passwords", "raw logs", "customer addresses"),
    "month": ("January", "March", "April", "June", "August", "September", "October"),
}

FACTS: tuple[tuple[str, str], ...] = (
    ("definitional", "{person} handles the {account}"),
    ("definitional", "{person} owns the {service}"),
    ("definitional", "The {service} runs on {tool} in the {region} region"),
    ("definitional", "{org}'s contract renews on {future} at ${amount} a year"),
    ("definitional", "{person} is the on-call lead for the {service}"),
    ("definitional", "{person} manages the {team} team"),
    ("definitional", "The {service} rate limit is {n} requests per minute per key"),
    ("definitional", "{org} pays its invoices {period} by {payment}"),
    ("definitional", "{tool} alerts for the {service} go to the #{channel} Slack channel"),
    ("definitional", "{person} reports to {person2}"),
    ("definitional", "The {doc} lives in the {section} section of the wiki"),
    ("definitional", "{org} wants every invoice in {currency}"),
    ("definitional", "The {service} is written in {language}"),
    ("definitional", "The {place} hosts the {team} team"),
    ("causal", "The {service} slowed down in {month} because the {tool} cache filled up"),
    ("causal", "{org}'s invoices went out late because the {service} export job failed"),
    ("conditional", "If the {service} queue passes {n} jobs, {person} gets paged"),
    ("conditional", "If {org} reports a critical bug, {person} joins the call within an hour"),
    ("comparative", "The {service} answers {pct}% faster than it did on {tool}"),
    ("comparative", "{org} opened {pct}% more support tickets than last quarter"),
    ("negation", "The {service} does not store {data}; {tool} holds them"),
    ("negation", "{person} does not have production access to the {service}"),
)
INSTRUCTIONS: tuple[tuple[str, float, str], ...] = (
    ("rule", 1.0, "Never {bad_action} without {approval}"),
    ("instruction", 1.0, "Always {good_action} before {moment}"),
    ("rule", 0.5, "Always run the {check} before deploying the {service}"),
    ("rule", 0.5, "Never push directly to {branch} in the {service} repository"),
    ("tool_usage", 0.5, "Use {tool} for {purpose} on the {team} team"),
    ("rule", 0.5, "{service} database migrations need {person}'s review before they merge"),
    ("tool_usage", 0.5, "Track {work} for the {service} in {tool}, not in {tool2}"),
    ("process", 0.5, "Post release notes in #{channel} after every {service} release"),
    ("tool_usage", 0.5, "Page the {service} on-call through {tool}, never by {channel_kind}"),
    ("process", 0.5, "Run the {check} against {env} right after each {service} deploy"),
    ("instruction", 0.2, "Bill {org} {period}, not {period2}"),
    ("instruction", 0.2, "Send {org} a status report every {weekday} before {hour}"),
    ("rule", 0.2, "{org} support staff must use {security}"),
    ("rule", 0.2, "Do not deploy the {service} on {weekday}s after {hour}"),
    ("instruction", 0.2, "Announce {service} changes in #{channel} {notice} ahead"),
)
PLANS: tuple[tuple[str, str], ...] = (
    ("scheduled", "{org} quarterly business review on {pdate}"),
    ("intended", "Upgrade the {service} to {tool} {version} on {pdate}"),
    ("scheduled", "{person} is on vacation from {pdate} to {pdate2}"),
    ("scheduled", "{service} {version} ships on {pdate}"),
    ("requested", "{org} asked for a security review of the {service} by {pdate}"),
    ("scheduled", "The {team} team's deploy freeze starts on {pdate}"),
    ("intended", "{person} plans to send {org} the renewal proposal on {pdate}"),
    ("intended", "{person} plans to move the {service} off {tool} by {pdate}"),
    ("requested", "{person} asked for the {doc} to be updated by {pdate}"),
)
EVENTS: tuple[tuple[str, str], ...] = (
    ("action", "{person} finished the {doc} on {past}"),
    ("incident", "The {service} had a {minutes}-minute outage on {past}; {cause} was the cause"),
    ("decision", "On {past} the {team} team decided to move from {tool} to {tool2}"),
    ("conversation", "{person} and {person2} agreed on {past} to {agreement}"),
    ("outcome", "{service} {version} was released on {past}"),
    ("incident", "{person} found a {bug} in the {service} on {past}"),
    ("action", "{person} rotated the {service} credentials on {past}"),
    ("outcome", "{org} signed a {years}-year contract extension on {past}"),
    ("completed_plan", "The {tool} migration of the {service} finished on {past}"),
    ("action", "{person} took over the {account} from {person2} on {past}"),
)
OPINIONS: tuple[str, ...] = (
    "{person} thinks the {service} needs a rewrite before {goal}",
    "{person} prefers {tool} over {tool2} for {purpose}",
    "The {team} team finds the {env} environment too slow for {tests}",
    "{person} believes {org} is the most important client for {year}",
    "{person} thinks flaky {service} tests waste about {amount_time} a week",
)
# Facts whose later version changes one detail (who, how much, where).
SUPERSEDABLE: tuple[tuple[str, str, str, float | None], ...] = (
    ("fact", "definitional", "{person} handles the {account}", None),
    ("fact", "definitional", "{person} owns the {service}", None),
    ("fact", "definitional", "The {service} rate limit is {n} requests per minute per key", None),
    ("fact", "definitional", "{org} pays its invoices {period} by {payment}", None),
    ("instruction", "instruction", "Bill {org} {period}, not {period2}", 0.2),
    ("instruction", "rule", "Always run the {check} before deploying the {service}", 0.5),
)
ENTITY_SLOTS = {
    "person": "person",
    "person2": "person",
    "org": "org",
    "account": "account",
    "service": "project",
    "tool": "tool",
    "tool2": "tool",
    "place": "place",
    "doc": "document",
}
# The detail a later version changes, per template (first one present).
CHANGEABLE = ("person", "n", "period", "payment", "check")


class _Fill(dict[str, str]):
    """Placeholder values drawn on first use (so unused slots draw nothing), remembering linked entities."""

    def __init__(self, gen: _Generator, day: date) -> None:
        super().__init__()
        self.gen = gen
        self.day = day  # the day the memory is about (past event or plan), set by date slots
        self.plan_day: date | None = None
        self.plan_until: date | None = None
        self.entities: list[str] = []

    def __missing__(self, key: str) -> str:
        value = self.gen.draw(key, self)
        self[key] = value
        return value


class _Generator:
    """Draws names, entities and sentence parts from one seeded random stream."""

    def __init__(self, seed: int, anchor: date, builder: GraphBuilder) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.anchor = anchor
        self.builder = builder
        self.pools: dict[str, list[tuple[str, str]]] = {}  # entity subtype -> [(id, name)]
        self.name_of: dict[str, str] = {}  # entity id -> name
        self.counter = 0
        self.taken = {
            name.lower() for _, name, _, aliases, _ in ENTITIES for name in (name, *aliases)
        }

    # ------------------------------------------------------------------ ids and time

    def next_id(self) -> str:
        self.counter += 1
        return stable_id(NAMESPACE, str(self.seed), str(self.counter))

    def moment(self, day: date) -> str:
        return stamp(min(day, self.anchor), self.rng.randint(7 * 60, 20 * 60))

    def past_day(self, low: int = 1, high: int = 365) -> date:
        return self.anchor - timedelta(days=self.rng.randint(low, high))

    # ------------------------------------------------------------------ entities

    def unique(self, make: Callable[[], str]) -> str:
        for _ in range(30):
            name = make()
            if name.lower() not in self.taken:
                break
        else:
            base = make()
            n = 2
            while f"{base} {n}".lower() in self.taken:
                n += 1
            name = f"{base} {n}"
        self.taken.add(name.lower())
        return name

    def entity_name(self, subtype: str) -> str:
        r = self.rng
        makers: dict[str, Callable[[], str]] = {
            "person": lambda: f"{r.choice(FIRST)} {r.choice(LAST)}",
            "org": lambda: f"{r.choice(ORG_WORDS)} {r.choice(ORG_SUFFIX)}",
            "project": lambda: (
                f"{r.choice(AREAS)} {r.choice(('service', 'service', 'API', 'worker', 'jobs'))}"
                if r.random() < 0.5
                else f"{r.choice(CODENAMES)} {r.choice(APP_KINDS)}"
            ),
            "tool": lambda: (
                r.choice(TOOLS)
                if r.random() < 0.7
                else f"{r.choice(TOOLS)} ({r.choice(CHOICES['env'])})"
            ),
            "place": lambda: f"{r.choice(CITIES)} {r.choice(PLACE_KINDS)}",
            "document": lambda: r.choice(
                (
                    f"{r.choice(ORG_WORDS)} onboarding guide",
                    f"{r.choice(AREAS)} runbook",
                    f"{r.choice(CODENAMES)} design doc",
                    f"Q{r.randint(1, 4)} {r.choice((2025, 2026, 2027))} roadmap",
                )
            ),
            "process": lambda: f"{r.choice(TEAMS)} {r.choice(PROCESS_KINDS)} process",
            "concept": lambda: (
                f"{r.choice(AREAS)} {r.choice(('error budget', 'latency SLO', 'uptime target'))}"
            ),
            "event": lambda: (
                f"{r.choice(CODENAMES)} {r.choice(('offsite', 'launch', 'hackathon'))} {r.choice((2025, 2026))}"
            ),
        }
        if subtype == "account":
            orgs = self.pools.get("org") or []
            if orgs:
                return self.unique(lambda: f"{r.choice(orgs)[1]} account")
            return self.unique(lambda: f"{r.choice(ORG_WORDS)} {r.choice(ORG_SUFFIX)} account")
        return self.unique(makers[subtype])

    def make_entities(self, count: int) -> None:
        for subtype, n in _split(count, ENTITY_SHARES):
            pool = self.pools.setdefault(subtype, [])
            for _ in range(n):
                node_id = self.next_id()
                name = self.entity_name(subtype)
                self.builder.node(
                    NewNode(
                        node_type="entity",
                        content=name,
                        subtype=subtype,
                        id=node_id,
                        created_at=self.moment(self.past_day(200, 420)),
                    )
                )
                pool.append((node_id, name))
                self.name_of[node_id] = name
        self.link_entities()

    def link_entities(self) -> None:
        r = self.rng
        pick = self.pick_entity
        for node_id, name in self.pools.get("account", []):
            org = next((o for o in self.pools.get("org", []) if name.startswith(o[1] + " ")), None)
            if org:
                self.builder.link(node_id, "belongs_to", org[0])
        for node_id, _ in self.pools.get("person", []):
            if r.random() < 0.4 and (org_id := pick("org")):
                self.builder.link(node_id, "works_for", org_id)
            if r.random() < 0.6 and (project_id := pick("project")):
                self.builder.link(node_id, "works_on", project_id)
            if r.random() < 0.25 and (account_id := pick("account")):
                self.builder.link(node_id, "handles", account_id)
        for node_id, _ in self.pools.get("project", []):
            for _ in range(r.randint(1, 2)):
                if tool_id := pick("tool"):
                    self.builder.link(node_id, "uses", tool_id)
        for node_id, _ in self.pools.get("document", []):
            if target := pick(r.choice(("project", "org"))):
                self.builder.link(node_id, "about", target)

    def pick_entity(self, subtype: str, avoid: list[str] | None = None) -> str | None:
        pool = self.pools.get(subtype) or []
        if not pool:
            return None
        for _ in range(4):
            node_id, _ = self.rng.choice(pool)
            if not avoid or node_id not in avoid:
                return node_id
        return node_id

    # ------------------------------------------------------------------ sentence parts

    def draw(self, key: str, fill: _Fill) -> str:
        r = self.rng
        if key in ENTITY_SLOTS:
            subtype = ENTITY_SLOTS[key]
            node_id = self.pick_entity(subtype, avoid=fill.entities)
            if node_id is None:  # tiny graphs: fall back to a bare name
                return self.entity_name(subtype)
            fill.entities.append(node_id)
            return self.name_of[node_id]
        if key in CHOICES:
            # A second slot of a kind ("period2") never repeats the first ("Bill X yearly, not yearly").
            taken = fill.get(key[:-1]) if key.endswith("2") else None
            return r.choice([c for c in CHOICES[key] if c != taken])
        if key == "past":
            fill.day = self.past_day()
            return long_date(fill.day)
        if key == "pdate":
            fill.plan_day = self.anchor + timedelta(days=r.randint(-90, 240))
            return long_date(fill.plan_day)
        if key == "pdate2":
            start = fill.plan_day or self.anchor
            fill.plan_until = start + timedelta(days=r.randint(3, 21))
            return long_date(fill.plan_until)
        if key == "future":
            return long_date(self.anchor + timedelta(days=r.randint(30, 540)))
        numbers: dict[str, Callable[[], Any]] = {
            "n": lambda: r.choice((50, 100, 120, 200, 250, 300, 500, 600, 1000, 1200, 5000)),
            "pct": lambda: r.randint(5, 80),
            "amount": lambda: f"{r.randint(6, 240) * 1000:,}",
            "minutes": lambda: r.randint(4, 180),
            "version": lambda: f"{r.randint(1, 9)}.{r.randint(0, 12)}",
            "years": lambda: r.choice(("one", "two", "three", "five")),
            "team": lambda: r.choice(TEAMS),
            "year": lambda: r.choice(("2026", "2027", "2028")),
        }
        if key in numbers:
            return str(numbers[key]())
        raise KeyError(f"Unknown template slot {key!r}.")

    # ------------------------------------------------------------------ memories

    def memory(
        self,
        node_type: str,
        subtype: str | None,
        template: str,
        *,
        scope: float | None = None,
        fill: _Fill | None = None,
        not_before: str | None = None,
    ) -> tuple[str, _Fill]:
        fill = fill if fill is not None else _Fill(self, self.past_day())
        content = template.format_map(fill)
        if node_type == "plan":
            # Plans are written down before their day comes.
            due = fill.plan_day or self.anchor
            created = self.moment(min(due, self.anchor) - timedelta(days=self.rng.randint(1, 60)))
        elif node_type == "event":
            created = self.moment(fill.day + timedelta(days=self.rng.randint(0, 3)))
        else:
            created = self.moment(fill.day)
        if not_before and created <= not_before:
            created = self.moment(self.anchor - timedelta(days=self.rng.randint(0, 20)))
            created = max(created, _later(not_before))
        node_id = self.next_id()
        self.builder.node(
            NewNode(
                node_type=node_type,
                content=content,
                subtype=subtype,
                salience=self.rng.choice((1.0, 1.0, 1.0, 1.0, 0.6, 1.4)),
                source="claude" if self.rng.random() < 0.15 else "user",
                scope=scope,
                valid_from=fill.plan_day.isoformat() if fill.plan_day else None,
                valid_until=fill.plan_until.isoformat() if fill.plan_until else None,
                id=node_id,
                created_at=created,
            ),
            about=fill.entities,
        )
        return node_id, fill

    def superseded_pair(self) -> None:
        node_type, subtype, template, scope = self.rng.choice(SUPERSEDABLE)
        old_id, fill = self.memory(node_type, subtype, template, scope=scope)
        old = next(n for n in reversed(self.builder.spec.nodes) if n.id == old_id)
        changed = next(k for k in CHANGEABLE if k in fill)
        kept = [e for e in fill.entities if self.name_of.get(e) != fill[changed]]
        new_fill = _Fill(self, fill.day)
        for _ in range(5):
            new_fill.clear()
            new_fill.update({k: v for k, v in fill.items() if k != changed})
            new_fill.entities = list(kept)
            if template.format_map(new_fill) != old.content:
                break
        new_id, _ = self.memory(
            node_type, subtype, template, scope=scope, fill=new_fill, not_before=old.created_at
        )
        new = self.builder.spec.nodes[-1]
        new.attributes = {"supersedes": old_id}
        self.builder.supersede(old_id, new_id)


def _later(stamp_text: str) -> str:
    """One minute after a `YYYY-MM-DD HH:MM:SS` timestamp."""
    moment = datetime.strptime(stamp_text, "%Y-%m-%d %H:%M:%S") + timedelta(minutes=1)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _split(total: int, shares: tuple[tuple[str, float], ...]) -> list[tuple[str, int]]:
    """Split `total` by `shares` (largest remainder), so the counts add up exactly."""
    raw = [(name, total * share) for name, share in shares]
    counts = {name: int(value) for name, value in raw}
    left = total - sum(counts.values())
    for name, _ in sorted(raw, key=lambda item: item[1] - int(item[1]), reverse=True)[:left]:
        counts[name] += 1
    return [(name, counts[name]) for name, _ in shares]


def noisy_large_graph(
    size: int = DEFAULT_SIZE, seed: int = DEFAULT_SEED, anchor: date = DEFAULT_ANCHOR
) -> GraphSpec:
    """The noisy-large profile as a `GraphSpec`: exactly `size` nodes, the small baseline among them.

    Raises:
        ValueError: `size` is smaller than the baseline it must contain.
    """
    minimum = baseline_count() + 20
    if size < minimum:
        raise ValueError(
            f"noisy-large needs at least {minimum} items to hold the baseline; got {size}."
        )
    builder = GraphBuilder()
    build_baseline(builder, anchor)
    gen = _Generator(seed, anchor, builder)
    generated = size - baseline_count()
    entities = max(10, round(generated * ENTITY_SHARE))
    gen.make_entities(entities)
    rng = gen.rng
    counts = dict(_split(generated - entities, MEMORY_SHARES))
    pairs, odd = divmod(counts.pop("superseded"), 2)
    counts["fact"] += odd
    kinds = [kind for kind, n in counts.items() for _ in range(n)] + ["superseded"] * pairs
    rng.shuffle(kinds)
    for kind in kinds:
        if kind == "fact":
            subtype, template = rng.choice(FACTS)
            gen.memory("fact", subtype, template)
        elif kind == "instruction":
            subtype, scope, template = rng.choice(INSTRUCTIONS)
            gen.memory("instruction", subtype, template, scope=scope)
        elif kind == "plan":
            subtype, template = rng.choice(PLANS)
            gen.memory("plan", subtype, template, scope=rng.choice((0.3, 0.3, 0.5, 0.2)))
        elif kind == "event":
            subtype, template = rng.choice(EVENTS)
            gen.memory("event", subtype, template)
        elif kind == "opinion":
            gen.memory("opinion", None, rng.choice(OPINIONS))
        else:
            gen.superseded_pair()
    return builder.spec
