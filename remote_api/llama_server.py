"""Start and supervise a local llama.cpp `llama-server` for the embedded default.

The binary is built once per machine by `build/llama_server.sh` and cached by version; the
child is tied to our lifetime (PR_SET_PDEATHSIG on Linux) so it never outlives the gateway.

It listens on loopback, where every local user can reach it, so it gets a random API key for
this launch (kept across crash restarts): only its /health answers without it. The key goes in
the child's environment (LLAMA_API_KEY, readable by this user only), not on its command line,
which `ps` shows everyone.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import subprocess
from pathlib import Path

import platformdirs

from remote_api.shared.processes import NotHealthy, die_with_parent, free_port, stop_process, wait_healthy

log = logging.getLogger(__name__)

# Keep in step with build/llama_server.sh (a test checks they agree).
LLAMA_CPP_PYTHON_VERSION = "0.3.36"


class LlamaServerError(RuntimeError):
    """llama-server could not be started; the message says why and what to run."""


def default_binary() -> Path:
    """Where build/llama_server.sh caches the binary for this version."""
    cache = Path(platformdirs.user_cache_dir("stella"))
    return cache / "llama-server" / LLAMA_CPP_PYTHON_VERSION / "llama-server"


class LlamaServer:
    """One llama-server child process: start, wait until healthy, stop, restart on crash."""

    def __init__(
        self,
        binary: Path,
        model: Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        threads: int = 1,  # see remote_api.config.LlamaSection.threads
        ctx: int = 2048,
        parallel: int = 2,
        chat_template: str = "vicuna",  # "" = the GGUF's own template
        log_path: Path | None = None,
        extra_args: tuple[str, ...] = (),
        nice: int = 5,
    ) -> None:
        self.binary = Path(binary)
        self.model = Path(model)
        self.host = host
        self.port = port
        self.threads = threads
        self.ctx = ctx
        self.parallel = parallel
        self.chat_template = chat_template
        self.log_path = log_path
        self.extra_args = extra_args
        self.nice = nice  # lower CPU priority than the voice loop sharing the machine
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self._stopped = False
        self.api_key = secrets.token_urlsafe(32)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def headers(self) -> dict[str, str]:
        """What a request to it must carry (everything but /health needs the key)."""
        return {"Authorization": f"Bearer {self.api_key}"}

    @property
    def env(self) -> dict[str, str]:
        """The environment that makes a `stella-server serve --upstream URL` send the key."""
        return {"STELLA_GATEWAY__UPSTREAM_KEY": self.api_key}

    def command(self) -> list[str]:
        return [
            str(self.binary), "--host", self.host, "--port", str(self.port), "-m", str(self.model),
            *self.template_args(), "-np", str(self.parallel), "-c", str(self.ctx),
            "-t", str(self.threads), "--metrics", *self.extra_args,
        ]

    def template_args(self) -> list[str]:
        """A built-in template by name needs Jinja off (with it on, the name is taken as the template's
        text); an instruct model's own template (in the GGUF) needs it on."""
        return ["--no-jinja", "--chat-template", self.chat_template] if self.chat_template else ["--jinja"]

    def _child_setup(self) -> None:
        die_with_parent()
        if self.nice:
            os.nice(self.nice)

    def start(self, timeout: float = 60.0) -> None:
        """Spawn the server and return once GET /health answers 200."""
        if not self.binary.is_file() or not os.access(self.binary, os.X_OK):
            raise LlamaServerError(
                f"llama-server binary not found at {self.binary}; build it with `bash build/llama_server.sh`"
                " in a Stella source checkout (it caches the binary there for every install on this machine), or"
                " run Stella on a server of yours: `stella run --server URL`"
            )
        if not self.model.is_file():
            raise LlamaServerError(
                f"model file {self.model} is missing; provision it with `stella models install`"
            )
        self._stopped = False
        if self.port == 0:
            self.port = free_port(self.host)
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        log.info("starting llama-server on %s with %s", self.url, self.model.name)
        self.process = subprocess.Popen(
            self.command(), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            preexec_fn=self._child_setup, env={**os.environ, "LLAMA_API_KEY": self.api_key},
        )
        if out is not subprocess.DEVNULL:
            out.close()
        try:
            wait_healthy(self.url, self.process, timeout)
        except NotHealthy as exc:
            self.stop()
            if exc.returncode is None:
                raise LlamaServerError(f"llama-server did not become healthy within {timeout:.0f} s") from None
            raise LlamaServerError(
                f"llama-server exited with code {exc.returncode} while loading {self.model}"
                + (f"; see {self.log_path}" if self.log_path else "")
            ) from None
        log.info("llama-server ready on %s", self.url)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace: float = 5.0) -> None:
        """Terminate the child and reap it (kill if it ignores SIGTERM)."""
        self._stopped = True
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        stop_process(proc, grace)
        log.info("llama-server on %s stopped", self.url)

    async def supervise(self, min_backoff: float = 0.5, max_backoff: float = 30.0) -> None:
        """Restart the server whenever it dies, with exponential backoff; cancel to stop watching."""
        backoff = min_backoff
        while not self._stopped:
            await asyncio.sleep(0.25)
            if self.alive() or self._stopped:
                continue
            code = self.process.returncode if self.process else None
            log.warning("llama-server died (exit %s); restarting in %.1f s", code, backoff)
            await asyncio.sleep(backoff)
            try:
                await asyncio.to_thread(self.start)
                self.restarts += 1
                backoff = min_backoff
            except LlamaServerError as exc:
                log.error("%s", exc)
                backoff = min(backoff * 2, max_backoff)

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
