"""Secret redaction: a catalogue of credential formats, labelled values and high-entropy tokens.

Everything octygraph writes to disk (memories, traces, checkpoints, the manifest, exports, logs) passes
through `redact_secrets` first, so a key pasted into a prompt never lands in a file. The catalogue follows
the usual secret-scanner rule sets: provider tokens with a recognisable prefix, secrets after a label
(`password: x`, `AccountKey=x`, `db_password=x`), passwords in URLs, and long random-looking tokens.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, Final

from octygraph.safety import secret_tokens
from octygraph.text.utf8 import valid_text

REDACTED: Final = secret_tokens.REDACTED
"""What a secret becomes; defined beside the learned model, which writes it too."""

# Whole-match secrets: provider keys and tokens with a recognisable shape.
_TOKEN_PATTERNS: Final[tuple[str, ...]] = (
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    r"\bsk-or-[A-Za-z0-9_-]{16,}",  # OpenRouter
    r"\bsk-(?:ant-|proj-|svcacct-|live-)?[A-Za-z0-9_-]{20,}",  # OpenAI, Anthropic
    r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe (pk_ keys are publishable)
    r"\bwhsec_[A-Za-z0-9+/=]{24,}",  # Stripe webhook secret
    r"\bpa-[A-Za-z0-9_-]{20,}",  # Voyage
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub
    r"\bgithub_pat_[A-Za-z0-9_]{30,}",
    r"\bgl(?:pat|dt|ptt|rt|cbt|imt|agent|oas|ft|soat)-[A-Za-z0-9_-]{20,}",  # GitLab
    r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[0-9A-Z]{16}\b",  # AWS ids
    r"\bxox[abposre]-[A-Za-z0-9-]{10,}",  # Slack tokens
    r"\bxapp-\d-[A-Za-z0-9-]{10,}",  # Slack app-level token
    r"\bAIza[0-9A-Za-z_-]{35}\b",  # Google API key
    r"\bya29\.[0-9A-Za-z_-]{20,}",  # Google OAuth access token
    r"\bGOCSPX-[A-Za-z0-9_-]{20,}",  # Google OAuth client secret
    r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"\bnpm_[A-Za-z0-9]{30,}",
    r"\bdckr_pat_[A-Za-z0-9_-]{20,}",  # Docker Hub
    r"\bpypi-[A-Za-z0-9_-]{40,}",  # package index upload token
    r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",  # SendGrid
    r"\b(?:AC|SK)[0-9a-fA-F]{32}\b",  # Twilio account SID / API key
    r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b",  # Shopify
    r"\bdo[opr]_v1_[a-f0-9]{64}\b",  # DigitalOcean
    r"\bkey-[0-9a-f]{32}\b",  # Mailgun
    r"\b[0-9a-f]{32}-us\d{1,2}\b",  # Mailchimp
    r"\bsq0(?:atp|csp)-[0-9A-Za-z_-]{22,}",  # Square
    r"\bdapi[a-f0-9]{32}(?:-\d)?\b",  # Databricks
    r"\blin_(?:api|oauth)_[A-Za-z0-9]{32,}",  # Linear
    r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b",  # Postman
    r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}",  # Doppler
    r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}",  # Vault
    r"\bpul-[a-f0-9]{40}\b",  # Pulumi
    r"\bdt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}\b",  # Dynatrace
    r"\bNRAK-[A-Z0-9]{27}\b",  # New Relic
    r"\bgl(?:c|sa)_[A-Za-z0-9+/=_-]{32,}",  # Grafana
    r"\bsbp_[a-f0-9]{40}\b",  # Supabase
    r"\btskey-[a-z]+-[A-Za-z0-9-]{16,}",  # Tailscale
    r"\bLTAI[A-Za-z0-9]{20}\b",  # Alibaba Cloud
    r"\bFlyV1 [A-Za-z0-9+/=_,-]{20,}",  # Fly.io
    r"\bfo1_[A-Za-z0-9_-]{40,}",
    r"\blsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}\b",  # LangSmith
    r"\bpat[A-Za-z0-9]{14}\.[0-9a-f]{64}\b",  # Airtable
    r"\bAAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,}",  # Firebase Cloud Messaging server key
    r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b",  # age
    r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b",  # Telegram bot token
    r"\b[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}",  # Azure AD client secret
    r"\bbku[ab]_[a-f0-9]{40}\b",  # Buildkite
    r"\bsk\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",  # Mapbox secret token (pk. is public)
    r"\bsntry[su]_[A-Za-z0-9+/=_]{40,}",  # Sentry org and user auth tokens
    r"\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}",  # Discord bot token
    r"\b(?:APP_USR|TEST)-\d{10,20}-\d{6}-[0-9a-f]{32}-\d{5,12}\b",  # Mercado Pago
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:fx\b",  # DeepL
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # JWT
    r"\bhttps://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+",
    r"\bhttps://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]+",
    r"\bhttps://[a-z0-9-]+\.webhook\.office\.com/[A-Za-z0-9/@_-]+",
    # Any other "prefix_" token (Doppler dp_, ...): 24+ characters mixing upper and lower case
    # letters and digits, which snake_case identifiers do not.
    r"\b(?!(?:ch|cus|pi|pm|in|sub|evt|txn|re|po|prod|price|acct|seti|src|card|ba|py|tr|si|ii|il|cs"
    r"|ord|inv|cust|pay|pk|phc)_)[a-z]{2,10}_(?=[A-Za-z0-9_]*\d)(?=[A-Za-z0-9_]*[A-Z])(?=[A-Za-z0-9_]*[a-z])"
    r"[A-Za-z0-9_]{24,}",
)
_TOKENS: Final = re.compile("|".join(f"(?:{p})" for p in _TOKEN_PATTERNS), re.DOTALL)

# Secrets after a label: the label stays, the value goes.
_AUTH_HEADER: Final = re.compile(
    r"(?i)\b((?:proxy-)?authorization\s*[:=]\s*[\"']?(?:basic|bearer|token|digest|negotiate|apikey"
    # a vendor's own scheme word before its token: `Authorization: Splunk <token>`
    r"|(?-i:[A-Z])[\w-]{1,24}(?=[ \t]+(?=[^\s\"',;]*\d)[^\s\"',;]{8,}))?"
    r"\s*)(?![\w.]*\()([^\s\"',;]{6,})"
)
_BEARER: Final = re.compile(
    r"(?i)\b((?:bearer|basic)\s+)(?=[A-Za-z._~-]*[0-9+/=])([A-Za-z0-9._~+/=-]{12,})"
)
# `scheme://user:password@host`, also with an empty user (`redis://:password@host`) or a scheme
# that lost its colon (`mysql+pymysql//user:password@host`, in an error about that URL).
_URL_PASSWORD: Final = re.compile(r"(\b[a-z][a-z0-9+.-]*:?//[^:/\s@]*:)([^@\s/]+)(@)")
_DOC_PLACEHOLDER: Final = re.compile(r"(\w)\1{7,}$|EXAMPLE(?:KEY)?$")
"""`sk_test_xxxxxxxxxxxxxxxx`, AWS's `AKIAIOSFODNN7EXAMPLE`: documented placeholders, not keys."""
_URL_PLACEHOLDERS: Final = frozenset({"password", "pass", "passwd", "pwd", "pw", "secret"})
"""`postgres://user:password@localhost/app` in a template names the field, not a value."""
# `scheme://token@host` (Sentry DSNs and the like): a long random user name is a key.
_URL_TOKEN_USER: Final = re.compile(r"(\b[a-z][a-z0-9+.-]*://)([A-Za-z0-9_-]{16,})(@)")
_ENV_ASSIGN: Final = re.compile(
    r"\b([A-Z][A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|CREDENTIALS?|DSN|AUTH|MNEMONIC"
    r"|SEED|SEED_PHRASE|PASSPHRASE|SALT|PASS)(?:\s*[=:]\s*|\s+(?=\"))|#define\s+[A-Z][A-Z0-9_]*"
    r"(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|PASS)\s+)"
    r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s'\"]+)"
)
# `db_password=x`, `AccountKey=x;`, `client-secret: x`, `"api_key": "x"`: any case, any separator.
# After a label that always names a secret any value goes; after a weaker one (`sort_key=`,
# `auth=`) only a value that looks like a key.
_STRONG_LABEL: Final = (
    r"[\w.-]*(?:password|passwd|passphrase|pwd|psk|secret|token|credentials?|api[_-]?key|access[_-]?key|"
    r"private[_-]?key|account[_-]?key|shared[_-]?access[_-]?key|client[_-]?secret)"
)
_WEAK_LABEL: Final = r"[\w.-]*(?:key|auth|sig|signature|pass|dsn)"
# A bare value runs through `&` unless a query parameter follows (`?token=x&page=2`): `pa&ss1` is one value.
_ASSIGN_VALUE: Final = (
    r"[\"']?\s*(?:=|:(?!:)|=>)\s*)(\"[^\"\n]*\"|'[^'\n]*'|(?:[^\s'\";,&]|&(?![\w.-]+=))+)"
)
_KEY_ASSIGN: Final = re.compile(rf"(?i)(\b{_STRONG_LABEL}{_ASSIGN_VALUE}")
# `"private_key_id": "x"`, `client_secret_value=x`: a strong label with a suffix holds a secret
# when its value looks like one (`token_count: 5`, `token_type: bearer` do not).
_SUFFIXED_ASSIGN: Final = re.compile(rf"(?i)(\b{_STRONG_LABEL}[\w.-]+{_ASSIGN_VALUE}")
# ... but not one that names something about the secret (`TOKENIZER_SHA256`, `SECRET_NAMES`).
_METADATA_SUFFIX: Final = re.compile(
    r"(?i)(?:names?|paths?|relpath|files?|dir|urls?|sha\d*|hash|digest|checksum|types?|count|len"
    r"|length|size|env|var|field|header|prefix|suffix|hint|encryption|algorithm|algo|policy|scheme"
    r"|method|timeout|ttl|expiry|lifetime|rounds|iterations|cost|min|max|minimum|maximum|complexity"
    r"|strength|format|mode|enabled|required|hashers?|validators?|backends?|options|classes|handlers?)"
    r"[\"']?\s*(?:=|:|=>)\s*\[?\s*$"
)
_ARN_BEFORE: Final = re.compile(r"\barn:[^\s\"']*$")
"""`arn:aws:secretsmanager:...:secret:prod/db`: inside an ARN, `secret:` names a secret, it holds none."""
_CODE_VALUE: Final = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[\w.-]+/[\w./-]+\.\w+")
"""`table.SECRET_NAMES`, `embeddings/data/tokenizer.json`: a name or a file, not a value."""
_WEAK_ASSIGN: Final = re.compile(rf"(?i)(\b{_WEAK_LABEL}{_ASSIGN_VALUE}")
_LABELLED: Final = re.compile(
    r"(?i)\b((?:pass(?:word|phrase|wd|code)?|pasword|passwrd|pswd|pwd|pw|secret|api[ _-]?key|access[ _-]?(?:token|key)|"
    r"auth[ _-]?token|private[ _-]?key|secret[ _-]?key|token)"
    r"(?:\s+(?:for|of|on|in|to)\s+(?:the\s+)?[\w.-]+(?:\s+[\w.-]+){0,2}){0,2}"
    r"\s*(?:=|:(?!:)|\bis\b|\bwas\b)\s*)(\"[^\"]+\"|'[^']+'|\S+)"
)
# "password hunter2": a label then, with no separator, a value that is plainly not a word.
_BARE_LABEL: Final = re.compile(
    r"(?i)\b((?:password|passwd|passphrase|passcode|pwd|api[ _-]?key|secret|token"
    r"|psk|community\s+string|(?:wpa[23]?(?:-psk)?|wi-?fi|wlan)\s+(?:key|passphrase))\s+)"
    r"[\"']?(?=[^\s\"']*[\d!@#$%^&*+=~?]|(?i:(?<=phrase\s)|(?<=psk\s))[a-z]{14,}\b)"
    r"(?![\d.,:]+(?:\s|$)|\()([^\s\"',;]{6,})"
)
# "The password is stored in the vault" names no secret: these words are not values.
_NOT_A_VALUE: Final = frozenset(
    """stored kept saved set in on at the a an not missing wrong correct incorrect expired changed
    reset same different empty too very managed rotated located required needed available
    somewhere here there shared secret private public valid invalid weak strong long short
    provided attached below above listed pinned now still also only true false none null yes no
    1password lastpass bitwarden keepass keepassxc dashlane keychain vault""".split()
)
# Password flags, where the command makes `-p` a password rather than a port or a plugin
# (`docker run -p 8080:80`, `pytest -p no:cacheprovider`, `ssh -p 2222` keep theirs).
_CMD_END: Final = r"[^\n|;&]{0,200}?\s"
_MYSQL: Final = r"\b(?:mysql\w*|mariadb[\w-]*)\b"
_MYSQL_COMMAND: Final = re.compile(_MYSQL)
_FLAG_VALUE: Final = r"(?=[^\s-])(\"[^\"\n]*\"|'[^'\n]*'|\S+)"
# `mysql -psecret`, `7z a -psecret`, `unrar x -psecret`: a password attached to its flag.
_FLAG_ATTACHED: Final = re.compile(
    rf"((?:{_MYSQL}|\b(?:7z[ar]?|unrar|rar)\b){_CMD_END}-p){_FLAG_VALUE}"
)
_FLAG_SPACED: Final = re.compile(
    rf"(\b(?:sshpass|mongo\w*|rabbitmqadmin|(?:docker|podman|buildah|skopeo|nerdctl)\s+login)\b"
    rf"{_CMD_END}-p\s+"
    rf"|\b(?:plink|pscp|psftp)\b{_CMD_END}-pw\s+|\bredis-cli\b{_CMD_END}-a\s+"
    rf"|\b(?:keytool|jarsigner)\b{_CMD_END}-(?:src|dest)?(?:store|key)pass(?::(?!env\b|file\b)\w+)?\s+"
    rf"|\bunlock-keychain\b{_CMD_END}-p\s+|\bbundle\s+config\s+(?:--\w+\s+)*[\w-]+(?:\.[\w-]+)+\s+"
    rf"|\bsnmp\w*\b{_CMD_END}-c\s+|--community(?:\s+|=)"  # an SNMP community string
    rf"|\bldap\w+\b{_CMD_END}-w\s+"  # an LDAP bind password
    rf"|--pass(?:word|wd|phrase)?(?:\s+|=)){_FLAG_VALUE}"
)
# `echo 'x' | docker login -u me --password-stdin`: what is echoed into a password prompt. Each
# pattern here starts a line, so a long line is read once, not once per word.
_STDIN_PASSWORD: Final = re.compile(
    r"(?m)(^[ \t]*(?:\$[ \t]+)?(?:echo|printf)[ \t]+(?:-n[ \t]+)?)(\"[^\"\n]*\"|'[^'\n]*'|[^\s|]+)"
    r"(?=[ \t]*\|[^\n]*--password-stdin)"
)
# An expect script answering a password prompt: `expect "Enter passphrase"` then `send "x\r"`.
_EXPECT_SEND: Final = re.compile(
    r"(?m)(^[ \t]*expect[ \t]+(?P<prompt>[^\n]*)\n[ \t]*send[ \t]+(?:--[ \t]+)?[\"'{])"
    r"(?P<value>[^\"'}\n]+?)(?=(?:\\r|\\n)?[\"'}])"
)
_SECRET_PROMPT: Final = re.compile(r"(?i)pass(?:word|phrase)?|\bpin\b|token|secret")
# A command that prints a secret, then its output alone on the next line: `cat config/master.key`,
# `kubectl get secret x -o jsonpath=... | base64 -d`, `pass show db`, `op read op://...`.
_LINE_THEN_TOKEN: Final = re.compile(r"(?m)^([^\n]*\n[ \t]*)(\S{8,})[ \t]*$")
_PRINTS_SECRET: Final = re.compile(
    r"(?i)[ \t]*(?:\$[ \t]+)?(?:cat[ \t][^\n]*(?:\.key|secret|token|passw)|(?:go)?pass[ \t]+show\b"
    r"|op[ \t]+read\b|vault[ \t]+(?:kv[ \t]+get|read)[ \t]+-field|security[ \t]+find-(?:generic|internet)-password\b)"
)
# `snyk auth 3f2a...`, `ngrok authtoken 2Ab...`: a token handed to a tool's auth or login command
# (a host, as in `docker login registry.example.com`, has dots and is not one).
_CLI_AUTH: Final = re.compile(
    r"(?m)^([ \t]*(?:\$[ \t]+)?[\w.-]+[ \t]+(?:auth|authtoken|login|auth[ \t]+login)"
    r"(?:[ \t]+--(?:token|auth-?token|api-?key)(?:[ \t]+|=))?[ \t]+)(?=[A-Za-z0-9_-]*\d)([A-Za-z0-9_-]{20,})\b(?!\.)"
)
# Hardhat's and Foundry's `accounts: ["0x<64 hex>"]`: the keys that sign for the network.
_WALLET_KEYS: Final = re.compile(r"(?i)(\baccounts\s*:\s*\[\s*[\"'])(0x[0-9a-f]{64})\b")
# "seed phrase, keep it offline:" then the 12 to 24 words on the next line.
_SEED_WORDS: Final = re.compile(
    r"(?im)^(?=[^\n]*\b(?:seed|recovery|mnemonic|secret)\b)([^\n]*\n[ \t]*)"
    r"((?:[a-z]{3,8}[ \t]+){11,23}[a-z]{3,8})[ \t]*$"
)
# "metamask seed for the test wallet (careful): orbit velvet ... eager": the words after the label.
_SEED_AFTER_LABEL: Final = re.compile(
    r"(?im)(\b(?:seed|mnemonic|recovery\s+phrase|secret\s+phrase)\b[^\n:]{0,120}:[ \t]*)"
    r"((?:[a-z]{3,8}[ \t]+){11,23}[a-z]{3,8})[ \t]*$"
)
SEED_LENGTHS: Final = frozenset({12, 15, 18, 21, 24})
_BASE64_DECODE: Final = re.compile(r"\|[ \t]*base64[ \t]+(?:-d|-D|--decode)\b")
# A chat transcript where someone answers a question about a password with the password alone:
# "Me: the router page wants a password" ... "Alex: Pelican_4410". A chat line is an optional time
# (`[10:43]`), a name (`Alex`, `Alex K.`, `bob`; not a log label such as `ERROR:` or `Status:`) and a
# colon, and the same chat's lines just before mention the password.
_SPEAKER: Final = (
    r"[ \t]*(?:\[\d{1,2}:\d{2}(?::\d{2})?\][ \t]*)?"
    r"(?P<speaker>[A-Za-z][a-z]+(?:[._-]?[a-z0-9]+)?(?:[ \t][A-Z][a-z]*\.?)?):[ \t]+"
)
_CHAT_REPLY: Final = re.compile(
    rf"(?m)^({_SPEAKER}(?:(?:try|use|it'?s)[ \t]+)?)(\S{{6,64}})[ \t]*$"
)
_CHAT_LINE: Final = re.compile(_SPEAKER)
_NAMES_PASSWORD: Final = re.compile(r"(?i)pass(?:word|phrase|code)|\b(?:pin|pw|pwd|pass)\b")
_ASKS_FOR_SECRET: Final = re.compile(
    rf"{_NAMES_PASSWORD.pattern}|credentials|\bwi-?fi key|\blog-?\s?in\b|\bsign-?\s?in\b|\badmin\b"
)
_LABEL_WORDS: Final = frozenset(
    """status error warning warn fatal trace note hint info debug detail details version host port
    path type user name date time result output input response request reason cause message code key
    value level""".split()
)
CHAT_LOOKBACK_LINES: Final = 4


def _chat_reply_secret(match: re.Match[str]) -> bool:
    """Whether a chat line that is one word answers, in the lines just before it, a question about
    a password (see `_CHAT_REPLY`)."""
    word = match.group(3).rstrip(".,!?")
    if match["speaker"].lower() in _LABEL_WORDS or _VERSION.fullmatch(word) or _plain_value(word):
        return False
    mixed = any(c.isdigit() for c in word) and any(c.isalpha() for c in word)
    if not mixed and not any(c in "!@#$%^&*+=~_" for c in word[1:-1]):
        return False  # a word ("awesome", "really?!"), not a password
    before = _lines_before(match.string, match.start()).splitlines()
    chat = [line for line in before if _CHAT_LINE.match(line)]
    return len(chat) == len(before) > 0 and any(_ASKS_FOR_SECRET.search(line) for line in chat)


def _lines_before(text: str, pos: int, lines: int = CHAT_LOOKBACK_LINES) -> str:
    """The `lines` whole lines before the one `pos` stands on."""
    start = pos
    for _ in range(lines):
        if start <= 0:
            break
        start = text.rfind("\n", 0, start - 1) + 1
    return text[start:pos]


ITS_LOOKBACK: Final = 300
"""How far back "it's X" looks for the password it names, in characters: a line or two."""


def _its_password(match: re.Match[str]) -> bool:
    """Whether "it's X" (see `_ITS_VALUE`) gives a password asked or prompted for just before."""
    value = match.group(2).rstrip(".!?:")
    if not _strong(value):
        return False
    before = match.string[max(0, match.start() - ITS_LOOKBACK) : match.start()]
    return _NAMES_PASSWORD.search(before) is not None


# A CSV export whose header names a secret column: `User name,Password,Console sign-in URL`.
_CSV_HEADER: Final = re.compile(
    r"[ \t]*[A-Za-z][\w .-]{0,39}(?:,[ \t]*[A-Za-z][\w .-]{0,39}){1,40}[ \t]*"
)
_SECRET_COLUMN: Final = re.compile(
    r"(?i)(?:[\w .-]*[ _.-])?(?:password|passwd|secret|token|api[ _-]?key|private[ _-]?key"
    r"|access[ _-]?key|client[ _-]?secret)(?:[ _-]?(?:value|key))?"
)


def _csv_secret_columns(text: str) -> tuple[str, int]:
    """Each value under a CSV header's secret column (`Password`, `secret`, `api_key`) redacted,
    in the rows that follow the header with as many fields; the number redacted."""
    if "," not in text:
        return text, 0
    lines = text.split("\n")
    count = 0
    secret_columns: list[int] = []
    width = 0
    for i, line in enumerate(lines):
        fields = line.split(",")
        if secret_columns and len(fields) == width and '"' not in line:
            for col in secret_columns:
                value = fields[col].strip()
                if len(value) >= 6 and not _plain_value(value):
                    fields[col] = fields[col].replace(value, REDACTED)
                    count += 1
            lines[i] = ",".join(fields)
            continue
        secret_columns = []
        if _CSV_HEADER.fullmatch(line):
            secret_columns = [
                c for c, f in enumerate(fields) if _SECRET_COLUMN.fullmatch(f.strip())
            ]
            width = len(fields)
    return ("\n".join(lines), count) if count else (text, 0)


def _numbered_seed(run: str) -> bool:
    """Whether a numbered list of single words is a seed phrase: 12 to 24 of them, numbered 1, 2, 3 ..."""
    numbers = [int(n) for n in _NUMBERED_WORD.findall(run)]
    return len(numbers) in SEED_LENGTHS and numbers == list(range(1, len(numbers) + 1))


def _prints_secret(line: str) -> bool:
    """Whether a shell line prints a secret: `cat` of a key file, `pass show`, `op read`, `vault ...
    -field`, the macOS keychain, or a Kubernetes secret piped to `base64 -d`."""
    return _PRINTS_SECRET.match(line) is not None or (
        _BASE64_DECODE.search(line) is not None and re.search(r"(?i)\bsecrets?\b", line) is not None
    )


# `key, _ := hex.DecodeString("...")`, `secret = bytes.fromhex('...')`: a key decoded from a literal.
_DECODED_KEY: Final = re.compile(
    r"(?i)(\b\w*(?:key|secret|token)\w*(?:[ \t]*,[ \t]*\w+)*[ \t]*:?=[ \t]*[\w.]*"
    r"(?:decode\w*|fromhex|unhexlify|from_hex|b64decode)\([ \t]*b?[\"'])([0-9a-f]{32,}|[A-Za-z0-9+/_-]{24,}={0,2})"
    r"(?=[\"'])"
)
# `racadm -u root -p calvin`, `mosquitto_pub -u x -P y`: a password flag right after a user flag
# (but `mysql -u root -p billing` names a database, judged below).
_USER_THEN_PASSWORD: Final = re.compile(rf"((?<=\s)-[uU]\s+[^\s-]\S*\s+-[pP]\s+){_FLAG_VALUE}")
# `mysql -p name` names a database after prompting for the password: a value there is a password
# only when it looks like one (`mysql -u root -p s3cr3tPass`).
_MYSQL_SPACED: Final = re.compile(rf"({_MYSQL}{_CMD_END}-p\s+){_FLAG_VALUE}")
# A user and password pair: `admin / Hunter2x!`, `deploy:s3cr3tPass`, `root:pw@host`.
_PAIR: Final = re.compile(
    r"(?<![\w/:@.$%-])([A-Za-z][\w.@+-]{0,63}(?:/|:))([^\s/:'\"@]{4,}?)(?=[.,;)]*(?:\s|$))"
)
# Spaced around its slash, a pair's password may hold any character: "login is ci / MYer%.J@RGiy.6".
_SPACED_PAIR: Final = re.compile(
    r"(?<![\w/:@.$%-])([A-Za-z][\w.@+-]{0,63}\s+/\s+)(\S{4,}?)(?=[.,;)]*(?:\s|$))"
)
_AT_PAIR: Final = re.compile(r"(?<![\w/:.-])([A-Za-z][\w.-]{0,63}:)([^\s:/@]+)(@[\w-]+\.[\w.-]+)")
# Words that announce a user and password pair just before it: "login is", "creds:", "curl -u",
# "basic auth on the preview site (preview.example.com, run by Aiko) is": within the sentence.
_PAIR_CUE: Final = re.compile(
    r"(?i)(?:\b(?:(?P<strong>log[- ]?ins?|creds|credentials?|sign[- ]?ins?)|accounts?|users?"
    r"|user[- ]?names?|auth)\b(?P<gap>(?:[^.\n!?]|\.(?=\S)){0,100})|(?:^|\s)(?:-u|--user)(?:\s+|=))$"
)
_ENDS_AS_LABEL: Final = re.compile(r"(?i)(?:[:=]|\bis|\bare|\bwas|\bwere)\s*$")
_ACCOUNTS: Final = frozenset(
    """root admin administrator deploy deployer sa guest superuser vagrant pi dbadmin ec2-user
    sysadmin webadmin ftpuser""".split()
)
_FIELD_WORDS: Final = frozenset(
    """password passwords pass passwd pwd passphrase pw secret token key login user username email
    pin code""".split()
)
_VERSION: Final = re.compile(r"v?\d+(?:[.+-]\w+)*")
"""`16-alpine`, `3.12-slim`, `v2.1`: an image tag or version after a colon, not a password."""
_HIGH_ENTROPY: Final = re.compile(r"(?<![\w/+=.-])[A-Za-z0-9+/_=-]{32,}(?![\w/+=-])")
"""A long run of key-like characters; kept unless it looks random (see `_looks_random`)."""
_DIGEST_PREFIX: Final = r"(?:sha\d+|md5|h1):"
"""`SHA256:`, `md5:`, Go's `h1:`: what a published digest or fingerprint starts with."""
_DIGEST_START: Final = re.compile(rf"(?i){_DIGEST_PREFIX}")
_PUBLIC_BEFORE: Final = re.compile(
    rf"(?i)(?:\b{_DIGEST_PREFIX}|\b(?:ssh-(?:ed25519|rsa|dss)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@\S+)\s+"
    r"|\bdata:[\w/+.-]+;base64,|\$2[aby]?\$\d{2}\$[./A-Za-z0-9]*)$"
)
"""A key's fingerprint, a public key (`SHA256:...`, `ssh-ed25519 AAAA...`) or a data URI's content is
published, not secret."""
_PUBLIC_TOKEN: Final = re.compile(
    r"(?i)sha\d+-|AAAA[BCE][0-9]Nza|(?-i:pk_(?:live|test)_|pk\.eyJ|phc_|age1[02-9ac-hj-np-z]{58}\b"
    r"|eyJ(?:hbGciOi|0eXAiOi)[A-Za-z0-9_-]*={0,2}\Z|(?:bc|tb)1[02-9ac-hj-np-z]{39,59}\b|\$2[aby]?\$\d{2}\$)"
)
"""An integrity hash (`sha512-...`), an SSH public key's body (`AAAAC3NzaC1lZDI1NTE5...`), a
publishable key (Stripe's `pk_live_`, Mapbox's `pk.`, PostHog's `phc_`), made to ship in a web page, an
age recipient (`age1...`, a public key), a JWT's header alone (`eyJhbGciOi...`, no signature), a
Bitcoin address (`bc1q...`), or a bcrypt hash (`$2b$12$...`), which stores no password."""

# Passwords labelled in other languages: "das Passwort ist X", "la contraseña es X", "hasło to X",
# "пароль X", "パスワードはXです". The value must look like a password (see `_prose_secret`).
_FOREIGN_LABEL: Final = (
    r"passwort|kennwort|mot\s+de\s+passe|mdp|contrase[ñn]a|clave|senha|password|wachtwoord"
    r"|has[łl]o|пароль|l[öo]senord(?:et)?|[şs]ifre(?:si)?|salasana|adgangskode(?:n)?|heslo"
    r"|jelsz[óo](?:t|ja)?|parol[aă]|m[ậa]t\s+kh[ẩa]u"
)
_COPULA: Final = r"is|ist|lautet|est|es|era|è|é|to|är|er|jest|je|on|van|var|was"
""""Is" between a password's label and its value, in the languages of `_FOREIGN_LABEL`."""
_FOREIGN_CONNECTOR: Final = rf"\s*[:=：—–]\s*|\s+(?:(?:{_COPULA}|e|olarak)\s+)?"
# "la clave del router es X", "das Passwort für den Server ist X".
_FOREIGN_OF: Final = (
    r"(?:del?|des|du|der|den|dem|di|della|do|da|van|voor|för|till|dla|для|от|od|für|pour|para|per)"
)
_FOREIGN: Final = re.compile(
    rf"(?i)(?<![\w])((?:{_FOREIGN_LABEL})(?:\s+{_FOREIGN_OF}\s+(?:\w+\s+)?[\w-]+)?"
    rf"(?:{_FOREIGN_CONNECTOR}))([^\s\"',;，、。]+)"
)
# "le mot de passe de la base de recette c'est X", "la password dell'utente deploy sul server di
# collaudo è X", "der API-Schlüssel für unseren DeepL-Account lautet X": up to eight words between
# the label and its verb.
_FAR_KEY_LABEL: Final = (
    r"(?:api-?)?schl[üu]ssel|cl[ée]\s+(?:d'?)?api|chave|chiave|access\s+token|token"
)
_FAR_VERB: Final = rf"c['’]est|{_COPULA}|sono|são|son|será|sera|là"
_FOREIGN_FAR: Final = re.compile(
    rf"(?i)(?<![\w-])((?:{_FOREIGN_LABEL}|{_FAR_KEY_LABEL})(?:[ \t]+(?!(?:{_FAR_VERB})\b)[\w'’.()-]+){{1,8}}?"
    rf"(?:[ \t]+(?:{_FAR_VERB})[ \t]+|[ \t]*:[ \t]*)[\"'`“]?)([^\s\"'`”,;，、。]+)"
)
_PASSPHRASE_LABEL: Final = (
    r"pass\s?phrase|master\s+password|frase\s+de\s+contrase[ñn]a|phrase\s+secr[eè]te"
    r"|mot\s+de\s+passe|password|passwort|contrase[ñn]a|senha|security\s+answer|mnemonic"
    r"|(?:seed|recovery)\s+phrase"
)
# "the passphrase every reboot, it's "blue elephant dancing"": a quoted phrase after the label.
_QUOTED_PHRASE: Final = re.compile(
    rf"(?i)(\b(?:{_PASSPHRASE_LABEL})\b(?:[^.\n?!\"'“‘`]|\.(?=\S)){{0,80}}?(?:[:=]|\b(?:is|was|it's|it\s+is|es|est"
    rf"|ist|lautet|é|è|which\s+is))[ \t]*)([\"'“‘`])([^\"'”’`\n]{{3,200}}?)([\"'”’`])"
)
# "my ssh key passphrase is correct horse battery staple, how do I ...": unquoted words to a break
# (the end of a line included: "passphrase: tangerine lighthouse 41 otter" in a chat log).
_PHRASE_LABEL: Final = r"pass\s?phrase|master\s+password|security\s+answer"
_BARE_PHRASE: Final = re.compile(
    rf"(?im)(\b(?:{_PHRASE_LABEL})\b[^.\n?!:=]{{0,60}}?\s(?:is|was)\s+|\b(?:{_PHRASE_LABEL})\s*:\s*)"
    r"((?:[a-z0-9]+[ \t]+){1,7}[a-z0-9]+)(?=[ \t]*(?:[—–,;.?!(]|[ \t]-[ \t]|$))"
)
# `TWILIO_AUTH_TOKEN is 0b23...`, "config/master.key contains 5b1b...": a variable or file named
# for a secret, then what it holds.
_NAMED_IS: Final = re.compile(
    r"(\b(?:[A-Z][A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD)|[\w./-]*(?:master\.key|\.key"
    r"|secrets?\.\w+))[ \t]+(?:is|was|contains|holds|reads|(?:supposed|meant) to be)[ \t]+[\"'`]?)([^\s\"'`,;]+)"
)
# "my creds are jkowalski and Pierogi4Life!", "login is releases@ourco.io with Appl3Pie-Crust".
_AND_PAIR: Final = re.compile(
    r"(?i)(\b(?:(?P<strong>creds|credentials|log[- ]?ins?|login\s+details|sign[- ]?in)|user(?:name)?"
    r"|account|admin)\b(?:[ \t]+[\w()'.-]+){0,4}?[ \t]+(?:(?:are|is|:)[ \t]+)?[\"']?[\w.@+\\-]+[\"']?"
    r"[ \t]+(?:and|with|using|,|/|plus)[ \t]+(?:(?:the\s+)?password[ \t]+)?)(?P<value>[^\s,;\"'`]+)"
)
"""After "creds" or "login" a password-like value goes; after "user" or "account" a strong one."""
# `sqlplus scott/Tiger_1977@//ora-prod:1521/ORCL`: Oracle's user/password@database.
_SLASH_AT: Final = re.compile(r"(?<![\w/:.-])([A-Za-z][\w.-]{0,63}/)([^\s:/@]+)(@(?://)?[\w-]+)")
_ORACLE_TOOL: Final = re.compile(
    r"(?i)\b(?:sqlplus|rman|expdp|impdp|sqlldr|sqlcl|conn(?:ect)?)\b[^\n]{0,40}$"
)
# "key_secret `79HHOZ...`", "private key 172034e7...": a secret's name, then a key-like value.
_BARE_KEY: Final = re.compile(
    r"(?i)\b((?:[\w-]*_)?(?:secret|private[ _]key(?:[ _]id)?|secret[ _]key|api[ _]secret|key[ _]secret"
    r"|client[ _]secret)[ \t]+[\"'`]?)([A-Za-z0-9_+/=-]{16,})"
)
# `smbclient -U 'CORP\\jdoe%Winter#Fjord22'`: Samba's user%password.
_SMB_USER: Final = re.compile(r"((?<=\s)-U\s+[\"']?[^\s%\"']+%)([^\s\"']+)")
# "we changed it to Dellicious2021", "reset it to Tr0ub4dor": a password said of "it".
_CHANGED_TO: Final = re.compile(r"(?i)(\b(?:changed|reset|set|updated|rotated)\s+it\s+to\s+)(\S+)")
# A Google app password, four groups of four letters: `spring.mail.password=dxto wvlk qxxy sxtf`.
_APP_PASSWORD: Final = re.compile(
    r"(?i)(\b(?:[\w.-]*password\s*[:=]\s*[\"']?|app\s+password\b(?:[^\n:]{0,60}:\s*|\s+(?:is\s+)?)))"
    r"([a-z]{4}(?:[ \t][a-z]{4}){3})(?![\w])"
)
# `Splunk_Token 64fe837d-...` in a fluent-bit, nginx or sshd-style file: a key named for a secret, a
# space, and its value alone on the line.
_CONF_KEY_VALUE: Final = re.compile(
    r"(?im)^([ \t]*[\w.-]*(?:token|password|passwd|secret|api_?key|auth_?key)[ \t]+)(\S{8,})[ \t]*$"
)
# Gradle's `storePassword "x"`, `keyPassword 'x'`: a property named for a password, then its value.
_CAMEL_PROPERTY: Final = re.compile(
    r"(\b[a-z]\w*(?:Password|Passwd|Secret|Token|ApiKey)[ \t]+[\"'])([^\"'\n]+)(?=[\"'])"
)
# `client.connect("node", "sensor", "brokerpass_123!")`, `Client('AC...', '1f78...')`: the last of a
# login call's string arguments, when it reads as a password or a key.
_LOGIN_CALL: Final = re.compile(
    r"(\b(?:connect|login|log_in|signin|sign_in|auth\w*|\w*Client(?:\.new)?|algoliasearch|credentials)\(\s*"
    r"(?:[\"'][^\"'\n]*[\"']\s*,\s*){1,3}[\"'])([^\"'\n]{6,})(?=[\"'])"
)
# `APIKey("0d30df...")`, `Secret('x')`: a constructor named for a secret, and its argument.
_KEY_CALL: Final = re.compile(
    r"(\b\w*(?:Key|KEY|Token|TOKEN|Secret|SECRET|Password|PASSWORD)\(\s*[\"'])([^\"'\n]{8,})(?=[\"'])"
)
# `define('DB_PASSWORD', 'x')`, `config.set("api_key", "x")`: a name for a secret, then its value.
_NAMED_ARGUMENT: Final = re.compile(
    r"(?i)([\"'](?:[\w-]+\.)?[\w-]*(?:password|passwd|secret|token|api_?key|auth_?key|salt)[\w.-]*[\"']\s*,\s*[\"'])"
    r"([^\"'\n]+)"
)
_CJK: Final = re.compile(
    r"((?:パスワード|暗証番号|密码|密碼|口令|비밀번호|암호|पासवर्ड)\s*(?:は|が|:|：|是|为|為|는|은|=)?\s*)"
    r"([!-~]+)"
)
# "reset the admin password to X", "the key is X", "application key for the Mortimer dashboards is
# X", "user admin pass X": a secret's label, up to four words, a connector and a value that looks
# like a secret ("the key is in the drawer" and "primary key is id" hold none).
_PROSE_LABEL: Final = (
    r"pass(?:word|phrase|wd|code)?|pasword|passwrd|pswd|pwd|pw|secret|key|token|pat|credentials?|psk"
    r"|pre-?shared\s+key|requirepass|masterauth|community\s+string"
)
_CONNECTOR_WORDS: Final = (
    r"(?:is|was|are)\s+(?:now\s+)?(?:set|changed|reset)\s+to|(?:supposed|meant)\s+to\s+be|is|was|are|to"
    r"|with|as|stays|remains|being|是|为|為|は|là"
)
_PROSE: Final = re.compile(
    rf"(?i)\b((?:{_PROSE_LABEL})\b(?:[ \t]+(?!(?:{_CONNECTOR_WORDS})\b)[\w'-]+(?:\.[\w'-]+)*){{0,6}}?"
    r"(?:[ \t]*\([^()\n]{0,40}\))?"  # "AES key for the backups (32 bytes, hex): ..."
    rf"(?:[ \t]*(?:=|:(?!:))[ \t]*|[ \t]+(?:{_CONNECTOR_WORDS})[ \t]+)[\"'`]?)([^\s\"'`]+)"
)
# "user admin pass X", "kiosk and pass X": `pass` or `pw` right before a password.
_BARE_PASS: Final = re.compile(
    r"(?i)(?<![\w-])((?:pass|pw)\s+\(?)(?=[^\s\"',;)]*\d)([^\s\"',;)]{6,})"
)
# "use X to log in as deploy", "use X as the password": a password before what it is for.
_USE_TO_LOG_IN: Final = re.compile(
    r"(?i)(\buse\s+)([^\s\"',;]{6,})(?=\s+(?:to\s+(?:log|sign)\s*(?:in|on)\b|as\s+(?:the\s+)?password\b))"
)
# "for the security question 'mother's maiden name' I put X": the answer is a password.
_SECURITY_ANSWER: Final = re.compile(
    r"(?i)(\bsecurity\s+questions?\b[^\n]{0,80}?\b(?:i\s+(?:put|used|wrote|typed|gave|answered)"
    r"|answer(?:ed)?(?:\s+(?:is|was|with))?)\s+[\"'“]?)([^\s\"'”,.;]+)"
)
# "Log into the console as aiko with X", "ssh in as deploy using X".
_LOGIN_WITH: Final = re.compile(
    r"(?i)(\b(?:log(?:ged)?\s*(?:in|on)(?:to)?|sign(?:ed)?\s*in(?:to)?|ssh|connect\w*|rdp|vnc|winrm"
    r"|remote\s+(?:in|into))\b(?:[^.\n]|\.(?=\S)){0,60}?\bas\s+[\w.@\\-]+\s+(?:with|using)\s+(?:(?:the\s+)?password\s+)?)([^\s\"',;]+)"
)
_NOT_PASSWORD_LABEL: Final = re.compile(r"(?i)(?:key|token|pat|secret|credential|clave|parol)")
_SYMBOLS: Final = frozenset("!@#$%^&*+=~?")
_CODE_CHARS: Final = frozenset("()[]{}<>`")
"""`key = self._key(settings)`, `{key: data[key]}`: code, not a value."""
_NAME_PATH_SHAPE: Final = r"[a-z][a-z0-9_.-]*(?:/[a-z][a-z0-9_.-]*)+"
"""`prod/db/orders`, `staging/api/github`: a path of lower-case names (a Vault or Secrets Manager path)."""
_NAME_PATH: Final = re.compile(_NAME_PATH_SHAPE)
_NOT_ANY_VALUE: Final = (
    r"[~.]?/.*|.*://.*|[\w.+-]+@[\w-]+\.[\w.-]+|v?\d+(?:[.+-]\w+)*|[\d\W_]+"
    rf"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|{_NAME_PATH_SHAPE}"
)
"""A path (`/etc/x`, `prod/db/orders`), URL, e-mail address, version, number or dotted name: never a
secret's value."""
_NOT_SECRET_SHAPE: Final = re.compile(
    rf"{_NOT_ANY_VALUE}"
    r"|(?:\d+)?[A-Z]?[a-z]+(?:[A-Z][a-z]+)*\d*|[A-Za-z][a-z]*(?:-[A-Za-z][a-z]*)+"
    r"|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|(?i:sha\d+|md5):[\w+/]+|(?:ssh|ecdsa)-[\w@.-]+"
)
"""A path, URL, email, version, number, a word or CamelCase name (`1Password`, `useEffect2`), an
identifier (`x86_64`, `MyClass.method`) or a digest (`sha256:...`)."""
_NOT_PASSWORD_SHAPE: Final = re.compile(
    rf"{_NOT_ANY_VALUE}|(?:sha\d+|md5|base\d+|utf-?\d+|x86_64):?\w*"
)
"""After a password's label, what still is no password: a path, URL, address, version, number,
dotted name, digest or encoding."""


_CODE_REFERENCE: Final = re.compile(
    r"[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)*(?:\(\)|\(\s*(?:[\"'].*)?|\[(?:[\"'].*)?)(?:\.[\w.()\[\]\"']*)?"
)
"""`os.environ["DB_PASSWORD"]`, `getenv('TOKEN')`, `read_password()`: code that fetches a secret, not one
(a bare value ends at its quote: `os.environ[` is one too)."""
_TYPE_NAME: Final = re.compile(
    r"(?:Optional\[|Option<)?(?:str|string|String|bytes|SecretStr|SecretBytes|char\[\])[\]>]?[),;]*"
)
"""`new_password: str`, `token: Optional[str]`: a type, after a parameter's colon."""


_VARIABLE_REFERENCE: Final = re.compile(
    r"(?:var|local|data|module|self|this|cls|settings|config|conf|cfg|env|process\.env|secrets|vars"
    r"|inputs|params|props|args|opts|options)(?:\.[A-Za-z_][\w-]*)+[,;]?"
)
"""`var.db_password` (Terraform), `self.password`, `settings.SECRET_KEY`: a variable that holds one."""


def _code_not_value(value: str, colon: bool) -> bool:
    """An unquoted value that is code, not a secret: a call, lookup or variable that fetches one,
    or (after a colon) a type name."""
    if value[:1] in "\"'`":
        return False
    return (
        _CODE_REFERENCE.fullmatch(value) is not None
        or _VARIABLE_REFERENCE.fullmatch(value) is not None
        or (colon and _TYPE_NAME.fullmatch(value) is not None)
    )


_DIGIT_COLON: Final = re.compile(r"\d:[ \t]*$")
_HEX_KEY: Final = re.compile(r"[0-9a-fA-F]{32,}")
"""32 or more hex digits after a secret's label: a key (unlabelled, a commit or a file hash)."""


def _prose_secret(value: str, password: bool = False) -> bool:
    """Whether a value in a sentence is a secret: a symbol, a digit or inner capitals, 6+ long.

    After a password's own label (`password`, `pw`, `Passwort`) letters and digits are enough
    (`Summer2024`); after `key` or `token` a word or name with a digit (`useEffect2`) is not one.
    """
    bare = value.rstrip(".,;:)!?\"'“”’»").rstrip(".,;:)!?")
    if bare.startswith(("*", "_")):  # Markdown emphasis: "the key points: **Where ...**"
        return False
    if len(bare) < 6 or _plain_value(bare) or any(c in _CODE_CHARS or c.isspace() for c in bare):
        return False
    if password and any(c.isdigit() for c in bare) and any(c.isalpha() for c in bare):
        return _NOT_PASSWORD_SHAPE.fullmatch(bare) is None
    if _NOT_SECRET_SHAPE.fullmatch(bare):
        return False
    if _HEX_KEY.fullmatch(bare):
        return True
    digit = any(c.isdigit() for c in bare)
    symbol = any(c in _SYMBOLS for c in bare)
    # Inner capitals alone name products as often as they hide passwords ("credentials to FFmpeg").
    random_letters = len(bare) >= 10 and sum(c.isupper() for c in bare[1:]) >= 3
    inner_upper = random_letters and any(c.islower() for c in bare)
    return (digit or symbol or inner_upper) and any(c.isalpha() for c in bare)


# Unlabelled random tokens: 40+ lower-case letters and digits at random (an Azure DevOps PAT), and
# base32 seeds after "seed", "TOTP", "2FA" or 32 characters long.
_LOWER_TOKEN: Final = re.compile(r"(?<![\w/.@-])[a-z0-9]{40,}(?![\w/@-])")
_BASE32: Final = re.compile(r"(?<![\w/.-])[A-Z2-7]{16,}(?![\w/-])")
_OTP_CUE: Final = re.compile(
    r"(?i)\b(?:seed|secret|totp|otp|2fa|mfa|authenticator|setup\s+key)\b[^.\n]{0,70}$"
)
_COMMIT_CUE: Final = re.compile(
    r"(?i)\b(?:commit|sha|rev(?:ision)?|hash|digest|checksum|etag)\W*$"
    r"|\b(?:md5|sha\d*)\s*\([^()\n]*\)\s*=\s*$"  # `MD5 (file.iso) = ...`, as BSD's md5 prints it
)


def _random_lower(token: str) -> bool:
    digits = sum(c.isdigit() for c in token)
    if re.fullmatch(r"[0-9a-f]+", token):
        return False  # hashes and commit SHAs are hex; a labelled hex key is caught by its label
    return digits >= 6 and digits >= 0.12 * len(token) and _entropy(token) >= 4.2


# 2FA backup and recovery codes: the list of code-like groups after "backup codes".
_CODE: Final = r"(?=[A-Za-z0-9-]*\d)[A-Za-z0-9]{3,10}(?:-[A-Za-z0-9]{3,10}){0,3}"
_BACKUP_CODES: Final = re.compile(
    rf"(?i)(\b(?:backup|recovery|2fa|mfa|scratch)\s+codes?\b[^\n:]{{0,100}}?"
    rf"(?:\s*[:=]\s*|\s+(?:are|is|were)\s+))({_CODE}(?:[,;]?\s+{_CODE}|[,;]\s*{_CODE})+)"
)
_PIN_VALUE: Final = r"[\"'`]?(\d{4,12}|\d(?:-\d){3,11}|\d{1,2}(?:-\d{1,2}){2,5})(?![\w.,:]\d)"
# A code's own label: a `PIN` in capitals ("GPIO pin 17" names a pin), or a pin, PUK or code named
# for what it unlocks. The same labels in both forms below.
_PIN_LABEL: Final = (
    r"PINs?|PUKs?|PIN\s+codes?|(?i:(?:sim|yubikey|piv|smart\s?card|card|phone|atm|unlock|admin|user)"
    r"\s+(?:pins?|puks?)|(?:unlock|sim|piv|admin|user)\s+codes?|pass\s?codes?|pin\s+codes?|combination"
    r"|(?:door|alarm|disarm|unlock|gate|safe|lock|locker|keypad)\s+codes?)"
)
# "the smartcard PIN is 91536274", "door code for the server room: 5821": a number is the secret
# after its label, a few words on.
_PIN: Final = re.compile(
    rf"(\b(?:{_PIN_LABEL})\b(?:,?[ \t]+(?!(?:is|was|are)\b)[\w'-]+){{0,12}}?"
    r"(?:[ \t]*\([^()\n]{0,100}\)|,[^,\n]{0,60},)?"
    r",?(?:[ \t]*[:=][ \t]*|[ \t]+(?:is|was|are|(?:(?:is|was)[ \t]+)?(?:now[ \t]+)?(?:changed|set|reset"
    r"|updated)[ \t]+to)[ \t]+))" + _PIN_VALUE
)
# "PIV PIN 270318", "unlock pin 135724", "it unlocks with 902614": a code right after its label.
_PIN_BARE: Final = re.compile(
    rf"(\b(?:{_PIN_LABEL}|(?i:authenticator(?:\s+app)?\s+(?:shows|says|code(?:\s+is)?)"
    r"|(?:mfa|2fa|otp|totp)\s+code(?:\s+is)?)"
    r"|(?i:unlock(?:s|ed)?\s+(?:it\s+)?with"
    r"(?:\s+(?:the\s+)?(?:pin|code|passcode))?))[ \t]+\(?)" + _PIN_VALUE
)
# One recovery code or key: "2fa backup code 3kq9-7hx2-m4wp", "recovery key is RK-8WQ2-HT7P-Z3MC".
_ONE_CODE: Final = re.compile(
    r"(?i)(\b(?:backup|recovery|2fa|mfa|scratch)\s+(?:codes?|keys?)\b[^\n:]{0,100}?"
    r"(?:\s*[:=]\s*|\s+(?:is|was)\s+|\s+\(?|\s*\())"
    r"((?=[a-z0-9-]*\d)(?:[a-z0-9]{2,8}(?:-[a-z0-9]{3,8}){2,7}|[a-z0-9]{4,8}-[a-z0-9]{4,8})|\d{6,12}"
    r"|(?=(?:[a-z]*\d){2})(?=(?:\d*[a-z]){2})[a-z0-9]{16,40})(?![\w-])"
)
# A licence or serial key in groups: "the key is (RTLF4-DHEV1-AZ32N-M5JY2-97IFT)", `-serial SC-...`.
_LICENCE_KEY: Final = re.compile(
    r"(?i)(\b(?:licen[cs]e|serial|product\s+key|activation|key)\b[^\n]{0,40}?[\s(:=]\(?)"
    r"((?-i:[A-Z0-9]{2,6}(?:-[A-Z0-9]{4,6}){3,7}))(?![\w-])"
)
# Google's backup codes: "1. 6215 0391    2. 7274 6587", a few lines under "backup ... codes".
_NUMBERED_CODE: Final = re.compile(r"(?m)(\b\d{1,2}\.[ \t]+)(\d{4}[ \t]\d{4})(?![\d-])")
_CODES_TITLE: Final = re.compile(
    r"(?i)\b(?:backup|recovery|verification|2fa|mfa)\b[^\n]{0,30}\bcodes?\b"
)
# A seed phrase written as a numbered list: "1. father  2. display ... 24. broken".
_NUMBERED_WORDS: Final = re.compile(
    r"(?:(?<![\w.])\d{1,2}\.[ \t]+[a-z]{3,8}\b[ \t]*(?:\r?\n[ \t]*)?){12,24}"
)
_NUMBERED_WORD: Final = re.compile(r"(\d{1,2})\.[ \t]+[a-z]{3,8}\b")
# "Q: What is your mother's maiden name?" then "A: ...": the answer to a security question.
_SECURITY_QA: Final = re.compile(
    r"(?im)^([ \t]*Q[:.)][^\n]*\b(?:maiden|pet|born|street|school|memorable|favou?rite|first\s+car"
    r"|city|security\s+question)\b[^\n]*\n[ \t]*A[:.)][ \t]*)([^\n]*?\S)[ \t]*$"
)
# "the keypad ... was reprogrammed. New code is 4719#", "alarm panel ...: type 8362 then press OFF".
_KEYPAD_CODE: Final = re.compile(
    r"(?i)(\b(?:keypad|alarm|door|gate|safe|lockbox|key\s?safe|garage)\b[^\n]{0,100}?"
    r"\b(?:type|enter|punch\s+in|key\s+in|code\s+is|code:|new\s+one(?:'s|\s+is))[ \t]*)"
    r"(\d{4,8}[#*]?)(?![\d.,:]\d)"
)
# "Rotated the master password for the vault today. New one: glacier-tumble-orchid-...".
_NEW_ONE: Final = re.compile(
    r"(?i)(\b(?:password|passphrase|passcode|pass\s?word)\b[^\n]{0,120}?\bnew\s+one"
    r"(?:\s+is\s+|\s*[:=]\s*))([^\s\"'`,;]+)"
)
# A key file's bytes as a JSON array of 64 numbers (a Solana keypair, `~/.config/solana/id.json`).
_BYTE_ARRAY_KEY: Final = re.compile(r"\[[ \t]*(?:\d{1,3}[ \t]*,[ \t]*){63}\d{1,3}[ \t]*\]")
# "(typed it in the wrong window, it's Depl0y_Box_8 anyway)" a line or two after a password prompt.
_ITS_VALUE: Final = re.compile(r"(?i)(\bit(?:'s|’s|[ \t]+is|[ \t]+was)[ \t]+)([^\s,;()\"'`]{6,64})")
# A TOTP seed written in groups of four: "the TOTP secret is 7QHZ 3LMK P2XR 9VTW".
_GROUPED_SEED: Final = re.compile(r"(?<![\w-])(?:[A-Za-z0-9]{4}[ ]){3,}[A-Za-z0-9]{4}(?![\w-])")
_BASE32_GROUPS: Final = re.compile(r"(?:[a-z2-7]{4} )+[a-z2-7]{4}")
# Session cookies: `sessionid=...`, `JSESSIONID=...`, "the grafana_session cookie 4d8e...".
_SESSION_COOKIE: Final = re.compile(
    r"(?i)(\b(?:[\w-]*sess(?:ion)?[_-]?id|phpsessid|connect\.sid|[\w-]*_session|remember_(?:token|me)"
    r"|csrftoken|[\w.-]*cookies?(?==))(?:\s+cookie)?(?:\s+\w+){0,3}?(?:\s*[=:]\s*|\s+(?:is|was)\s+|\s+))"
    r"((?=[\w%.~+/-]*\d)(?=[\w%.~+/-]*[a-z])[\w%.~+/-]{16,})"
)
# A webhook's URL holds its token in the path: `hooks.zapier.com/hooks/catch/3729654/bqef86z/`,
# `events.pagerduty.com/integration/<key>/enqueue`, `maker.ifttt.com/trigger/x/with/key/<key>`.
_HOOK_URL: Final = re.compile(
    r"(?i)\bhttps?://(?:[^\s/]*hooks?\.[^\s/]+|[^\s/]+(?:/[^\s/]+)*?"
    r"/(?:hooks?|webhooks?|integrations?|catch|key|incoming))/[^\s\"'<>)]+"
)
_PATH_TOKEN: Final = re.compile(
    r"(?<=/)(?=(?:[A-Za-z_-]*\d){2})(?=[\w-]*[A-Za-z])[\w-]{7,}(?=[/?#.,;]|$)"
)
# A Wi-Fi QR code's text: `WIFI:T:WPA;S:office;P:<password>;;`.
_WIFI_QR: Final = re.compile(r"(\bWIFI:(?:[^\s;]*;)*?P:)([^;\s]+)")
# A `.pgpass` line, `host:port:database:user:password`.
_PGPASS: Final = re.compile(
    r"(?<![\w:/.@-])([A-Za-z*][\w.*-]*:(?:\d{2,5}|\*):[\w.*-]+:[\w.*@-]+:)([^\s:]+)"
)
# `<password>x</password>`, `<apiToken>x</apiToken>`: an element named for a secret.
_XML_SECRET: Final = re.compile(
    r"(?i)(<((?:[\w.-]*:)?[\w.-]*(?:password|passwd|secret|token|api_?key|key)[\w.-]*)"
    r"(?:\s[^<>]*)?>)([^<>\n]+)(</\2>)"
)
_TABLE_SECRET_COLUMN: Final = re.compile(
    r"(?i)\b(?:passwords?|passwd|pwd|pw|pass|secrets?|tokens?|(?:api[ _-]?)?keys?|credentials?)\b"
)
_TABLE_RULE: Final = re.compile(r"\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*")


def _cells(line: str) -> list[str]:
    return line.strip().strip("|").split("|")


def _redact_tables(text: str) -> tuple[str, int]:
    """Redact a Markdown table's cells under a password, secret, token or key header."""
    if "|" not in text or "---" not in text:
        return text, 0
    lines = text.split("\n")
    count = 0
    i = 0
    while i + 1 < len(lines):
        header = lines[i]
        if "|" in header and _TABLE_RULE.fullmatch(lines[i + 1]):
            columns = [
                n for n, cell in enumerate(_cells(header)) if _TABLE_SECRET_COLUMN.search(cell)
            ]
            j = i + 2
            while j < len(lines) and "|" in lines[j] and columns:
                cells = _cells(lines[j])
                changed = False
                for n in columns:
                    value = cells[n].strip() if n < len(cells) else ""
                    weak = not re.search(r"(?i)pass|pw|secret|token", _cells(header)[n])
                    if not value or _plain_value(value) or (weak and not _secret_like(value)):
                        continue
                    cells[n] = cells[n].replace(value, REDACTED)
                    changed = True
                    count += 1
                if changed:
                    lead = "|" if lines[j].lstrip().startswith("|") else ""
                    tail = "|" if lines[j].rstrip().endswith("|") else ""
                    lines[j] = lead + "|".join(cells) + tail
                j += 1
            i = j
        else:
            i += 1
    return "\n".join(lines), count


_WORD_TOKEN: Final = re.compile(
    r"""(^|[\s'"`(=:,;\[])([^\s'"`()<>\[\]{}]{8,64}?)([.,;:!?)\]'"`]*(?=\s|$))"""
)
"""A whitespace-delimited token, without the quotes and punctuation around it."""
_PASSWORD_SYMBOLS: Final = frozenset("!@#$%^&*+=?~")


def _password_shaped(token: str) -> bool:
    """A password by its shape alone, in any language's sentence: upper and lower case, a digit and
    a symbol such as `!#$%`, with no sign of being code, a path, an address or a variable."""
    if (
        REDACTED in token
        or "://" in token
        or "/" in token
        or "\\" in token
        or "=" in token  # an assignment or a query string: the label rules judge those
        or token[0] in "$@#%&*"  # a variable, decorator, handle, anchor or Markdown emphasis
        or re.fullmatch(r"[^@\s]+@[\w-]+(?:\.[\w-]+)+", token)  # an e-mail address
        or re.fullmatch(r"[A-Za-z]+@\d+", token)  # Recall@10
        or _PUBLIC_TOKEN.match(token)
        or _DIGEST_START.match(token)  # a digest or fingerprint
    ):
        return False
    return (
        any(c.isupper() for c in token)
        and any(c.islower() for c in token)
        and any(c.isdigit() for c in token)
        and any(c in _PASSWORD_SYMBOLS for c in token)
    )


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _looks_random(token: str) -> bool:
    """A key, not a word, path or hash: mixed case and digits, and high character entropy."""
    core = token.strip("=")
    if len(core) < 32 or REDACTED.strip("[]") in core:
        return False
    classes = sum(
        (
            any(c.islower() for c in core),
            any(c.isupper() for c in core),
            any(c.isdigit() for c in core),
        )
    )
    # CamelCase names ("ImportantClassNameForTheService2024") are mostly runs of lower-case letters.
    worded = sum(
        len(run)
        for run in re.findall(r"[a-z]{4,}", core)
        if sum(c in "aeiouy" for c in run) >= 0.25 * len(run)  # a word, not random letters
    )
    return (
        classes == 3
        and sum(c.isdigit() for c in core) >= 2
        and worded <= 0.4 * len(core)
        and _entropy(core) >= 4.2
    )


_PLACEHOLDER: Final = re.compile(
    r"<.*|.*\.\.\..*|.*your[-_]?(?:own[-_]?)?(?:key|token|secret|password|api).*"
    r"|\$\{?[A-Za-z_]\w*\}?|\$env:\w+|\$\{[A-Za-z_]\w*:?\?.*|\$\{\{.*|\$\(.*|\{\{.*|%[A-Za-z_]\w*%|[\d.,:]+"
    r"|\*+|[•●]+|x+|\.+|.*[*•●]{4,}.*|\*+(?:redacted|masked|hidden)\*+|\[?(?:redacted|masked|hidden)\]?",
    re.IGNORECASE,
)
"""Not a value: <your key>, ${API_KEY}, $env:API_KEY, ${API_KEY:?set it}, $(gh auth token), {{ secret }}, %PASSWORD%, a
number, ***, ••••, a masked key (`sk_live_****4242`)."""


def _no_value(bare: str) -> bool:
    """No value wherever it stands (`bare` without its quotes): empty, redacted already, a few marks
    and no letter or digit (the `")` of code cut off after a label), or a placeholder or number."""
    return (
        not bare
        or REDACTED in bare
        or (len(bare) <= 3 and not any(c.isalnum() for c in bare))
        or _PLACEHOLDER.fullmatch(bare) is not None
        or _DOC_PLACEHOLDER.search(bare) is not None
    )


def _shown_or_named(bare: str) -> bool:
    """Made to be shown (`pk_live_...`, `pk.eyJ...`, see `_PUBLIC_TOKEN`) or a resource's name (an ARN)."""
    return _PUBLIC_TOKEN.match(bare) is not None or bare.startswith("arn:")


def _plain_value(value: str) -> bool:
    """Not a secret: empty, a placeholder, a number, or a word such as `true` or `stored`."""
    bare = value.strip("\"'`")
    return _no_value(bare) or _shown_or_named(bare) or bare.lower() in _NOT_A_VALUE


def _assigned_plain(value: str) -> bool:
    """Not a secret after `=`: a placeholder, a number, a flag word or a resource's name (an ARN);
    "secret" itself is one."""
    bare = value.strip("\"'`")
    return (
        _no_value(bare)
        or _shown_or_named(bare)
        or bare.lower()
        in {
            "true",
            "false",
            "none",
            "null",
            "yes",
            "no",
            "on",
            "off",
        }
    )


def _secret_like(value: str) -> bool:
    """Whether a value after a weak label (`sort_key=created_at` is not) holds a secret."""
    bare = value.strip("\"'")
    if _plain_value(value) or _NAME_PATH.fullmatch(bare):
        return False
    if any(c in "!@#$%^&*+=~?/" for c in bare):
        return True
    return (any(c.isdigit() for c in bare) and len(bare) >= 6) or _looks_random(bare)


_HEX_OR_UUID: Final = re.compile(rf"[0-9a-fA-F]{{32,}}|{secret_tokens.UUID}")


def _key_value(value: str) -> bool:
    """What a login call's last argument or a config key named for a secret holds when it is one:
    a password (`_strong`), a random-looking key, 32 or more hex digits, or a UUID."""
    return _strong(value) or _looks_random(value) or _HEX_OR_UUID.fullmatch(value) is not None


def _strong(value: str) -> bool:
    """A password on its own: letters and digits, and mixed case or a symbol (`s3cr3tPass`)."""
    has = any(c.isalpha() for c in value) and any(c.isdigit() for c in value)
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return len(value) >= 6 and has and (mixed or any(c in "!@#$%^&*+=~?" for c in value))


def _pair_password(text: str, match: re.Match[str]) -> bool:
    """Whether `match` (user, separator, value) is a user and password pair to redact."""
    user_sep, value = match.group(1), match.group(2)
    user = user_sep.rstrip(" /:")
    sep = user_sep[len(user) :]
    if value.lower() in _FIELD_WORDS or _plain_value(value) or _VERSION.fullmatch(value):
        return False
    if re.fullmatch(r"(?i)sha-?\d*|md5|h1", user):
        return False  # a digest or key fingerprint, `SHA256:wIBT...`, is published
    if sep == "/" and _looks_random(user + sep + value):
        return False  # one key with a slash in it (AWS secrets have them): redacted whole, later
    cue = _PAIR_CUE.search(text[max(0, match.start() - 160) : match.start()])
    if cue is not None and len(cue.group("gap") or "") > 40 and not _ENDS_AS_LABEL.search(cue[0]):
        cue = None  # a cue far back counts only when the words lead straight in: "... is x / y"
    cued = cue is not None
    if sep.strip() == "/":  # `input/output`, `src/main`: a slash pairs only after a cue
        # After "login is" or "creds for X:" any value is the password; after a weaker cue
        # ("the users are alice / bob") only one that looks like a password.
        gap = (cue.group("gap") or "") if cue else ""
        labelled = (
            cue is not None
            and cue.group("strong") is not None
            and (not gap.strip() or _ENDS_AS_LABEL.search(gap) is not None)
        )
        if user.lower() in _ACCOUNTS and " " in sep and _strong(value):
            return True  # "use root / pB*s23k-D5" names the account and its password
        if user.lower() in _ACCOUNTS and len(value) >= 6 and not _VERSION.fullmatch(value):
            if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
                return True  # "the grafana on my pi, admin/qwerty2024"
        return cued and ((" " in sep and labelled) or _secret_like(value) or _strong(value))
    if cued or user.lower() in _ACCOUNTS:
        return _secret_like(value) or (any(c.isdigit() for c in value) and len(value) >= 4)
    return _strong(value)


def _inside_arn(text: str, position: int) -> bool:
    """Whether `position` is inside an ARN (`arn:aws:secretsmanager:...:secret:prod/db-Xb7kQ2`): a
    resource's name, with `secret:` in it, and no secret."""
    return _ARN_BEFORE.search(text[max(0, position - 120) : position]) is not None


def _next_line_text(match: re.Match[str]) -> bool:
    """Whether a label that ends its line met, as its value, the first word of a line that goes on.
    Such a label names a value standing alone on the next line, not the first word of whatever
    follows ("deploy@host's password:" then "Permission denied, please try again")."""
    if "\n" not in match.group(1):
        return False
    end = match.string.find("\n", match.end(2))
    return bool(match.string[match.end(2) : None if end < 0 else end].strip())


def _labelled(match: re.Match[str]) -> str:
    label, value = match.group(1), match.group(2)
    if _code_not_value(value, label.rstrip()[-1:] == ":") or _next_line_text(match):
        return match.group(0)
    bare = value.strip("\"'.,;")
    if bare.lower() in _FIELD_WORDS and not re.match(r"(?i)\s*p(?:ass|w|wd|swd)", label):
        return match.group(0)  # `secretKey: password` maps a field; "the password: password" is one
    is_phrase = re.search(r"(?i)\b(?:is|was)\s*$", label) is not None
    if value[:1] in "\"'":  # a quoted word is the value itself: 'the password is "secret"'
        plain = _assigned_plain(bare)
    else:
        plain = _plain_value(bare) and (is_phrase or bare.lower() != "secret")
        if re.fullmatch(r"\d{6,}", bare) and re.match(r"(?i)p", label):
            plain = False  # "the local Administrator password is 14071989": digits are a password
    if plain:
        return match.group(0)
    if is_phrase and value[:1] not in "\"'":
        # After "is", only redact what looks like a secret, not an ordinary word.
        low = bare.lower()
        if low in _NOT_A_VALUE or (
            bare.isalpha() and (low.endswith(("ed", "ing")) or len(bare) < 4)
        ):
            return match.group(0)
    trail = value[len(value.rstrip(".,;")) :] if value[:1] not in "\"'" else ""
    return f"{label}{REDACTED}{trail}"


def redact_secrets(text: str) -> tuple[str, int]:
    """Replace secrets in `text` with `[REDACTED]`: the patterns (`redact_patterns`), then the learned
    model (`secret_tokens`) on the tokens they left.

    Returns:
        The redacted text and the number of secrets replaced.
    """
    text, count = redact_patterns(text)
    learned = secret_tokens.model()  # what no pattern names: the token and the words before it
    if learned is not None and text:
        text, found = learned.redact(text, keep=published)
        count += found
    return text, count


def redact_patterns(text: str) -> tuple[str, int]:
    """Replace the secrets the patterns name in `text` with `[REDACTED]`.

    Covers provider keys and tokens (AWS, GitHub, GitLab, Slack, Stripe, SendGrid, Twilio, Google,
    package-index tokens, ...), webhooks, JWTs, PEM private keys, Authorization headers, passwords in
    URLs and DSNs, `NAME_KEY=value` / `db_password=value` / `AccountKey=value` assignments,
    "password: x" / "password is x" / "password x", passwords labelled in other languages ("das
    Passwort ist x", "パスワードはxです"), prose ("reset the password to x", "the key is x"), 2FA
    backup and recovery codes, TOTP seeds, PINs and passcodes, Wi-Fi keys, `.pgpass` lines, session
    cookies, webhook tokens in a URL's path, XML elements and Markdown table columns named for a
    secret, and long random-looking tokens (base32 seeds, lower-case personal access tokens). Also
    passphrases of several words, security answers, a label far from its verb in other languages,
    a user and password joined by "and" or "with", `-u user -p x` and `-U user%x` flags, and a
    variable or file named for a secret "is" or "contains" a value, a password said alone in a
    chat just after someone asked for it, "it's X" just after a password prompt, a token given to a
    tool's `auth` or `login` command, a vendor's own `Authorization:` scheme, a wallet's keys, a seed
    phrase after its label or as a numbered list, a key file's bytes as a JSON array, a CSV column
    named for a secret, numbered backup codes, the answer to a security question, a keypad's code
    and "the password ... new one: X". Documented placeholders (`AKIA...EXAMPLE`,
    `user:password@`), public keys, certificates, fingerprints, integrity hashes, bcrypt hashes,
    encrypted values (sops, SealedSecrets), Google sign-in client ids, payment object ids and
    Bitcoin addresses stay.

    Returns:
        The redacted text and the number of secrets replaced.
    """
    if not text:
        return text, 0
    text = valid_text(text)  # what is redacted gets written: lone surrogates cannot be
    count = 0
    markers = public_markers(text)

    def sub(pattern: re.Pattern[str], repl: str, value: str) -> str:
        nonlocal count
        value, n = pattern.subn(repl, value)
        count += n
        return value

    def redact_each(
        pattern: re.Pattern[str], redacted: Callable[[re.Match[str]], str | None], value: str
    ) -> str:
        """Each match of `pattern` becomes what `redacted` makes of it (None leaves it), counted."""

        def repl(match: re.Match[str]) -> str:
            nonlocal count
            if markers and _public_context(match.string, match.start(), markers):
                return match.group(0)
            out = redacted(match)
            if out is None:
                return match.group(0)
            count += 1
            return out

        return pattern.sub(repl, value)

    def keep_label(
        pattern: re.Pattern[str], value: str, test: bool = False, flag: bool = False
    ) -> str:
        def redacted(match: re.Match[str]) -> str | None:
            secret = match.group(2)
            # After `=` or a password flag the value is the value: "secret" itself is one; after a
            # colon too, though "password: stored in the vault" says where it is.
            sep = match.group(1).rstrip(" \"'")[-1:]
            if _next_line_text(match):
                return None
            if _code_not_value(secret, sep == ":") or _public_context(
                match.string, match.start(2), markers
            ):
                return None
            if test:
                plain = _plain_value(secret)
            elif flag or sep == "=":
                plain = _assigned_plain(secret)
            else:
                plain = _plain_value(secret) and secret.strip("\"'").lower() != "secret"
            if plain or (test and not _secret_like(secret)):
                return None
            quote = secret[0] if secret[:1] in "\"'" and secret[-1:] == secret[:1] else ""
            return f"{match.group(1)}{quote}{REDACTED}{quote}"

        return redact_each(pattern, redacted, value)

    # A documented placeholder ends in a run of one character: `sk_test_xxxxxxxxxxxxxxxx`.
    text = redact_each(
        _TOKENS,
        lambda m: (
            None
            if _DOC_PLACEHOLDER.search(m.group()) or m.string[m.end() : m.end() + 1] == ">"
            else REDACTED
        ),
        text,
    )
    text = redact_each(
        _URL_PASSWORD,
        lambda m: (
            None
            if m.group(2).lower() in _URL_PLACEHOLDERS or _PLACEHOLDER.fullmatch(m.group(2))
            else f"{m.group(1)}{REDACTED}{m.group(3)}"
        ),
        text,
    )
    text = keep_label(_APP_PASSWORD, text)
    text = redact_each(
        _CONF_KEY_VALUE, lambda m: f"{m.group(1)}{REDACTED}" if _key_value(m[2]) else None, text
    )
    text = sub(_URL_TOKEN_USER, rf"\g<1>{REDACTED}\g<3>", text)
    text = sub(_AT_PAIR, rf"\g<1>{REDACTED}\g<3>", text)
    text = keep_label(_FLAG_ATTACHED, text, flag=True)
    text = keep_label(_FLAG_SPACED, text, flag=True)
    text = keep_label(_STDIN_PASSWORD, text, flag=True)
    text = redact_each(
        _EXPECT_SEND,
        lambda m: (
            f"{m.group(1)}{REDACTED}"
            if _SECRET_PROMPT.search(m["prompt"]) and not _assigned_plain(m["value"])
            else None
        ),
        text,
    )
    text = redact_each(
        _LINE_THEN_TOKEN,
        lambda m: (
            f"{m.group(1)}{REDACTED}"
            if _prints_secret(m.group(1)) and not _assigned_plain(m.group(2))
            else None
        ),
        text,
    )
    text = redact_each(
        _CHAT_REPLY, lambda m: f"{m.group(1)}{REDACTED}" if _chat_reply_secret(m) else None, text
    )
    text = redact_each(
        _ITS_VALUE, lambda m: f"{m.group(1)}{REDACTED}" if _its_password(m) else None, text
    )
    text = redact_each(
        _BYTE_ARRAY_KEY,
        lambda m: REDACTED if max(map(int, re.findall(r"\d+", m.group()))) <= 255 else None,
        text,
    )
    text = keep_label(_DECODED_KEY, text, flag=True)
    text, found = _csv_secret_columns(text)
    count += found
    text = redact_each(_CLI_AUTH, lambda m: f"{m.group(1)}{REDACTED}", text)
    text = redact_each(_WALLET_KEYS, lambda m: f"{m.group(1)}{REDACTED}", text)
    for seed in (_SEED_WORDS, _SEED_AFTER_LABEL):
        text = redact_each(
            seed,
            lambda m: (
                f"{m.group(1)}{REDACTED}" if len(m.group(2).split()) in SEED_LENGTHS else None
            ),
            text,
        )
    text = redact_each(
        _USER_THEN_PASSWORD,
        lambda m: (
            None
            if _assigned_plain(m.group(2))
            or _MYSQL_COMMAND.search(m.string, m.string.rfind("\n", 0, m.start()) + 1, m.start())
            else f"{m.group(1)}{REDACTED}"
        ),
        text,
    )
    text = keep_label(_MYSQL_SPACED, text, test=True)
    text = keep_label(_NAMED_IS, text, test=True)
    text = keep_label(_SMB_USER, text, flag=True)
    text = keep_label(_NAMED_ARGUMENT, text, flag=True)
    text = keep_label(_KEY_CALL, text, test=True)
    text = keep_label(_CAMEL_PROPERTY, text, flag=True)
    text = redact_each(
        _LOGIN_CALL, lambda m: f"{m.group(1)}{REDACTED}" if _key_value(m[2]) else None, text
    )
    text = redact_each(
        _QUOTED_PHRASE,
        lambda m: (
            f"{m.group(1)}{m.group(2)}{REDACTED}{m.group(4)}"
            if not _plain_value(m.group(3))
            else None
        ),
        text,
    )
    text = redact_each(
        _BARE_PHRASE,
        lambda m: (
            None
            if m.group(2).split()[0].lower() in _NOT_A_VALUE - {"correct"}
            else f"{m.group(1)}{REDACTED}"
        ),
        text,
    )
    text = redact_each(
        _SECURITY_ANSWER,
        lambda m: (
            None
            if len(m.group(2)) < 3 or _plain_value(m.group(2)) or m.group(2).lower() in _FIELD_WORDS
            else f"{m.group(1)}{REDACTED}"
        ),
        text,
    )
    for pattern in (_PAIR, _SPACED_PAIR):
        text = redact_each(
            pattern,
            lambda m: f"{m.group(1)}{REDACTED}" if _pair_password(m.string, m) else None,
            text,
        )
    text = keep_label(_AUTH_HEADER, text)
    text = keep_label(_BEARER, text)
    text = keep_label(_ENV_ASSIGN, text)
    text = keep_label(_KEY_ASSIGN, text)

    def suffixed(match: re.Match[str]) -> str | None:
        value = match.group(2)
        bare = value.strip("\"'")
        if _METADATA_SUFFIX.search(match.group(1)) or _CODE_VALUE.fullmatch(bare):
            return None
        if not _prose_secret(bare):
            return None
        quote = value[0] if value[:1] in "\"'" and value[-1:] == value[:1] else ""
        return f"{match.group(1)}{quote}{REDACTED}{quote}"

    text = redact_each(_SUFFIXED_ASSIGN, suffixed, text)
    text = keep_label(_WEAK_ASSIGN, text, test=True)

    def labelled(match: re.Match[str]) -> str | None:
        out = _labelled(match)
        return out if out != match.group(0) else None

    text = redact_each(_LABELLED, labelled, text)
    text = keep_label(_BARE_LABEL, text)

    def prose(match: re.Match[str]) -> str | None:
        value = match.group(2)
        if _next_line_text(match):
            return None
        if value[:1].isdigit() and _DIGIT_COLON.search(match.group(1)):
            return None  # "token expired at 10:22:05Z": a colon between digits is a time or a port
        # "--secret-id arn:aws:...": the label stands before the ARN, its value inside it.
        if _inside_arn(match.string, match.start(2)):
            return None
        # `key`, `token`, `clave` (key), `parola` (word) name other things too: stricter there.
        password = _NOT_PASSWORD_LABEL.match(match.group(1)) is None
        quoted = match.group(1)[-1:] in "\"'`“"  # "requirepass set to `foobared`"
        if not _prose_secret(value, password) and not (
            quoted and password and len(value) >= 4 and not _plain_value(value)
        ):
            return None
        bare = value.rstrip(".,;:)!?")
        return f"{match.group(1)}{REDACTED}{value[len(bare) :]}"

    for pattern in (_FOREIGN, _FOREIGN_FAR, _CJK, _PROSE, _BARE_PASS, _LOGIN_WITH, _USE_TO_LOG_IN):
        text = redact_each(pattern, prose, text)

    def and_pair(match: re.Match[str]) -> str | None:
        value = match.group("value")
        bare = value.rstrip(".,;:)!?")
        strong = match.group("strong") is not None
        if not (_prose_secret(bare, password=True) if strong else _strong(bare)):
            return None
        return f"{match.group(1)}{REDACTED}{value[len(bare) :]}"

    text = redact_each(_AND_PAIR, and_pair, text)
    text = redact_each(
        _SLASH_AT,
        lambda m: (
            f"{m.group(1)}{REDACTED}{m.group(3)}"
            if _strong(m.group(2))
            or _ORACLE_TOOL.search(m.string[max(0, m.start() - 64) : m.start()])
            else None
        ),
        text,
    )
    text = redact_each(
        _BARE_KEY,
        lambda m: (
            f"{m.group(1)}{REDACTED}"
            if _looks_random(m.group(2))
            or _HEX_KEY.fullmatch(m.group(2))
            or _random_word(m.group(2))
            else None
        ),
        text,
    )
    # Codes and cookies: the label stays, whatever value its pattern matched goes.
    for pattern in (
        _BACKUP_CODES, _PIN, _PIN_BARE, _ONE_CODE, _SESSION_COOKIE, _LICENCE_KEY, _SECURITY_QA,
        _KEYPAD_CODE,
    ):  # fmt: skip
        text = redact_each(pattern, lambda m: f"{m.group(1)}{REDACTED}", text)
    text = redact_each(
        _NUMBERED_CODE,
        lambda m: (
            f"{m.group(1)}{REDACTED}"
            if _CODES_TITLE.search(m.string, max(0, m.start() - 300), m.start())
            else None
        ),
        text,
    )
    text = redact_each(
        _NUMBERED_WORDS, lambda m: REDACTED if _numbered_seed(m.group()) else None, text
    )
    text = redact_each(
        _NEW_ONE,
        lambda m: (
            f"{m.group(1)}{REDACTED}"
            if len(m.group(2)) >= 6 and not _plain_value(m.group(2))
            else None
        ),
        text,
    )

    def hook_url(match: re.Match[str]) -> str | None:
        url, tokens = _PATH_TOKEN.subn(REDACTED, match.group())
        return url if tokens else None

    text = redact_each(_HOOK_URL, hook_url, text)
    text = redact_each(
        _CHANGED_TO,
        lambda m: f"{m.group(1)}{REDACTED}" if _strong(m.group(2).rstrip(".,;")) else None,
        text,
    )

    def grouped_seed(match: re.Match[str]) -> str | None:
        before = match.string[max(0, match.start() - 90) : match.start()]
        groups = match.group().split()
        if sum(any(c.isdigit() for c in g) for g in groups) < 2:
            return None
        # Six or more groups of base32 characters are a seed whatever precedes them.
        base32 = len(groups) >= 6 and (_BASE32_GROUPS.fullmatch(match.group().lower()) is not None)
        return REDACTED if base32 or _OTP_CUE.search(before) else None

    text = redact_each(_GROUPED_SEED, grouped_seed, text)
    text = keep_label(_PGPASS, text)
    text = keep_label(_WIFI_QR, text)

    def xml(match: re.Match[str]) -> str | None:
        value, tag = match.group(3), match.group(2).lower()
        strong = re.search(r"pass|secret|token|api_?key", tag) is not None
        if _plain_value(value) or (not strong and not _secret_like(value)):
            return None
        return f"{match.group(1)}{REDACTED}{match.group(4)}"

    text = redact_each(_XML_SECRET, xml, text)
    text, n = _redact_tables(text)
    count += n
    text = redact_each(
        _LOWER_TOKEN,
        lambda m: (
            REDACTED if _random_lower(m.group()) and not _PUBLIC_TOKEN.match(m.group()) else None
        ),
        text,
    )

    def base32(match: re.Match[str]) -> str | None:
        token = match.group()
        before = match.string[max(0, match.start() - 60) : match.start()]
        if not any(c.isdigit() for c in token) or not any(c.isalpha() for c in token):
            return None
        if len(token) < 32 and not _OTP_CUE.search(before):
            return None
        return REDACTED

    text = redact_each(_BASE32, base32, text)

    def high_entropy(match: re.Match[str]) -> str | None:
        before = match.string[max(0, match.start() - 24) : match.start()]
        token = match.group()
        value = token.partition("=")[2]  # `NAME=value` runs together in this token's characters
        if (
            _PUBLIC_BEFORE.search(before)
            or _PUBLIC_TOKEN.match(token)
            or _PUBLIC_TOKEN.match(value)
            or _OBJECT_ID.fullmatch(value)
            or not _looks_random(token)
        ):
            return None
        return REDACTED

    text = redact_each(_HIGH_ENTROPY, high_entropy, text)

    def word_token(match: re.Match[str]) -> str | None:
        token, trail = match.group(2), match.group(3)
        if _password_shaped(token):
            return f"{match.group(1)}{REDACTED}{trail}"
        ending = trail.rstrip(".,;:)]'\"`")  # "`Welcome123!`": the ! is the password's own
        if ending and _password_shaped(token + ending):
            return f"{match.group(1)}{REDACTED}{trail[len(ending) :]}"
        return None

    text = redact_each(
        _WORD_TOKEN,
        word_token,
        text,
    )
    return text, count


_OBJECT_ID: Final = re.compile(
    r"(?:ch|pi|pm|cus|in|sub|txn|re|py|evt|prod|price|seti|cs|acct|src|card|ba|po|tr)_[A-Za-z0-9]{14,}"
)
"""A payment provider's object id (`ch_3Qw...`, `cus_...`): it names a record, it opens nothing."""
_RECORD_ID: Final = re.compile(rf"(?i)\d{{4}}-?\d{{2}}-?\d{{2}}T\d|{secret_tokens.UUID}")
"""A time stamp (`20261128T165250Z-2817b1`, a run's id) or a UUID at the start of a token."""


_PUBLIC_LABEL: Final = re.compile(
    r"(?i)\b(?:public[_ -]?key|pub[_-]?key|(?:data-)?site[_-]?key)[\"']?\s*(?:=|:|=>)\s*[\"']?$"
)
"""WireGuard's `PublicKey = ...`, reCAPTCHA's `data-sitekey="..."`: keys made to be handed out."""
_PUBLIC_BLOCK: Final = re.compile(r"-----(BEGIN|END) ([A-Z0-9 ]+)-----")
PUBLIC_LOOKBACK: Final = 8_000
_BLOCK_BODY: Final = re.compile(r"[ \t]*(?:\r?\n[ \t]*[A-Za-z0-9+/=]*)*")
"""Inside a PEM block nothing but base64 comes before the value (a cut-off block ends there)."""
_NEXT_DOCUMENT: Final = re.compile(r"\n---|\bkind:")
_PUBLIC_MARKER: Final = re.compile(
    r"(?i)(?P<pem>-----BEGIN )|(?P<sealed>encryptedData:)|(?P<ssh>ssh-|ecdsa-sha2)|(?P<sops>ENC\[)"
    r"|(?P<arn>\barn:)"
    r"|(?P<label>public[_ -]?key|pub[_-]?key|site[_-]?key)|(?P<oauth>\.apps\.googleusercontent\.com)"
)
SSH_KEY_MAX: Final = 4_000
"""An SSH public key's line is shorter than this (an RSA 8192 key is about 1,400 characters)."""
_SSH_KEY_BODY: Final = re.compile(
    r"(?:ssh-(?:ed25519|rsa|dss)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@\S+)\s+AAAA[A-Za-z0-9+/=]*$"
)
_GOOGLE_CLIENT_ID: Final = re.compile(r"(?:\w+=)?[\"']?\d+-[a-z0-9]+\.apps\.googleusercontent\.com")
"""A Google OAuth client id: shipped in every web page that signs in with Google."""
_ALL_MARKERS: Final = frozenset({"pem", "sealed", "ssh", "label", "sops", "arn", "oauth"})


def public_markers(text: str) -> frozenset[str]:
    """Which of `_public_context`'s contexts `text` can hold at all: read once per text, so a long
    text with many values does not look back for each of them in vain."""
    return frozenset(m.lastgroup or "" for m in _PUBLIC_MARKER.finditer(text))


def _public_context(text: str, start: int, markers: frozenset[str] = _ALL_MARKERS) -> bool:
    """Whether the value at `start` is public by where it stands: inside an ARN (a name), after a
    public-key or site-key label, inside a PEM public key or certificate, inside an SSH public key's
    body, inside a value sops encrypted, or among a SealedSecret's `encryptedData` (encrypted
    values, made to be committed). Each look back is bounded: this runs for every candidate value
    of a long text."""
    if "arn" in markers and _inside_arn(text, start):
        return True
    if "label" in markers and _PUBLIC_LABEL.search(text, max(0, start - 40), start):
        return True
    if "oauth" in markers and _GOOGLE_CLIENT_ID.match(text, start):
        return True
    if "ssh" in markers:
        line = max(text.rfind("\n", max(0, start - SSH_KEY_MAX), start) + 1, start - SSH_KEY_MAX)
        if _SSH_KEY_BODY.search(text, max(0, line), start):
            return True
    if "pem" in markers:
        begin = text.rfind("-----BEGIN ", max(0, start - PUBLIC_LOOKBACK), start)
        label = _PUBLIC_BLOCK.match(text, begin) if begin >= 0 else None
        if (
            label is not None
            and "PRIVATE" not in label[2]
            and _BLOCK_BODY.fullmatch(text, label.end(), start)
        ):
            return True
    if "sops" in markers:
        line = text.rfind("\n", max(0, start - PUBLIC_LOOKBACK), start) + 1
        opened = text.rfind("ENC[", max(line, start - PUBLIC_LOOKBACK), start + 4)
        if opened >= 0 and text.find("]", opened, start) < 0:
            return True  # a value sops encrypted: `ENC[AES256_GCM,data:...,iv:...]`
    if "sealed" not in markers:
        return False
    sealed = text.rfind("encryptedData:", max(0, start - PUBLIC_LOOKBACK), start)
    return (
        sealed >= 0
        and text.rfind("SealedSecret", max(0, sealed - PUBLIC_LOOKBACK), sealed) >= 0
        and not _NEXT_DOCUMENT.search(text, sealed, start)
    )


def published(text: str, start: int, end: int) -> bool:
    """Whether the token at `text[start:end]` is made to be shown: a digest, a fingerprint, a public
    or publishable key, an object id, a time stamp or UUID, the value of a name for a hash or a
    file, or part of an ARN. The patterns keep these; the learned model (`secret_tokens`) must too."""
    token, before = text[start:end], text[max(0, start - 80) : start]
    return bool(
        _shown_or_named(token)
        or _DIGEST_START.match(token)
        or _OBJECT_ID.fullmatch(token)
        or _RECORD_ID.match(token)
        or _PUBLIC_BEFORE.search(before)
        or _COMMIT_CUE.search(before)
        or _METADATA_SUFFIX.search(before.rstrip("\"'"))
        or _public_context(text, start)
    )


def has_secret(text: str) -> bool:
    """Whether `text` holds anything `redact_secrets` would replace."""
    return redact_secrets(text)[1] > 0


def _random_word(token: str) -> bool:
    """A 12+ character token that mixes letters and digits at random: a password or key.

    Names carry digits in one place ("Windows11Pro", "ISO27001"); keys switch between letters and
    digits again and again, or hold symbols.
    """
    if (
        len(token) < 12
        or not any(c.isdigit() for c in token)
        or not any(c.isalpha() for c in token)
    ):
        return False
    if max(len(part) for part in re.split(r"[-_.:/]", token)) < 10:
        return False  # short parts joined up: a model or version name such as gpt-4o-2024-07-18
    if any(not c.isalnum() and c not in "-_.:/" for c in token):
        return True
    switches = sum(a.isdigit() != b.isdigit() for a, b in zip(token, token[1:], strict=False))
    # Names are made of words: most of their letters stand in runs of lower-case letters.
    worded = sum(
        len(run)
        for run in re.findall(r"[a-z]{3,}", token)
        if sum(c in "aeiouy" for c in run) >= 0.3 * len(run)  # a syllable, not random letters
    )
    mixed = any(c.isupper() for c in token) and any(c.islower() for c in token)
    return switches >= 5 or (mixed and len(token) >= 16 and worded < 0.4 * len(token))


def is_secret_name(name: str) -> bool:
    """Whether a would-be entity name is a redaction mark or itself a secret: never an entity."""
    name = name.strip()
    return (
        "REDACTED" in name.upper()
        or has_secret(name)
        or any(_random_word(token) or _symbol_password(token) for token in name.split())
    )


def redacted_away(name: str, raw: str, clean: str) -> bool:
    """Whether redacting `raw` into `clean` took `name` out: a password, however plain it reads."""
    name = name.strip()
    return bool(name) and name in raw and name not in clean


def _symbol_password(token: str) -> bool:
    """`Hunter2x!`, `Tr0ub4dor&3`: letters, digits and a symbol no name is written with."""
    return _strong(token) and any(c in "!#$%^&*+=~?" for c in token)


@functools.lru_cache(maxsize=4096)
def _redacted_short(text: str) -> str:
    return redact_secrets(text)[0]


def redact_deep(value: Any) -> Any:
    """`value` (JSON-like: dicts, lists, strings) with every string redacted, keys included."""
    if isinstance(value, str):
        # A trace repeats its keys and the memories it retrieved (so do the next runs' traces).
        return _redacted_short(value) if len(value) <= 2000 else redact_secrets(value)[0]
    if isinstance(value, dict):
        return {redact_deep(k): redact_deep(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_deep(v) for v in value]
    return value


class RedactingFilter(logging.Filter):
    """A logging filter that redacts secrets from every record before a handler writes it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True
        clean, count = redact_secrets(message)
        if count:
            record.msg, record.args = clean, ()
        return True


def redact_logs() -> None:
    """Put `RedactingFilter` on every handler of the root logger (the service log, stderr)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
