"""Where the marketplace's address and your API key come from: arguments first, then the environment
(``GRADUAL_URL``, ``GRADUAL_API_KEY``), then a TOML file (``--config``, ``GRADUAL_CONFIG``, or
``$XDG_CONFIG_HOME/gradual/config.toml``, by default ``~/.config/gradual/config.toml``)::

    url = "https://gradual.example.org"
    api_key = "gradual_..."
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .errors import GradualError

ENV_URL = "GRADUAL_URL"
ENV_KEY = "GRADUAL_API_KEY"
ENV_CONFIG = "GRADUAL_CONFIG"


class ConfigError(GradualError):
    """The settings are missing or the config file cannot be read."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="config")


@dataclass(frozen=True)
class Settings:
    url: str
    key: str | None
    #: the config file read, if any
    source: Path | None = None


def default_config_path(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "gradual" / "config.toml"


def read_config(path: Path) -> dict[str, str]:
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"the config file {path} is not valid TOML: {exc}") from exc
    found: dict[str, str] = {}
    for name, aliases in (("url", ("url",)), ("key", ("api_key", "key"))):
        for alias in aliases:
            value = data.get(alias)
            if value is None:
                continue
            if not isinstance(value, str):
                raise ConfigError(f"the config file {path}: {alias} must be text")
            found[name] = value
            break
    return found


def resolve(
    *,
    url: str | None = None,
    key: str | None = None,
    config: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    require_key: bool = False,
) -> Settings:
    """The settings to use: ``url``/``key`` as given, else the environment, else the config file.
    A config file named explicitly (argument or ``GRADUAL_CONFIG``) must exist; the default one may not."""
    env = os.environ if environ is None else environ
    named = config or env.get(ENV_CONFIG)
    path = Path(named).expanduser() if named else default_config_path(env)
    from_file: dict[str, str] = {}
    source: Path | None = None
    if named or path.is_file():
        from_file, source = read_config(path), path
    final_url = url or env.get(ENV_URL) or from_file.get("url")
    final_key = key or env.get(ENV_KEY) or from_file.get("key")
    if not final_url:
        raise ConfigError(f"no marketplace address: give --url, set {ENV_URL}, or put url = \"...\" in {path}")
    if require_key and not final_key:
        raise ConfigError(f"no API key: give --key, set {ENV_KEY}, or put api_key = \"...\" in {path}")
    return Settings(url=final_url, key=final_key or None, source=source)
