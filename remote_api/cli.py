"""`stella-server`: run the gateway (`serve`), manage the devices allowed to use it (`device
add|list|revoke`), print a state key for Redis replicas (`state-key`), or ask a running one how it
is (`health`).

With no upstream URL, `serve` runs the embedded default: it starts a local llama-server with
the provisioned model, restarts it if it crashes, and stops it on exit (SIGINT/SIGTERM shut
down cleanly; the child also dies with us if we are killed).

Every link request must come from a paired device (`device add NAME` prints a one-time code).
A gateway on loopback without Redis also pairs its own *local* device at start and leaves its
credentials for this user's clients, so the embedded default (`stella run`) needs no setup.
Anywhere else: pair devices, and serve TLS (`--tls-cert/--tls-key`) or sit behind a TLS proxy.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import uvicorn
from starlette.applications import Starlette

from remote_api.config import LlamaSection, ServerConfig, TlsSection
from remote_api.credentials import LOOPBACK, Credentials, CredentialsRejected, TokenSource
from remote_api.gateway_setup import build_app, local_device, open_state
from remote_api.link_config import LinkConfig
from remote_api.llama_server import LlamaServer, LlamaServerError, default_binary
from remote_api.operator import OPERATOR_HEADER, operator_secret, operator_secret_path, read_operator_secret
from remote_api.pairing import issue_code
from remote_api.shared.config_loader import ConfigError, load_config
from remote_api.shared.logs import setup_logging
from remote_api.state import GatewayState, StateError
from remote_api.state_key import new_key_line
from remote_api.tls import client_context
from remote_api.transport import TransportClosed
from remote_api.upstream import Upstream

log = logging.getLogger(__name__)


def make_server(app: Starlette, host: str, port: int, link: LinkConfig,
                tls: TlsSection | None = None) -> uvicorn.Server:
    """uvicorn as the gateway needs it: websockets (sans-I/O) with the link's own heartbeat."""
    tls = tls or TlsSection()
    for path in (tls.cert, tls.key):
        if path is not None and not Path(path).is_file():
            raise ConfigError(f"TLS file {path} does not exist; give PEM files to --tls-cert and --tls-key")
    config = uvicorn.Config(
        app, host=host, port=port, ws="websockets-sansio", ws_ping_interval=None, ws_ping_timeout=None,
        ws_max_size=link.max_frame_bytes * 2, ws_per_message_deflate=False, lifespan="on",
        log_config=None, access_log=False, timeout_graceful_shutdown=3,
        ssl_certfile=tls.cert and str(tls.cert), ssl_keyfile=tls.key and str(tls.key),
    )
    return uvicorn.Server(config)


def _load(args: argparse.Namespace) -> ServerConfig:
    """The config file, then the command line's overrides of where state lives."""
    cfg = load_config(ServerConfig, args.config)
    if args.data_dir is not None:
        cfg.state.data_dir = args.data_dir
    if args.redis is not None:
        cfg.state.redis = args.redis
    return cfg


def _model(ll: LlamaSection) -> tuple[Path, str]:
    """The GGUF the local llama-server runs and its chat template ("" = the GGUF's own)."""
    from remote_api.shared.models.catalogue import DEFAULT_LLM, llms
    from remote_api.shared.models.errors import ModelError
    from remote_api.shared.models.provision import Models

    if ll.model is not None:
        return ll.model, ll.chat_template
    name = ll.model_name or DEFAULT_LLM
    spec = next((s for s in llms() if s.name == name), None)
    if spec is None:
        raise LlamaServerError(f"llama.model_name {name!r} is not a language model Stella knows; choose one of "
                               f"{', '.join(s.name for s in llms())} (or give a GGUF file as llama.model)")
    try:
        return Models().path(spec.name), ll.chat_template or spec.chat_template
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
    cfg = _load(args)
    if args.tls_cert or args.tls_key:
        cfg.tls = TlsSection(args.tls_cert or cfg.tls.cert, args.tls_key or cfg.tls.key)
    gw = cfg.gateway
    gw.host = args.host or gw.host
    gw.port = gw.port if args.port is None else args.port
    gw.upstreams = args.upstream or gw.upstreams
    gw.api = args.api or gw.api
    setup_logging(args.log_level or cfg.log_level)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per upstream request
    llama: LlamaServer | None = None
    urls = list(gw.upstreams)
    state = open_state(cfg)  # before llama-server: a replica without its state key stops here
    try:
        if not urls:
            ll = cfg.llama
            model, template = _model(ll)
            llama = LlamaServer(
                ll.binary or default_binary(), model, host=ll.host, port=ll.port,
                threads=ll.threads, ctx=ll.ctx, parallel=ll.parallel, chat_template=template, nice=ll.nice,
            )
            llama.start()
            urls = [llama.url]
        asyncio.run(_serve(cfg, urls, llama, state))
    finally:
        if llama is not None:
            llama.stop()
    return 0


async def _serve(cfg: ServerConfig, urls: list[str], llama: LlamaServer | None, state: GatewayState) -> None:
    key = llama.api_key if llama is not None else cfg.gateway.upstream_key
    upstreams = [Upstream(url, cfg.gateway.api, api_key=key) for url in urls]
    gw = cfg.gateway
    url = f"{'https' if cfg.tls.cert else 'http'}://{gw.host}:{gw.port}"
    supervisor = asyncio.create_task(llama.supervise()) if llama is not None else None
    try:
        async with contextlib.AsyncExitStack() as stack:
            secret = stack.enter_context(operator_secret(gw.port))
            server = make_server(await build_app(cfg, upstreams, state, operator_secret=secret), gw.host, gw.port,
                                 cfg.link, cfg.tls)
            if gw.host in LOOPBACK and not state.shared:
                await stack.enter_async_context(local_device(state, url, gw.port))
            elif gw.host not in LOOPBACK and not cfg.tls.cert:
                log.warning("listening on %s without TLS: access tokens cross the network in clear (bodies stay "
                            "sealed); serve with --tls-cert/--tls-key or behind a TLS proxy", gw.host)
            log.info("gateway for %s (%s API) on %s; state: %s", ", ".join(urls), gw.api, url,
                     cfg.state.redis or getattr(state, "path", ""))
            await server.serve()  # returns after SIGINT/SIGTERM and a graceful shutdown
    finally:
        if supervisor is not None:
            supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await supervisor
        await state.close()


def cmd_device(args: argparse.Namespace) -> int:
    cfg = _load(args)
    return asyncio.run(_device(args, cfg, open_state(cfg)))


async def _device(args: argparse.Namespace, cfg: ServerConfig, state: GatewayState) -> int:
    try:
        now = time.time()
        if args.action == "add":
            ttl = args.code_ttl or cfg.auth.pairing_code_ttl
            code = await issue_code(state, args.name, now, ttl)
            print(f"Pairing code for {args.name!r}: {code}  (use it once, within {ttl / 60:g} min)")
            print(f"On that device: stella-chat --server https://THIS-SERVER:{cfg.gateway.port} --pair {code} "
                  "--credentials FILE")
        elif args.action == "list":
            devices = await state.devices()
            if args.json:
                print(json.dumps([{"name": d.name, "id": d.id, "revoked": d.revoked, "created": d.created,
                                   "last_refresh": d.last_refresh, "local": d.local} for d in devices], indent=2))
            elif not devices:
                print("No devices are paired. Pair one with: stella-server device add NAME")
            else:
                print(f"{'NAME':<24} {'ID':<16} {'STATE':<8} {'PAIRED':<17} LAST TOKEN")
                for d in devices:
                    print(f"{d.name:<24} {d.id:<16} {'revoked' if d.revoked else 'active':<8} {_when(d.created):<17} "
                          f"{_when(d.last_refresh)}")
        elif args.jti:
            await state.revoke_token(args.jti, now + cfg.auth.token_ttl + 60)
            print(f"Revoked token {args.jti}: it is refused from now on, open sessions end within "
                  f"{cfg.auth.recheck_interval:g} s.")
        else:
            device = await state.revoke_device(args.name, now)
            if device is None:
                print(f"stella-server: no active device named {args.name!r} (see stella-server device list)",
                      file=sys.stderr)
                return 1
            print(f"Revoked device {device.name!r} ({device.id}): its tokens and credentials are refused from now "
                  f"on, open sessions end within {cfg.auth.recheck_interval:g} s.")
        return 0
    except ValueError as exc:
        print(f"stella-server: {exc}", file=sys.stderr)
        return 2
    finally:
        await state.close()


def _when(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp)) if stamp else "-"


def cmd_state_key(args: argparse.Namespace) -> int:
    print(new_key_line())
    print("Give it to every replica (STELLA_STATE__KEY=..., or a mode-600 file named by state.key_file). To rotate: "
          "put a new key first and keep the old one after it (comma-separated) until its values have expired.",
          file=sys.stderr)
    return 0


def cmd_health(args: argparse.Namespace) -> int:
    url = args.server
    if url is None:
        gw = load_config(ServerConfig, args.config).gateway
        host = "127.0.0.1" if gw.host in ("0.0.0.0", "::") else gw.host
        url = f"http://{host}:{gw.port}"
    try:
        verify = client_context(args.ca_file)
        headers = _health_headers(args, url, verify)
    except ValueError as exc:
        print(f"stella-server health: {exc}", file=sys.stderr)
        return 2
    try:
        resp = httpx.get(url.rstrip("/") + "/health", timeout=args.timeout, verify=verify, headers=headers)
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
    elif "sessions" not in report:
        print(f"gateway {url}: {report.get('status')} (details need the operator's secret - run this on the "
              "gateway's machine as the user running it, or give --operator-secret FILE - or a paired device's "
              "--credentials FILE)")
    else:
        print(f"gateway {url}: {report.get('status')}, version {report.get('version')}, "
              f"{report.get('sessions', 0)} session(s)")
        for up in report.get("upstreams", []):
            print(f"  upstream {up.get('url')} ({up.get('api')}): {'ok' if up.get('ok') else 'NOT OK'} - "
                  f"{up.get('detail')}")
    return 0 if resp.status_code == 200 else 1


def _health_headers(args: argparse.Namespace, url: str, verify: object) -> dict[str, str]:
    """What opens the detailed report: a device's access token (--credentials), else the
    operator's secret of a gateway on this machine (its per-port file, or --operator-secret)."""
    if args.credentials is not None:
        creds = Credentials.load(args.credentials)
        try:
            return asyncio.run(TokenSource(creds, verify=verify).headers(url.rstrip("/")))
        except (CredentialsRejected, TransportClosed) as exc:
            raise ValueError(f"cannot get an access token with {args.credentials}: {exc}") from None
    parts = urlsplit(url)
    path = args.operator_secret
    if path is None and parts.hostname in LOOPBACK:
        path = operator_secret_path(parts.port or (443 if parts.scheme == "https" else 80))
    secret = read_operator_secret(path) if path is not None else None
    if secret is None and args.operator_secret is not None:
        raise ValueError(f"cannot read the operator's secret from {args.operator_secret}")
    return {OPERATOR_HEADER: secret} if secret else {}


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
    serve.add_argument("--tls-cert", type=Path, help="serve https/wss with this certificate chain (PEM)")
    serve.add_argument("--tls-key", type=Path, help="... and this private key (PEM)")
    _state_options(serve)
    serve.set_defaults(func=cmd_serve)

    device = sub.add_parser("device", help="pair, list and revoke the devices allowed to connect")
    actions = device.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="issue a one-time pairing code for a device called NAME")
    add.add_argument("name")
    add.add_argument("--code-ttl", type=float, help="seconds the code stays valid (default 600)")
    listing = actions.add_parser("list", help="the paired devices")
    listing.add_argument("--json", action="store_true")
    revoke = actions.add_parser("revoke", help="revoke a device (all its tokens) or one token (--jti)")
    target = revoke.add_mutually_exclusive_group(required=True)
    target.add_argument("name", nargs="?", help="the device's name or id")
    target.add_argument("--jti", help="revoke just the access token with this id")
    for parser_ in (add, listing, revoke):
        parser_.add_argument("--config", type=Path)
        _state_options(parser_)
    device.set_defaults(func=cmd_device)

    state_key = sub.add_parser("state-key", help="print a new state key (replicas seal their Redis state with it)")
    state_key.set_defaults(func=cmd_state_key)

    health = sub.add_parser("health", help="check a running gateway and its llama-servers")
    health.add_argument("--server", help="gateway URL (default: from --config, else http://127.0.0.1:8765)")
    health.add_argument("--config", type=Path)
    health.add_argument("--timeout", type=float, default=10.0)
    health.add_argument("--json", action="store_true", help="print the raw report")
    health.add_argument("--ca-file", type=Path, help="CA certificate to verify an https gateway with")
    health.add_argument("--operator-secret", type=Path, metavar="FILE",
                        help="the gateway's operator secret (default: the file a gateway on this machine leaves, "
                        "~/.local/state/stella/gateways/PORT.operator); accepted from loopback only")
    health.add_argument("--credentials", type=Path, metavar="FILE",
                        help="a paired device's credentials: its access token opens the details from anywhere")
    health.set_defaults(func=cmd_health)
    return parser


def _state_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, help="where devices and revocations are kept (default: "
                        "~/.local/share/stella/gateway); not used with --redis")
    parser.add_argument("--redis", metavar="URL", help="keep state in Redis, shared by gateway replicas")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, LlamaServerError, StateError) as exc:
        print(f"stella-server: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

