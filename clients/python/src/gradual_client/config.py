"""Where the marketplace's address and your API key come from: arguments first, then the environment
(``GRADUAL_URL``, ``GRADUAL_API_KEY``), then a profile of a TOML file (``--config``, ``GRADUAL_CONFIG``, or
``$XDG_CONFIG_HOME/gradual/config.toml``, by default ``~/.config/gradual/config.toml``)::

    url = "https://gradual.example.org"        # the default profile, as older versions wrote it
    api_key = "gradual_..."

    [profiles.default]                          # what `gradual login` / `gradual configure` write
    url = "https://gradual.example.org"
    api_key = "gradual_..."

    [profiles.work]                             # --profile work, or GRADUAL_PROFILE=work
    url = "https://market.example.com"
    api_key = "gradual_..."

The profile is ``--profile``, else ``GRADUAL_PROFILE``, else ``default``. :func:`save_profile` writes one
profile (the file is readable by you alone: mode 0600).
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import GradualError

ENV_URL = "GRADUAL_URL"
ENV_KEY = "GRADUAL_API_KEY"
ENV_CONFIG = "GRADUAL_CONFIG"
ENV_PROFILE = "GRADUAL_PROFILE"
DEFAULT_PROFILE = "default"


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
    #: the profile asked for
    profile: str = DEFAULT_PROFILE


def default_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/gradual/config.toml`` (``~/.config/...``); on Windows ``%APPDATA%\\gradual\\config.toml``."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or (env.get("APPDATA") if os.name == "nt" else None) or str(Path.home() / ".config")
    return Path(base) / "gradual" / "config.toml"


def config_path(config: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """The config file: ``config`` if given, else ``GRADUAL_CONFIG``, else the default one."""
    env = os.environ if environ is None else environ
    named = config or env.get(ENV_CONFIG)
    return Path(named).expanduser() if named else default_config_path(env)


def profile_name(profile: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return profile or env.get(ENV_PROFILE) or DEFAULT_PROFILE


def _load(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"the config file {path} is not valid TOML: {exc}") from exc


def _settings_of(table: Mapping[str, Any], where: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, aliases in (("url", ("url",)), ("key", ("api_key", "key"))):
        for alias in aliases:
            value = table.get(alias)
            if value is None:
                continue
            if not isinstance(value, str):
                raise ConfigError(f"{where}: {alias} must be text")
            found[name] = value
            break
    return found


def read_config(path: Path, profile: str = DEFAULT_PROFILE) -> dict[str, str]:
    """The ``url`` and ``key`` of a profile of the file. The default profile is ``[profiles.default]`` over the
    file's top-level keys; another profile must be in the file."""
    data = _load(path)
    profiles = data.get("profiles") or {}
    if not isinstance(profiles, dict):
        raise ConfigError(f"the config file {path}: profiles must be a table")
    table = profiles.get(profile)
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"the config file {path}: profiles.{profile} must be a table")
    if profile == DEFAULT_PROFILE:
        return _settings_of(data, f"the config file {path}") | _settings_of(table or {}, f"the config file {path}")
    if table is None:
        known = ", ".join(sorted(profiles)) or "none"
        raise ConfigError(f"the config file {path} has no profile {profile!r} (profiles: {known})")
    return _settings_of(table, f"the config file {path}, profile {profile}")


def resolve(
    *,
    url: str | None = None,
    key: str | None = None,
    config: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    require_key: bool = False,
    profile: str | None = None,
) -> Settings:
    """The settings to use: ``url``/``key`` as given, else the environment, else the profile in the config
    file. A config file named explicitly (argument or ``GRADUAL_CONFIG``) must exist; the default one may not;
    a profile other than the default one named (argument or ``GRADUAL_PROFILE``) must be in the file."""
    env = os.environ if environ is None else environ
    named = config or env.get(ENV_CONFIG)
    path = config_path(config, env)
    chosen = profile_name(profile, env)
    from_file: dict[str, str] = {}
    source: Path | None = None
    if named or path.is_file():
        from_file, source = read_config(path, chosen), path
    elif chosen != DEFAULT_PROFILE:
        raise ConfigError(f"no profile {chosen!r}: there is no config file {path} (make one with gradual login)")
    final_url = url or env.get(ENV_URL) or from_file.get("url")
    final_key = key or env.get(ENV_KEY) or from_file.get("key")
    if not final_url:
        raise ConfigError(f"no marketplace address: give --url, set {ENV_URL}, or run gradual login --url ...")
    if require_key and not final_key:
        raise ConfigError(f"no API key: give --key, set {ENV_KEY}, or run gradual login (or gradual configure)")
    return Settings(url=final_url, key=final_key or None, source=source, profile=chosen)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string: JSON's escapes are TOML's
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise ConfigError(f"cannot write {type(value).__name__} values to the config file")


def _toml_key(name: str) -> str:
    bare = name and all(c.isascii() and (c.isalnum() or c in "-_") for c in name)
    return name if bare else json.dumps(name, ensure_ascii=False)


def _dump(data: Mapping[str, Any]) -> str:
    lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in data.items() if k != "profiles" and not isinstance(v, dict)]
    tables = {k: v for k, v in data.items() if k != "profiles" and isinstance(v, dict)}
    for name, table in [*tables.items(), *((f"profiles.{_toml_key(p)}", t) for p, t in data.get("profiles", {}).items())]:
        lines += ["", f"[{name if name.startswith('profiles.') else _toml_key(name)}]"]
        lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines).lstrip("\n") + "\n"


def save_profile(path: Path, profile: str, *, url: str, key: str) -> None:
    """Write ``url`` and ``api_key`` as ``[profiles.<profile>]`` of the file, keeping its other profiles; the file
    is made (with its folder) if need be, readable and writable by you alone (0600). For the default profile
    the file's older top-level ``url``/``api_key`` are dropped (the profile replaces them)."""
    data = _load(path) if path.is_file() else {}
    profiles = dict(data.get("profiles") or {})
    if profile == DEFAULT_PROFILE:
        data = {k: v for k, v in data.items() if k not in ("url", "api_key", "key")}
    profiles[profile] = {**dict(profiles.get(profile) or {}), "url": url, "api_key": key}
    data["profiles"] = profiles
    text = _dump(data)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(path.name + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temporary, 0o600)  # the mode os.open gave may be narrowed by umask, never widened; say it plainly
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
