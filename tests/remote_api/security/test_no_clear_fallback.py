"""A client without credentials never talks in clear. Another local user who grabs a loopback
port first and runs a gateway that lets anyone in gets no session and no word: finding no
credentials left by a local gateway and a server already answering there (its /health only), the
client stops with an error naming that file and how to pair. (While nothing answers it waits:
the app may start before its gateway, `test_embedded.py`.) A remote URL without credentials is
refused at once. The user-facing commands say so."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from remote_api.client import LinkClient, LinkRefused
from remote_api.credentials import local_credentials_path
from tests.remote_api.harness import FAST, GatewayThread

from .conftest import HI

PAIR = "--pair CODE"


def test_a_loopback_client_without_credentials_gives_a_squatting_gateway_nothing(fake_upstream):
    # The squatter: a gateway on loopback that authenticates nobody and seals nothing.
    with GatewayThread([fake_upstream.url], config=FAST) as squatter:

        async def scenario():
            client = LinkClient(squatter.url, FAST)
            client.chat(HI, max_tokens=4)
            with pytest.raises(LinkRefused) as failed:
                await client.connect(10)
            await client.close()
            return str(failed.value)

        message = asyncio.run(scenario())
        sessions = squatter.call(lambda g: len(g.registry))
    assert sessions == 0 and fake_upstream.generations == 0  # no hello, no prompt reached it
    assert str(local_credentials_path(squatter.port)) in message and PAIR in message
    assert "never talks to a gateway in clear" in message


def test_a_remote_url_without_credentials_is_refused_at_once():
    async def scenario():
        client = LinkClient("http://192.0.2.10:8765", FAST)  # TEST-NET: nothing may be sent there
        with pytest.raises(LinkRefused) as refused:
            await client.connect(10)
        await client.close()
        return refused.value

    refused = asyncio.run(scenario())
    assert refused.code == "no_credentials" and PAIR in refused.action and "stella-server device add" in refused.action


def test_an_anonymous_client_cannot_be_asked_to_seal_or_use_credentials():
    with pytest.raises(ValueError, match="anonymous"):
        LinkClient("http://127.0.0.1:9", FAST, anonymous=True, seal=True)


@pytest.mark.parametrize("command", [["remote_api.chat_cli", "hi", "--connect-timeout", "1"],
                                     ["sidecar", "run", "--text", "hi"]])
def test_the_commands_say_which_file_is_missing_and_how_to_pair(command, fake_upstream, tmp_path, subprocess_env):
    with GatewayThread([fake_upstream.url], config=FAST) as squatter:
        proc = subprocess.run(
            [sys.executable, "-m", *command, "--server", squatter.url,
             *(["--audio-out", str(tmp_path / "out.wav")] if command[0] == "sidecar" else [])],
            capture_output=True, text=True, timeout=120,
            env={**subprocess_env, "STELLA_LINK__CONNECT_TIMEOUT": "1"})
        sessions = squatter.call(lambda g: len(g.registry))
    assert proc.returncode != 0 and sessions == 0
    assert str(local_credentials_path(squatter.port)) in proc.stderr and PAIR in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
