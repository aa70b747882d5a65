"""Pairing as an operator and a user do it: `stella-server device add|list|revoke` and
`stella-chat --pair / --credentials`, real processes against a gateway on a non-loopback
address (where only paired devices get in)."""

from __future__ import annotations

import asyncio
import json
import re
import stat
import subprocess
import sys
from pathlib import Path

from remote_api.shared.processes import free_port, running
from remote_api.state import LocalState

from .conftest import expected

BIN = Path(sys.executable).parent


def run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / tool), *args], capture_output=True, text=True, timeout=60)


async def token_revoked(data: Path, jti: str) -> bool:
    state = LocalState(data)
    try:
        return await state.token_revoked(jti)
    finally:
        await state.close()


def test_pair_chat_list_and_revoke_from_the_command_line(fake_upstream, tmp_path):
    data = tmp_path / "state"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    state = ["--data-dir", str(data)]
    with running([str(BIN / "stella-server"), "serve", "--host", "0.0.0.0", "--port", str(port), "--upstream",
                  fake_upstream.url, *state], url, timeout=60, grace=10, stderr=subprocess.PIPE, text=True):
        stranger = run("stella-chat", "--server", url, "--connect-timeout", "2", "Hi")  # never sends in clear
        added = run("stella-server", "device", "add", "laptop", *state)
        code = re.search(r"[0-9A-Z]{5}-[0-9A-Z]{5}", added.stdout).group(0)
        creds = tmp_path / "laptop.json"
        paired = run("stella-chat", "--server", url, "--pair", code, "--credentials", str(creds),
                     "--max-tokens", "5", "Hi")
        again = run("stella-chat", "--credentials", str(creds), "--max-tokens", "5", "Hi")
        reused = run("stella-chat", "--server", url, "--pair", code, "--credentials", str(tmp_path / "x.json"),
                     "Hi")
        listed = json.loads(run("stella-server", "device", "list", "--json", *state).stdout)
        table = run("stella-server", "device", "list", *state).stdout
        revoked = run("stella-server", "device", "revoke", "laptop", *state)
        after = run("stella-chat", "--credentials", str(creds), "Hi")
        twice = run("stella-server", "device", "revoke", "laptop", *state)
        jti = run("stella-server", "device", "revoke", "--jti", "some-token-id", *state)
        bad_name = run("stella-server", "device", "add", "no spaces!", *state)
    assert stranger.returncode == 5 and "no credentials for" in stranger.stderr and "--pair CODE" in stranger.stderr
    assert added.returncode == 0 and "stella-chat" in added.stdout
    assert paired.returncode == 0, paired.stderr
    assert paired.stdout.strip() == again.stdout.strip() == expected(5).strip()
    assert stat.S_IMODE(creds.stat().st_mode) == 0o600
    assert json.loads(creds.read_text()).keys() == {"gateway_url", "device_id", "refresh_credential"}
    assert reused.returncode == 5 and "already used" in reused.stderr
    assert [(d["name"], d["revoked"]) for d in listed] == [("laptop", None)] and listed[0]["last_refresh"]
    assert "laptop" in table and "active" in table
    assert revoked.returncode == 0 and "Revoked device 'laptop'" in revoked.stdout
    assert after.returncode == 5 and "revoked" in after.stderr
    assert twice.returncode == 1 and "no active device" in twice.stderr
    assert jti.returncode == 0 and asyncio.run(token_revoked(data, "some-token-id"))
    assert bad_name.returncode == 2 and "device name" in bad_name.stderr
