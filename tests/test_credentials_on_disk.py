"""Credentials in the shapes people type them never reach a file under OCTYBOT_HOME.

A user and password pair in a sentence ("login is admin / Hunter2x!"), `user:password` (also in a
URL), password flags and variables (`mysql -pX`, `--password X`, `PGPASSWORD=X`, `sshpass -p X`) and
"the password is X" go through `octygraph run`, the prompt hook, `memory add` and `memory import`;
then every file under the home folder (databases and their WAL files read as bytes, traces,
checkpoints, the manifest, exports) is searched for each password, and the rest of each sentence
must still be stored. Look-alikes that hold no password (`docker run -p 8080:80`) are left alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import pytest

from octygraph.config.settings import Settings
from octygraph.safety.secrets import is_secret_name, redact_secrets
from octygraph.session import hooks
from octygraph.store import MemoryStore
from tests.security_corpus import Secret
from tests.test_security import cli, leaks, prompt_payload, stop_payload


class Shape(NamedTuple):
    name: str
    text: str
    secret: str
    kept: str
    """What must stay of the sentence once the password is gone."""


SHAPES = (
    Shape(
        "slash-pair",
        "The staging login for Acme Billing is admin / Hunter2xQ!",
        "Hunter2xQ",
        "login for Acme Billing is admin / [REDACTED]",
    ),
    Shape(
        "slash-pair-word",
        "Our creds for the Acme Billing staging box: deploy / marmalade",
        "marmalade",
        "Acme Billing staging box: deploy / [REDACTED]",
    ),
    Shape(
        "colon-pair",
        "Acme Billing staging uses root:Tr0ub4dorZ&3 for the database.",
        "Tr0ub4dorZ",
        "uses root:[REDACTED] for the database",
    ),
    Shape(
        "colon-pair-at-host",
        "The Acme Billing bastion is reached as deploy:Xc4vB7nM1q@bastion.acme.io daily.",
        "Xc4vB7nM1q",
        "deploy:[REDACTED]@bastion.acme.io",
    ),
    Shape(
        "url-pair",
        "Acme Billing clones from https://deploy:Gx7pLm2Qw9@git.acme.io/billing.git",
        "Gx7pLm2Qw9",
        "https://deploy:[REDACTED]@git.acme.io/billing.git",
    ),
    Shape(
        "mysql-p-spaced",
        "For Acme Billing we connect with mysql -u root -p Wq8zRt5Ym2 billing",
        "Wq8zRt5Ym2",
        "mysql -u root -p [REDACTED] billing",
    ),
    Shape(
        "mysql-p-attached",
        "For Acme Billing we connect with mysql -u root -pKp4vN8xQ2z billing",
        "Kp4vN8xQ2z",
        "mysql -u root -p[REDACTED] billing",
    ),
    Shape(
        "mysql-p-quoted",
        "The Acme Billing dump runs mysqldump -u root -p'Secret Pass9' billing",
        "Secret Pass9",
        "mysqldump -u root -p'[REDACTED]' billing",
    ),
    Shape(
        "password-flag",
        "Acme Billing backups run psql --password tangerine -h db.acme.io",
        "tangerine",
        "psql --password [REDACTED] -h db.acme.io",
    ),
    Shape(
        "password-flag-equals",
        "Acme Billing backups run pg_dump --password=Lm3kP9qW2x -h db.acme.io",
        "Lm3kP9qW2x",
        "pg_dump --password=[REDACTED] -h db.acme.io",
    ),
    Shape(
        "pgpassword",
        "The Acme Billing cron runs PGPASSWORD=Vb5nM2zX8q psql -h db.acme.io",
        "Vb5nM2zX8q",
        "PGPASSWORD=[REDACTED] psql -h db.acme.io",
    ),
    Shape(
        "mysql-pwd",
        "The Acme Billing cron runs MYSQL_PWD=Hy7uJ3kL9o mysql -u root",
        "Hy7uJ3kL9o",
        "MYSQL_PWD=[REDACTED] mysql -u root",
    ),
    Shape(
        "sshpass",
        "We reach the Acme Billing bastion with sshpass -p persimmon ssh deploy@bastion.acme.io",
        "persimmon",
        "sshpass -p [REDACTED] ssh deploy@bastion.acme.io",
    ),
    Shape(
        "password-is",
        "The Acme Billing admin password is Qa2wS4eD6r",
        "Qa2wS4eD6r",
        "Acme Billing admin password is [REDACTED]",
    ),
    Shape(
        "password-colon",
        "Acme Billing admin password: Zx9cV7bN5m",
        "Zx9cV7bN5m",
        "Acme Billing admin password: [REDACTED]",
    ),
)

LOOK_ALIKES = (
    "docker run -p 8080:80 nginx",
    "ssh -p 2222 deploy@bastion.acme.io",
    "python -m pytest -p no:cacheprovider",
    "The login form has user/password fields.",
    "user/password fields in the login form",
    "mysql -u root -p billing < dump.sql",
    "docker login -u bot --password-stdin",
    "The login service runs on node:18-alpine and postgres:16.",
    "Run uvicorn app.main:app on localhost:8080 at 10:30.",
    "Account settings: profile / security",
    "Our users are alice / bob and carol.",
    "git clone git@github.com:acme/billing.git",
    "Use input/output and/or src/main.",
    "PASSWORD_REQUIRED=true and password=${DB_PASSWORD}",
    "The password is stored in 1Password.",
)


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_each_shape_loses_its_password_and_keeps_the_rest(shape: Shape) -> None:
    clean, count = redact_secrets(shape.text)
    assert shape.secret not in clean and count == 1
    assert shape.kept in clean


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_are_left_alone(text: str) -> None:
    assert redact_secrets(text) == (text, 0)


def test_a_password_is_never_an_entity_name() -> None:
    assert is_secret_name("Hunter2xQ!") and is_secret_name("Tr0ub4dorZ&3")
    assert not any(is_secret_name(n) for n in ("Yahoo!", "AT&T", "C++", "Windows11", "Node.js 18+"))


def _stored_nodes(settings: Settings) -> list[object]:
    from octygraph.embeddings import local_embeddings

    with MemoryStore.open(settings.paths.db, local_embeddings()) as store:
        return list(store.iter_all())


def _import_file(path: Path) -> Path:
    lines: list[dict[str, object]] = [{"kind": "octygraph-export", "version": 1}]
    for i, shape in enumerate(SHAPES):
        lines.append({"kind": "node", "id": f"cred-f{i}", "type": "fact", "content": shape.text})
        lines.append(
            {"kind": "node", "id": f"cred-e{i}", "type": "entity", "content": shape.secret}
        )
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("path_name", ["run", "prompt-hook", "stop-hook", "memory-add", "import"])
def test_no_credential_shape_reaches_disk(
    path_name: str, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OCTY_HOOK_BUDGET_S", "60")
    if path_name == "run":
        for shape in SHAPES:
            cli("run", shape.text, "--offline", "--json")
    elif path_name == "prompt-hook":
        for i, shape in enumerate(SHAPES):
            hooks.answer("prompt", prompt_payload(shape.text, Path.cwd(), f"c{i % 2}"))
    elif path_name == "stop-hook":
        for i, shape in enumerate(SHAPES):
            reply = f"I set up the nightly job. {shape.text} I also updated the README."
            hooks.answer("stop", stop_payload(reply, Path.cwd(), f"c{i % 2}"))
    elif path_name == "memory-add":
        for shape in SHAPES:
            # The password offered as an entity too: it must not become one.
            cli("memory", "add", shape.text, "--entity", shape.secret, "--entity", "Acme Billing")
    else:
        cli("memory", "import", str(_import_file(tmp_path / "in.jsonl")))
    out = home / "exports"
    out.mkdir(parents=True, exist_ok=True)
    cli("memory", "export", "--format", "jsonl", "--output", str(out / "all.jsonl"))
    cli("memory", "export", "--format", "markdown", "--output", str(out / "all.md"))

    items = [Secret(s.name, s.text, s.secret) for s in SHAPES]
    assert leaks(home, items) == []
    settings = Settings.from_env()
    nodes = _stored_nodes(settings)
    contents = [n.content for n in nodes if n.node_type != "entity"]  # type: ignore[attr-defined]
    entities = [n.content for n in nodes if n.node_type == "entity"]  # type: ignore[attr-defined]
    assert not [e for e in entities if "REDACTED" in e or any(s.secret in e for s in SHAPES)]
    kept = [s.name for s in SHAPES if any(s.kept in c for c in contents)]
    if path_name in ("memory-add", "import"):
        assert kept == [s.name for s in SHAPES]  # stored as given, less the password
    elif path_name == "stop-hook":
        pass  # the Stop hook stores what the assistant did, not the settings it mentions
    else:
        # The pipeline's storage gate may pass over a command line; what it stores keeps the rest.
        assert len(kept) >= 8, contents
        assert list(settings.paths.debug_dir.glob("*.json")) and settings.paths.checkpoints.exists()


def test_a_spooled_hook_request_holds_no_key(tmp_path: Path) -> None:
    """A Stop hook no service took waits in the spool: its environment's keys are not written."""
    from octygraph.service import client, server
    from octygraph.service.protocol import ServicePaths

    keys = {
        "OPENROUTER_API_KEY": "sk-or-v1-" + "Q7x" * 16,
        "OCTY_DATABASE_URL": "postgresql://app:Zr6tQ1mW8pK@db.acme.io/app",
        "LANGSMITH_API_KEY": "lsv2_pt_" + "9Kq" * 12,
    }
    raw = json.dumps({"hook_event_name": "Stop", "last_assistant_message": "Done."}).encode()
    env = {"OCTYBOT_HOME": str(tmp_path), "ANTHROPIC_BASE_URL": "http://b", **keys}
    assert client.spool(tmp_path, client.hook_request("stop", raw, env, 0.0)) is not None
    [spooled] = ServicePaths(tmp_path).spool_dir.glob("*.json")
    data = spooled.read_bytes()
    assert not [name for name, value in keys.items() if value.encode() in data]
    message = json.loads(data)
    assert message["secrets_left_out"] == sorted(keys)
    # The service, started with the client's environment, puts its own values back.
    server.with_own_secrets(message, {**keys, "VOYAGE_API_KEY": "not asked for"})
    assert message["env"]["OPENROUTER_API_KEY"] == keys["OPENROUTER_API_KEY"]
    assert "VOYAGE_API_KEY" not in message["env"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password: secret", "password: [REDACTED]"),
        ("PGPASSWORD=secret psql", "PGPASSWORD=[REDACTED] psql"),
        ("sshpass -p secret ssh deploy@bastion", "sshpass -p [REDACTED] ssh deploy@bastion"),
        ("psql --password secret", "psql --password [REDACTED]"),
        ('the password is "secret"', "the password is [REDACTED]"),
        # "secret" as a word, and where a password is kept, stay.
        ("the password is secret", "the password is secret"),
        ("password: stored in the vault", "password: stored in the vault"),
        ("password: none", "password: none"),
    ],
)
def test_the_word_secret_as_a_value(text: str, expected: str) -> None:
    assert redact_secrets(text)[0] == expected


def test_an_export_redacts_memories_stored_before_redaction_knew_their_shape(
    home: Path, tmp_path: Path
) -> None:
    """A memory written by an older octygraph may still hold a password: exports leave it out."""
    from octygraph.embeddings import local_embeddings

    settings = Settings.from_env()
    settings.paths.ensure()
    with MemoryStore.open(settings.paths.db, local_embeddings()) as store:
        store.add_node("fact", SHAPES[0].text, attributes={"note": SHAPES[2].text})
    for fmt in ("jsonl", "markdown"):
        out = tmp_path / f"all.{fmt}"
        cli("memory", "export", "--format", fmt, "--output", str(out))
        text = out.read_text(encoding="utf-8")
        assert SHAPES[0].secret not in text and SHAPES[2].secret not in text
        assert SHAPES[0].kept in text
