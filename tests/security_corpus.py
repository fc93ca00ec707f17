"""Synthetic corpora for the security tests: fake credentials, injection attempts, benign look-alikes.

Every secret is generated here with a random body in the shape of a real credential format; none is a
real key. Each `Secret` carries the text a user would paste and the fragments that must never be found
on disk afterwards (the start and the end of its random body, so a partial leak is caught too).
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


@dataclass(frozen=True)
class Secret:
    fmt: str
    text: str
    """The secret as it would be pasted (label and all)."""
    body: str
    """Its random part."""

    @property
    def fragments(self) -> tuple[str, ...]:
        """What a scan looks for: the body's first and last 12 characters."""
        return (self.body[:12], self.body[-12:])


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    # Every generated body mixes classes, as real keys do, and is long enough to be unique.
    return "".join(rng.choice(alphabet) for _ in range(n))


def _password(rng: random.Random, n: int = 16) -> str:
    core = [rng.choice(LOWER), rng.choice(UPPER), rng.choice(DIGITS), rng.choice("!*^%")]
    core += [rng.choice(ALNUM) for _ in range(n - 4)]
    rng.shuffle(core)
    return "".join(core)


def _mixed(rng: random.Random, alphabet: str, n: int) -> str:
    """Random text guaranteed to hold upper, lower and digits (as a real key would)."""
    while True:
        value = _r(rng, alphabet, n)
        if (
            any(c.isupper() for c in value)
            and any(c.islower() for c in value)
            and sum(c.isdigit() for c in value) >= 2
        ):
            return value


Generator = Callable[[random.Random], Secret]


def _aws_id(rng: random.Random) -> Secret:
    body = "AKIA" + _r(rng, UPPER + DIGITS, 16)
    return Secret("aws-access-key-id", body, body)


def _aws_secret(rng: random.Random) -> Secret:
    body = _mixed(rng, B64, 40)
    return Secret("aws-secret-access-key", f"aws_secret_access_key = {body}", body)


def _azure_storage(rng: random.Random) -> Secret:
    body = _mixed(rng, B64, 86) + "=="
    text = (
        "DefaultEndpointsProtocol=https;AccountName=acmeprod;"
        f"AccountKey={body};EndpointSuffix=core.windows.net"
    )
    return Secret("azure-storage-account-key", text, body)


def _azure_sas(rng: random.Random) -> Secret:
    body = _mixed(rng, B64, 43) + "="
    text = (
        "Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManage;"
        f"SharedAccessKey={body}"
    )
    return Secret("azure-shared-access-key", text, body)


def _sendgrid(rng: random.Random) -> Secret:
    body = f"SG.{_mixed(rng, B64URL, 22)}.{_mixed(rng, B64URL, 43)}"
    return Secret("sendgrid", body, body)


def _twilio(rng: random.Random) -> Secret:
    body = "SK" + _r(rng, HEX, 32)
    return Secret("twilio-api-key", body, body)


def _twilio_token(rng: random.Random) -> Secret:
    body = _r(rng, HEX, 32)
    return Secret("twilio-auth-token", f"TWILIO_AUTH_TOKEN={body}", body)


def _sentry(rng: random.Random) -> Secret:
    body = _r(rng, HEX, 32)
    text = f"https://{body}@o{rng.randint(10000, 99999)}.ingest.sentry.io/{rng.randint(1000, 9999)}"
    return Secret("sentry-dsn", text, body)


def _basic(rng: random.Random) -> Secret:
    body = base64.b64encode(f"deploy:{_password(rng)}".encode()).decode()
    return Secret("authorization-basic", f"Authorization: Basic {body}", body)


def _bearer(rng: random.Random) -> Secret:
    body = _mixed(rng, ALNUM, 40)
    return Secret("authorization-bearer", f"Authorization: Bearer {body}", body)


def _redis(rng: random.Random) -> Secret:
    body = _password(rng, 20)
    return Secret("redis-url-password", f"redis://:{body}@cache.internal:6379/0", body)


def _postgres(rng: random.Random) -> Secret:
    body = _password(rng, 18)
    return Secret("postgres-url-password", f"postgresql://app:{body}@db.internal:5432/app", body)


def _slack_webhook(rng: random.Random) -> Secret:
    body = f"T{_r(rng, UPPER + DIGITS, 10)}/B{_r(rng, UPPER + DIGITS, 10)}/{_mixed(rng, ALNUM, 24)}"
    return Secret("slack-webhook", f"https://hooks.slack.com/services/{body}", body)


def _slack_bot(rng: random.Random) -> Secret:
    body = f"xoxb-{_r(rng, DIGITS, 12)}-{_r(rng, DIGITS, 13)}-{_mixed(rng, ALNUM, 24)}"
    return Secret("slack-bot-token", body, body)


def _pypi(rng: random.Random) -> Secret:
    body = "pypi-AgEIcHlwaS5vcmc" + _mixed(rng, B64URL, 60)
    return Secret("package-index-token", body, body)


def _db_password(rng: random.Random) -> Secret:
    body = _password(rng)
    return Secret("lowercase-db-password", f"db_password={body}", body)


def _password_bare(rng: random.Random) -> Secret:
    body = _password(rng, 14)
    return Secret("password-word", f"password {body}", body)


def _password_is(rng: random.Random) -> Secret:
    body = _password(rng, 14)
    return Secret("password-is", f"the admin password is {body}", body)


def _github(rng: random.Random) -> Secret:
    body = "ghp_" + _mixed(rng, ALNUM, 36)
    return Secret("github-pat", body, body)


def _gitlab(rng: random.Random) -> Secret:
    body = "glpat-" + _mixed(rng, ALNUM + "-_", 20)
    return Secret("gitlab-pat", body, body)


def _stripe(rng: random.Random) -> Secret:
    body = "sk_live_" + _mixed(rng, ALNUM, 24)
    return Secret("stripe-live-key", body, body)


def _openai(rng: random.Random) -> Secret:
    body = "sk-proj-" + _mixed(rng, B64URL, 48)
    return Secret("openai-project-key", body, body)


def _anthropic(rng: random.Random) -> Secret:
    body = "sk-ant-api03-" + _mixed(rng, B64URL, 80)
    return Secret("anthropic-key", body, body)


def _google(rng: random.Random) -> Secret:
    body = "AIza" + _mixed(rng, B64URL, 35)
    return Secret("google-api-key", body, body)


def _jwt(rng: random.Random) -> Secret:
    payload = base64.urlsafe_b64encode(f'{{"sub":"{_r(rng, DIGITS, 10)}"}}'.encode()).decode()
    body = f"eyJhbGciOiJIUzI1NiJ9.{payload.rstrip('=')}.{_mixed(rng, B64URL, 43)}"
    return Secret("jwt", body, body[-43:])


def _pem(rng: random.Random) -> Secret:
    lines = [_mixed(rng, B64, 64) for _ in range(4)]
    body = "\n".join(lines)
    text = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----"
    return Secret("pem-private-key", text, lines[1])


def _npm(rng: random.Random) -> Secret:
    body = "npm_" + _mixed(rng, ALNUM, 36)
    return Secret("npm-token", body, body)


def _hf(rng: random.Random) -> Secret:
    body = "hf_" + _mixed(rng, ALNUM, 34)
    return Secret("hugging-face-token", body, body)


def _mailgun(rng: random.Random) -> Secret:
    body = "key-" + _r(rng, HEX, 32)
    return Secret("mailgun-key", body, body)


def _digitalocean(rng: random.Random) -> Secret:
    body = "dop_v1_" + _r(rng, HEX, 64)
    return Secret("digitalocean-token", body, body)


def _telegram(rng: random.Random) -> Secret:
    body = f"{rng.randint(10**8, 10**9)}:AA{_mixed(rng, B64URL, 33)}"
    return Secret("telegram-bot-token", body, body)


def _discord(rng: random.Random) -> Secret:
    body = _mixed(rng, B64URL, 68)
    text = f"https://discord.com/api/webhooks/{_r(rng, DIGITS, 18)}/{body}"
    return Secret("discord-webhook", text, body)


def _client_secret_json(rng: random.Random) -> Secret:
    body = _mixed(rng, B64URL, 32)
    return Secret("json-client-secret", f'"client_secret": "{body}"', body)


def _high_entropy(rng: random.Random) -> Secret:
    body = _mixed(rng, B64URL, 40)
    return Secret("generic-high-entropy", f"signing value {body}", body)


def _env_generic(rng: random.Random) -> Secret:
    body = _mixed(rng, ALNUM, 24)
    return Secret("env-api-key", f"export PAYMENTS_API_KEY={body}", body)


GENERATORS: tuple[Generator, ...] = (
    _aws_id,
    _aws_secret,
    _azure_storage,
    _azure_sas,
    _sendgrid,
    _twilio,
    _twilio_token,
    _sentry,
    _basic,
    _bearer,
    _redis,
    _postgres,
    _slack_webhook,
    _slack_bot,
    _pypi,
    _db_password,
    _password_bare,
    _password_is,
    _github,
    _gitlab,
    _stripe,
    _openai,
    _anthropic,
    _google,
    _jwt,
    _pem,
    _npm,
    _hf,
    _mailgun,
    _digitalocean,
    _telegram,
    _discord,
    _client_secret_json,
    _high_entropy,
    _env_generic,
)

SENTENCES = (
    "The staging deploy for Acme uses {s}.",
    "Remember that the billing worker connects with {s}.",
    "For the nightly export we configured {s}.",
    "Our payments service in production reads {s}.",
    "Kevin set up the reporting job with {s}.",
)


def secrets(per_format: int = 6, seed: int = 15) -> list[Secret]:
    """`per_format` secrets of every format (35 formats), reproducible from `seed`."""
    rng = random.Random(seed)
    return [gen(rng) for gen in GENERATORS for _ in range(per_format)]


def messages(items: list[Secret], per_message: int = 3) -> list[str]:
    """Prompts that carry the secrets inside ordinary sentences, `per_message` to a prompt."""
    out = []
    for start in range(0, len(items), per_message):
        chunk = items[start : start + per_message]
        out.append(
            " ".join(
                SENTENCES[(start + i) % len(SENTENCES)].format(s=item.text)
                for i, item in enumerate(chunk)
            )
        )
    return out
