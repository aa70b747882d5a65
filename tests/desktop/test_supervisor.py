"""How the shell keeps the engine running: restarts with backoff, the port kept, nothing orphaned.

Stand-in engines (tiny Python programs) make each failure happen on cue; the real engine's
restart is covered with the UI in test_web_ui.py and test_window.py.
"""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from desktop.supervisor import Backoff, EngineStatus, Supervisor
from sidecar.launch import Launch
from tests.desktop.polling import wait_for
from tests.desktop.processes import alive

SECRET = "s" * 64
# Prints the port it was asked for (as the engine does) and then sleeps; records each start.
SLEEPER = textwrap.dedent("""
    import os, sys, time
    with open(sys.argv[1], "a") as log:
        log.write(os.environ["STELLA_CHANNEL_PORT"] + " " + os.environ["STELLA_ENGINE_RESTARTS"] + " "
                  + os.environ["STELLA_ENGINE_LAST_EXIT"].replace(" ", "_") + "\\n")
    print("channel_port=" + os.environ["STELLA_CHANNEL_PORT"], flush=True)
    time.sleep(600)
""")


def test_a_crashing_engine_is_restarted_with_growing_pauses() -> None:
    statuses: list[tuple[float, EngineStatus]] = []
    supervisor = Supervisor([sys.executable, "-c", "import sys; sys.exit(3)"], Launch(SECRET, 0),
                            on_status=lambda s: statuses.append((time.monotonic(), s)),
                            backoff=Backoff(first=0.1, factor=2.0, cap=0.4))
    supervisor.start()
    try:
        wait_for(lambda: sum(s.state == "restarting" for _, s in statuses) >= 4, 20, "four restarts")
    finally:
        supervisor.stop()
    restarting = [s for _, s in statuses if s.state == "restarting"]
    assert [s.retry_in for s in restarting[:4]] == [0.1, 0.2, 0.4, 0.4]
    assert [s.restarts for s in restarting[:4]] == [1, 2, 3, 4]
    assert restarting[0].detail == "it exited with code 3"
    assert statuses[-1][1].state == "stopped"


def test_a_killed_engine_comes_back_on_the_same_port_knowing_what_happened(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    supervisor = Supervisor([sys.executable, "-c", SLEEPER, str(starts)], Launch(SECRET, 45123),
                            backoff=Backoff(first=0.1))
    supervisor.start()
    try:
        first = supervisor.wait_running(10)
        assert (first.state, first.port) == ("running", 45123)
        os.kill(first.pid, signal.SIGKILL)
        wait_for(lambda: supervisor.status.state == "running" and supervisor.status.pid != first.pid, 10,
                 "the engine running again")
        second = supervisor.status
        assert second.port == 45123
    finally:
        supervisor.stop()
    assert starts.read_text().split("\n")[:2] == ["45123 0 ", "45123 1 it_was_stopped_by_SIGKILL"]
    assert not alive({first.pid, second.pid})


def test_an_engine_that_never_says_its_port_is_treated_as_crashed() -> None:
    supervisor = Supervisor([sys.executable, "-c", "import time; time.sleep(600)"], Launch(SECRET, 0),
                            backoff=Backoff(first=5), start_timeout=0.5)
    supervisor.start()
    try:
        wait_for(lambda: supervisor.status.state == "restarting", 10, "the hung engine being given up on")
        assert supervisor.status.detail == "it was stopped by SIGKILL"
    finally:
        began = time.monotonic()
        supervisor.stop()
    assert time.monotonic() - began < 2, "stop() waited out the backoff"


def test_the_engine_dies_with_a_killed_shell(tmp_path: Path) -> None:
    shell = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from desktop.supervisor import Supervisor
        from sidecar.launch import Launch
        s = Supervisor([sys.executable, "-c", {SLEEPER!r}, {str(tmp_path / 'starts')!r}], Launch({SECRET!r}, 45124))
        s.start()
        print(s.wait_running(10).pid, flush=True)
        time.sleep(600)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        engine = int(shell.stdout.readline())
        assert alive({engine})
        shell.kill()
        shell.wait()
        wait_for(lambda: not alive({engine}), 5, "the engine exiting after its shell was killed")
    finally:
        if shell.poll() is None:
            shell.kill()


def test_the_window_shell_starts_without_the_engines_code() -> None:
    """The shell (`stella`'s entry point, as the app starts it) imports only the launch contract of the engine:
    its frames, numpy, websockets, httpx and PIL (only for a user's own atlas, or `stella outfits`) would cost
    the window a quarter of a second and 20 MiB. Nor pywebview's own HTTP server (bottle): the page comes from
    the shell's AssetServer (desktop/pywebview.py)."""
    assert imported_of("desktop.cli", ["numpy", "websockets", "httpx", "PIL", "sidecar.channel", "sidecar.frames",
                                       "bottle"]) == []


def test_the_engine_starts_without_httpx_command_line_client() -> None:
    """httpx imports its CLI (click, pygments) when they are installed; the engine never runs it (2.2 MiB)."""
    assert imported_of("sidecar.engine.__main__", ["httpx", "click", "pygments"]) == ["httpx"]


def imported_of(module: str, names: list[str]) -> list[str]:
    """Which of `names` a fresh Python has imported after importing `module`."""
    code = f"import sys, {module}; print([m for m in {names!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    return ast.literal_eval(out.stdout.strip())


TUNABLES = textwrap.dedent("""
    import os, sys
    with open(sys.argv[1], "w") as out:
        out.write(os.environ.get("GLIBC_TUNABLES", "-") + " " + os.environ.get("OPENBLAS_NUM_THREADS", "-"))
    print("channel_port=" + os.environ["STELLA_CHANNEL_PORT"], flush=True)
    import time; time.sleep(600)
""")


def test_the_engine_heap_and_threads_are_tuned_and_a_users_own_setting_wins(tmp_path: Path) -> None:
    """Two malloc arenas (the engine mostly 216-224 MiB after a turn, not 227-253) and numpy's BLAS on one
    thread (the wake model idle-listening: 138 -> 89 ms of CPU a second): sidecar/memory.py."""
    seen = tmp_path / "tunables"
    ours = "glibc.malloc.arena_max=2"
    for users, threads, expected in [(None, None, ours + " 1"),
                                     ("glibc.malloc.hugetlb=1", "4", "glibc.malloc.hugetlb=1:" + ours + " 4"),
                                     ("glibc.malloc.arena_max=8:glibc.malloc.check=0", None,
                                      "glibc.malloc.arena_max=8:glibc.malloc.check=0 1")]:
        env = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "OPENBLAS_NUM_THREADS")}
        env |= {"GLIBC_TUNABLES": users} if users else {}
        env |= {"OPENBLAS_NUM_THREADS": threads} if threads else {}
        supervisor = Supervisor([sys.executable, "-c", TUNABLES, str(seen)], Launch(SECRET, 0), env=env)
        supervisor.start()
        try:
            assert supervisor.wait_running(10).state == "running"
        finally:
            supervisor.stop()
        assert seen.read_text() == expected
