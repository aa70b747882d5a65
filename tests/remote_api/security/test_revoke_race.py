"""A revoke is never undone by refreshes in flight (Redis mode). Each of 20 rounds pairs a device
and fires 50 parallel `POST /auth/refresh` at two real replicas while the operator revokes the
device in the middle of them; afterwards every device must be revoked and refused."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator

import httpx
import pytest

from remote_api.config import ServerConfig, StateSection
from remote_api.credentials import Credentials
from remote_api.gateway_setup import open_state
from remote_api.pairing import refresh_proof

from .test_failover import Replicas, start_replicas

pytestmark = pytest.mark.redis
ROUNDS, PARALLEL = 20, 50


@pytest.fixture
def replicas(redis_server, fake_upstream, tmp_path) -> Iterator[Replicas]:
    # Refreshes refused after the revoke are failed sign-ins: let them all be answered (401), not 429.
    with start_replicas(redis_server.url, fake_upstream.url, tmp_path, auth="max_failures = 100000") as started:
        yield started


async def refresh(http: httpx.AsyncClient, url: str, creds: Credentials) -> int:
    body = {"device_id": creds.device_id, "proof": refresh_proof(creds.refresh_credential), "fingerprint": "fp-race"}
    return (await http.post(url + "/auth/refresh", json=body)).status_code


def test_20_rounds_of_50_refreshes_racing_a_revoke_leave_no_device_active(replicas):
    state = open_state(ServerConfig(state=StateSection(redis=replicas.redis, key=replicas.env["STELLA_STATE__KEY"])))
    rng = random.Random(16)

    async def round_() -> tuple[Credentials, list[int]]:
        creds = await replicas.pair("fp-race")
        async with client() as http:  # fresh connections: none idles towards the server's keep-alive timeout
            assert await refresh(http, replicas.urls[0], creds) == 200
            return creds, await race(http, creds)

    async def race(http: httpx.AsyncClient, creds: Credentials) -> list[int]:

        async def revoke_midway() -> None:
            await asyncio.sleep(rng.uniform(0.005, 0.04))
            assert await state.revoke_device(creds.device_id, 1.0) is not None

        statuses = await asyncio.gather(
            *(refresh(http, replicas.urls[i % 2], creds) for i in range(PARALLEL)), revoke_midway())
        return list(statuses[:PARALLEL])

    def client() -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=PARALLEL * 2))

    async def scenario():
        results = [await round_() for _ in range(ROUNDS)]
        devices = {d.id: d for d in await state.devices()}
        async with client() as http:
            later = [await refresh(http, replicas.urls[1], creds) for creds, _ in results]
        await state.close()
        return results, devices, later

    results, devices, later = asyncio.run(scenario())
    raced = [statuses for _, statuses in results]
    assert all(set(s) <= {200, 401} for s in raced), raced
    assert sum(200 in s and 401 in s for s in raced) >= ROUNDS // 2, "the revoke did not land among the refreshes"
    active = [creds.device_id for creds, _ in results if devices[creds.device_id].revoked is None]
    assert active == [] and later == [401] * ROUNDS
