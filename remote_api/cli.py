"""`stella-server`: run the gateway (`serve`) or ask a running one how it is (`health`).

With no upstream URL, `serve` runs the embedded default: it starts a local llama-server with
the provisioned model, restarts it if it crashes, and stops it on exit (SIGINT/SIGTERM shut
down cleanly; the child also dies with us if we are killed). Device pairing (`device
add/list/revoke`) arrives with authentication in a later release.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
from pathlib import Path

import httpx
import uvicorn
from starlette.applications import Starlette

from remote_api.config import ConfigError, ServerConfig, load_config
from remote_api.gateway import create_app
from remote_api.link_config import LinkConfig
from remote_api.llama_server import LlamaServer, LlamaServerError, default_binary
from remote_api.logs import setup_logging
from remote_api.upstream import Upstream

log = logging.getLogger(__name__)


def make_server(app: Starlette, host: str, port: int, link: LinkConfig) -> uvicorn.Server:
    """uvicorn as the gateway needs it: websockets (sans-I/O) with the link's own heartbeat."""
    config = uvicorn.Config(
        app, host=host, port=port, ws="websockets-sansio", ws_ping_interval=None, ws_ping_timeout=None,
        ws_max_size=link.max_frame_bytes * 2, ws_per_message_deflate=False, lifespan="on",
        log_config=None, access_log=False, timeout_graceful_shutdown=3,
    )
    return uvicorn.Server(config)


def _default_model() -> Path:
    from sidecar.models.errors import ModelError
    from sidecar.models.provision import Models

    try:
        return Models().path("gemma3-270m")
    except ModelError as exc:
        raise LlamaServerError(f"{exc} (or pass --upstream URL to use your own llama-server)") from None


def _stop_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM is a normal way to stop a server: unwind (stopping llama-server) and exit 0.

    uvicorn handles the signal itself while serving, shuts down gracefully, then raises it
    again, which lands here.
    """
    raise SystemExit(0)


def cmd_serve(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    cfg = load_config(ServerConfig, args.config)
    gw = cfg.gateway
    gw.host = args.host or gw.host
    gw.port = gw.port if args.port is None else args.port
    gw.upstreams = args.upstream or gw.upstreams
    gw.api = args.api or gw.api
    setup_logging(args.log_level or cfg.log_level)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per upstream request
    llama: LlamaServer | None = None
    urls = list(gw.upstreams)
    try:
        if not urls:
            ll = cfg.llama
            llama = LlamaServer(
                ll.binary or default_binary(), ll.model or _default_model(), host=ll.host, port=ll.port,
                threads=ll.threads, ctx=ll.ctx, parallel=ll.parallel, chat_template=ll.chat_template,
            )
            llama.start()
            urls = [llama.url]
        asyncio.run(_serve(cfg, urls, llama))
    finally:
        if llama is not None:
            llama.stop()
    return 0


async def _serve(cfg: ServerConfig, urls: list[str], llama: LlamaServer | None) -> None:
    upstreams = [Upstream(url, cfg.gateway.api) for url in urls]
    app = create_app(cfg.link, upstreams)
    server = make_server(app, cfg.gateway.host, cfg.gateway.port, cfg.link)
    supervisor = asyncio.create_task(llama.supervise()) if llama is not None else None
    log.info("gateway for %s (%s API) on http://%s:%d", ", ".join(urls), cfg.gateway.api,
             cfg.gateway.host, cfg.gateway.port)
    try:
        await server.serve()  # returns after SIGINT/SIGTERM and a graceful shutdown
    finally:
        if supervisor is not None:
            supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await supervisor


def cmd_health(args: argparse.Namespace) -> int:
    url = args.server
    if url is None:
        gw = load_config(ServerConfig, args.config).gateway
        host = "127.0.0.1" if gw.host in ("0.0.0.0", "::") else gw.host
        url = f"http://{host}:{gw.port}"
    try:
        resp = httpx.get(url.rstrip("/") + "/health", timeout=args.timeout)
        report = resp.json()
    except httpx.HTTPError as exc:
        print(f"stella-server health: cannot reach the gateway at {url} ({exc}). Is `stella-server serve` "
              "running there?", file=sys.stderr)
        return 2
    except ValueError:
        print(f"stella-server health: {url} answered HTTP {resp.status_code} without a health report; "
              "is that a Stella gateway?", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"gateway {url}: {report.get('status')}, {report.get('sessions', 0)} session(s)")
        for up in report.get("upstreams", []):
            print(f"  upstream {up.get('url')} ({up.get('api')}): {'ok' if up.get('ok') else 'NOT OK'} - "
                  f"{up.get('detail')}")
    return 0 if resp.status_code == 200 else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stella-server", description="The Stella gateway.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the gateway (with a local llama-server unless --upstream)")
    serve.add_argument("--config", type=Path, help="TOML config file (env STELLA_SECTION__KEY overrides it)")
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default 8765)")
    serve.add_argument("--upstream", action="append", metavar="URL",
                       help="a llama-server URL; repeat for several (none: start a local one)")
    serve.add_argument("--api", choices=["chat", "completion"],
                       help="llama-server endpoint: /v1/chat/completions (chat) or /completion")
    serve.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    serve.set_defaults(func=cmd_serve)

    health = sub.add_parser("health", help="check a running gateway and its llama-servers")
    health.add_argument("--server", help="gateway URL (default: from --config, else http://127.0.0.1:8765)")
    health.add_argument("--config", type=Path)
    health.add_argument("--timeout", type=float, default=10.0)
    health.add_argument("--json", action="store_true", help="print the raw report")
    health.set_defaults(func=cmd_health)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, LlamaServerError) as exc:
        print(f"stella-server: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

