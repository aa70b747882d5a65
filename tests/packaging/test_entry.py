"""The bundle's entry script (build/entry.py) without building the bundle: which commands start the app, and
which models a first start installs before it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from sidecar.launch import SavedServer

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("stella_entry", ROOT / "build" / "entry.py")
assert _spec is not None and _spec.loader is not None
entry = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(entry)


def test_a_first_start_installs_the_llm_only_for_the_embedded_default(tmp_path: Path) -> None:
    store = tmp_path / "stella.db"
    assert entry._uses_embedded_server(["run", "--store", str(store)])
    assert not entry._uses_embedded_server(["run", "--server", "http://gpu-box:8765", "--store", str(store)])
    assert not entry._uses_embedded_server(["--server=http://gpu-box:8765"])
    SavedServer.beside(store).save("http://gpu-box:8765")
    assert not entry._uses_embedded_server([f"--store={store}"]), "a saved server is used: no local LLM needed"
    SavedServer.beside(store).path.write_text("damaged")
    assert entry._uses_embedded_server(["run", "--store", str(store)]), "the launcher falls back to the embedded one"


def test_only_the_app_itself_provisions_models_first() -> None:
    assert entry._app_command([]) is None and entry._app_command(["--log-level", "DEBUG", "run"]) == "run"
    for command in (["models", "install"], ["server", "serve"], ["chat"], ["selftest"], ["--selftest"], ["--help"]):
        assert entry._app_command(command) not in entry.APP_COMMANDS, command
