"""Cloudflare credentials: an API token, or the OAuth token of a Wrangler login."""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

from octygraph.llm.errors import LLMConfigError

# A token this close to expiry would die mid-run; treat it as expired.
_SKEW = timedelta(seconds=30)


def wrangler_config_paths(env: Mapping[str, str], platform: str = sys.platform) -> list[Path]:
    """Where Wrangler keeps its login, most specific first.

    Wrangler uses `~/.wrangler` when that folder exists (older installs), else the platform's
    config folder: `~/Library/Preferences/.wrangler` on macOS, `$XDG_CONFIG_HOME/.wrangler`
    (default `~/.config/.wrangler`) elsewhere.
    """
    home = Path(env.get("HOME") or Path.home())
    legacy = home / ".wrangler" / "config" / "default.toml"
    if platform == "darwin":
        current = home / "Library" / "Preferences" / ".wrangler" / "config" / "default.toml"
    else:
        xdg = env.get("XDG_CONFIG_HOME") or str(home / ".config")
        current = Path(xdg) / ".wrangler" / "config" / "default.toml"
    return [legacy, current]


def _parse_time(raw: object) -> datetime | None:
    if isinstance(raw, datetime):
        value = raw
    elif isinstance(raw, str) and raw.strip():
        try:
            value = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def read_wrangler_token(
    env: Mapping[str, str], *, now: datetime | None = None, platform: str = sys.platform
) -> str:
    """The OAuth token of the local Wrangler login.

    Raises:
        LLMConfigError: No login is found, or it has expired.
    """
    now = now or datetime.now(UTC)
    for path in wrangler_config_paths(env, platform):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
        token = data.get("oauth_token")
        if not isinstance(token, str) or not token:
            continue
        expires = _parse_time(data.get("expiration_time"))
        if expires is not None and expires - _SKEW <= now:
            raise LLMConfigError(
                "The Cloudflare Wrangler login has expired; "
                "run `npx wrangler whoami` to refresh it."
            )
        return token
    raise LLMConfigError(
        "Workers AI models need CLOUDFLARE_API_TOKEN or a Wrangler login; "
        "run `npx wrangler login` or set CLOUDFLARE_API_TOKEN."
    )
