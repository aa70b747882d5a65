"""The config loader: TOML, env overrides, and errors that name the setting and the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from remote_api.config import ServerConfig
from remote_api.shared.config_loader import ConfigError, load_config


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "stella.toml"
    path.write_text(text)
    return path


def test_defaults_need_no_file():
    cfg = load_config(ServerConfig, None, env={})
    assert cfg.gateway.port == 8765 and cfg.gateway.upstreams == [] and cfg.llama.binary is None


def test_toml_then_env_overrides(tmp_path):
    path = _write(tmp_path, '[gateway]\nport = 9000\nupstreams = ["http://a:8080"]\n'
                            '[link]\nheartbeat_interval = 1\n[llama]\nmodel = "~/m.gguf"\n')
    env = {"STELLA_GATEWAY__PORT": "9100", "STELLA_LINK__HEARTBEAT_TIMEOUT": "0.5",
           "STELLA_GATEWAY__UPSTREAMS": "http://b:1, http://c:2", "OTHER": "x"}
    cfg = load_config(ServerConfig, path, env=env)
    assert cfg.gateway.port == 9100
    assert cfg.gateway.upstreams == ["http://b:1", "http://c:2"]
    assert cfg.link.heartbeat_interval == 1.0 and isinstance(cfg.link.heartbeat_interval, float)
    assert cfg.link.heartbeat_timeout == 0.5
    assert cfg.llama.model == Path.home() / "m.gguf"


@pytest.mark.parametrize(("text", "env", "message"), [
    ("[gateway]\nprot = 1\n", {},
     r"unknown setting 'gateway\.prot' in .*stella\.toml; known settings here: allowed_origins, api, host"),
    ("[gateway]\nport = 'x'\n", {}, r"setting 'gateway\.port' in .*stella\.toml: expected a whole number, got 'x'"),
    ("[gateway]\napi = 'gpt'\n", {}, r"expected one of 'chat', 'completion', got 'gpt'"),
    ("gateway = 3\n", {}, r"setting 'gateway' in .* must be a table"),
    ("[gateway\n", {}, r"is not valid TOML"),
    ("", {"STELLA_GATEWAY__PORT": "eighty"}, r"environment variable STELLA_GATEWAY__PORT: expected a whole number"),
    ("", {"STELLA_LINK__HEARTBEAT_INTERVAL": "-1"}, r"heartbeat_interval' must be positive.*section 'link'"),
])
def test_bad_config_is_a_clear_error(tmp_path, text, env, message):
    with pytest.raises(ConfigError, match=message):
        load_config(ServerConfig, _write(tmp_path, text), env=env)


def test_missing_file_says_so(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(ServerConfig, tmp_path / "nope.toml", env={})


def test_the_app_and_its_embedded_gateway_share_one_environment_without_tripping_on_each_other():
    """`stella run` starts the engine and the gateway from one environment: each takes its own
    sections and leaves the other's alone; a section neither knows is still an error."""
    from sidecar.config import load_app_config, server_environment

    env = {"STELLA_CHAT__TEMPERATURE": "0.2", "STELLA_STATE__KEY": "k", "STELLA_GATEWAY__PORT": "9000",
           "STELLA_LINK__HEARTBEAT_INTERVAL": "3.5", "PATH": "/usr/bin"}
    app = load_app_config(None, env)
    assert app.chat.temperature == 0.2 and app.link.heartbeat_interval == 3.5
    gateway_env = server_environment(env)
    assert "STELLA_CHAT__TEMPERATURE" not in gateway_env and gateway_env["PATH"] == "/usr/bin"
    server = load_config(ServerConfig, None, env=gateway_env)
    assert server.gateway.port == 9000 and server.link.heartbeat_interval == 3.5
    with pytest.raises(ConfigError, match="unknown setting 'chatt'"):
        load_app_config(None, {"STELLA_CHATT__TEMPERATURE": "0.2"})
    with pytest.raises(ConfigError, match="unknown setting 'chat'"):
        load_config(ServerConfig, None, env={"STELLA_CHAT__TEMPERATURE": "0.2"})  # the gateway alone: a typo
