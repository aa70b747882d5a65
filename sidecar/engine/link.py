"""The link to the gateway: opened for the configured server, kept up, and what to tell the user."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from urllib.parse import urlsplit

from remote_api.client import LinkClient, LinkRefused, LinkStatus
from remote_api.credentials import LOOPBACK, Credentials
from sidecar.channel_messages import AppEvent, Error, Link
from sidecar.config import AppConfig


class LinkKeeper:
    """Holds this device's pairing and the live link; `stale` asks the session loop for a new link."""

    def __init__(self, send: Callable[[AppEvent], None], reload: Callable[[], None]) -> None:
        self.send = send
        self.reload = reload
        self.link: LinkClient | None = None
        self.pairing: Credentials | None = None
        self.status = LinkStatus("offline", detail="starting")
        self.refusal: Error | None = None  # the server refused this device: what to tell the user
        self.stale = False  # the credentials changed: open a new link
        self._connecting: asyncio.Task[None] | None = None
        self._local_refusals = 0  # in a row, from a gateway on this computer
        self._changed = asyncio.Event()

    def needs_new(self, config: AppConfig) -> bool:
        return self.link is None or self.stale or self.link.server_url != config.server_url.rstrip("/")

    def credentials(self, server_url: str) -> Credentials | None:
        """This device's pairing with `server_url`, if any (a local gateway needs none)."""
        paired = self.pairing
        if paired is None or paired.gateway_url.rstrip("/") != server_url.rstrip("/"):
            return None
        return paired

    def restore(self, pairing: Credentials | None) -> None:
        """The pairing the store remembers, before the first link is opened."""
        self.pairing = pairing

    def paired(self, creds: Credentials) -> None:
        self.pairing = creds
        self.stale = True
        self.reload()

    async def connect(self, config: AppConfig) -> None:
        """(Re)open the link to the configured server; it reconnects by itself from then on."""
        await self.close()
        self.stale, self.refusal = False, None
        self.link = LinkClient(config.server_url, config.link, on_status=self._on_status,
                               credentials=self.credentials(config.server_url))
        self._connecting = asyncio.create_task(self._keep(self.link), name="link-connect")

    async def _keep(self, link: LinkClient) -> None:
        """Follow the link until the server refuses this device (`connect` raises then, and only then)."""
        try:
            while True:
                await link.connect()  # returns at once while connected, waits while reconnecting
                self._local_refusals = 0
                await self._changed.wait()
                self._changed.clear()
        except LinkRefused as exc:
            # A local gateway that restarted has left new credentials for this user's devices: a new link
            # finds them. It is given a few tries before the user hears of it (it may still be starting).
            local = self.credentials(link.server_url) is None and urlsplit(link.server_url).hostname in LOOPBACK
            self._local_refusals += local
            if not local or self._local_refusals >= 3:
                self.refusal = Error("device_refused", f"The Stella server at {link.server_url} does not "
                                                       f"accept this device: {exc}")
                self.send(self.event())
                self.send(self.refusal)
            if local:
                await asyncio.sleep(min(30.0, 0.5 * 2 ** self._local_refusals))
                self.stale = True
                self.reload()

    def _on_status(self, status: LinkStatus) -> None:
        self.status = status
        self._changed.set()
        self.send(self.event())

    def event(self) -> Link:
        s = self.status
        return Link(transport=s.transport, connected=s.connected, retry_in=s.retry_in, attempt=s.attempt,
                    detail=s.detail, refused=self.refusal is not None)

    async def close(self) -> None:
        if self._connecting is not None:
            self._connecting.cancel()
        if self.link is not None:
            await self.link.close()
