"""What a prompt or a rule is about, as a spread over everyday software-work topics.

A rule governs an activity ("always run the tests before deploying" governs deploying), and a prompt
that does that activity ("ship the API to staging") needs the rule though the two share no word. Both
are placed on the same short list of activities by their sentence vectors' similarity to a description
of each; the relevance model reads how much the two spreads overlap.
"""

from __future__ import annotations

from typing import Final

import numpy as np

TOPICS: Final[dict[str, str]] = {
    "deploy": "deploy, ship, release, push to production or staging, go live, rollout, publish a build",
    "tests": "run the tests, unit tests, test suite, CI checks, coverage, failing specs, pytest, jest",
    "git": "git commits, commit messages, branches, pull requests, merge, rebase, code review, PR",
    "database": "database schema, migrations, SQL queries, tables, columns, Postgres, indexes, seeds",
    "dependencies": "install packages, add a dependency, npm, pnpm, pip, library versions, lockfile",
    "style": "code style, formatting, linting, naming conventions, lint rules, prettier, ruff",
    "dates": "dates and times, timestamps, time zones, date formats, calendars, scheduling",
    "money": "prices, amounts, currency, billing, payments, invoices, cents, totals, tax",
    "security": "secrets, API keys, passwords, credentials, tokens, auth, permissions, PII, privacy",
    "logging": "logging, debug output, log statements, monitoring, alerts, metrics, tracing",
    "errors": "errors, exceptions, stack traces, crashes, bugs, debugging a failure",
    "api": "HTTP API endpoints, REST routes, request and response, handlers, webhooks, GraphQL",
    "frontend": "UI components, CSS, styling, layout, buttons, pages, React, Vue, front end",
    "infra": "servers, hosting, Docker, Kubernetes, cloud, environments, ports, DNS, infrastructure",
    "config": "configuration, environment variables, settings, .env files, feature flags",
    "docs": "documentation, README, changelog, comments, docstrings, guides, wiki",
    "performance": "performance, speed, slow code, caching, optimisation, memory use, latency",
    "data": "data pipelines, ETL, datasets, files, CSV exports, reports, analytics",
    "people": "who owns what, team members, who to ask, reviewers, responsibilities, accounts",
    "planning": "plans, deadlines, roadmap, milestones, launches, what is left to do, status",
    "files": "project structure, folders, where files live, modules, directories, paths",
    "tooling": "editor, terminal, shell, CLI commands, scripts, dev server, local setup, tools",
    "communication": "how to answer, response style, explanations, asking questions, confirmations",
    "ml": "machine learning models, training, prompts, LLM, embeddings, evaluation",
    "mobile": "mobile app, iOS, Android, app store builds, devices, React Native",
}
TEMPERATURE: Final = 0.05


def topic_spread(vectors: np.ndarray, topic_vectors: np.ndarray) -> np.ndarray:
    """Each row's spread over the topics (rows sum to 1): a softmax of its similarities."""
    z = (np.atleast_2d(vectors) @ topic_vectors.T) / TEMPERATURE
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)
