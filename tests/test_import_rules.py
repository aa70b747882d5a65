"""The import rules between the top-level folders (README, "Where things are"), checked over
every module's source with `ast`, including imports inside functions.

A folder may import only itself and the modules listed for it: the link knows nothing of the
engine or the window, the renderer only the atlas format it draws from (`atlas.manifest`), the art
pipeline only the renderer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Most specific first: a module belongs to the first package its dotted name starts with.
ALLOWED: dict[str, frozenset[str]] = {
    "remote_api.shared": frozenset(),
    "remote_api": frozenset({"remote_api.shared"}),
    "shaders": frozenset({"atlas.manifest", "atlas.errors"}),
    "atlas": frozenset({"shaders"}),
    "sidecar": frozenset({"remote_api", "atlas", "shaders"}),
    "desktop": frozenset({"sidecar", "remote_api", "atlas", "shaders"}),
}
STELLA = ("remote_api", "shaders", "atlas", "sidecar", "desktop")


def owner(module: str) -> str | None:
    """The package of ALLOWED that `module` belongs to (None: not one of Stella's)."""
    return next((p for p in ALLOWED if module == p or module.startswith(p + ".")), None)


def imported(source: str, module: str) -> list[tuple[int, str]]:
    """(line, module) for every import in `source`, relative ones resolved against `module`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            name = node.module or ""
            if node.level:
                base = module.split(".")[: -node.level]
                name = ".".join([*base, name] if name else base)
            found.append((node.lineno, name))
    return found


def violations(source: str, module: str) -> list[str]:
    """The imports of `module` that break the rules, each as "module:line imports other"."""
    mine = owner(module)
    if mine is None:
        return []
    bad = []
    for line, name in imported(source, module):
        theirs = owner(name)
        if theirs is None or theirs == mine or name.split(".")[0] not in STELLA:
            continue
        if not any(name == ok or name.startswith(ok + ".") for ok in ALLOWED[mine]):
            bad.append(f"{module}:{line} imports {name}")
    return bad


def modules() -> list[tuple[str, Path]]:
    found = []
    for top in STELLA:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found.append((".".join(parts[:-1] if parts[-1] == "__init__" else parts), path))
    return found


def test_every_module_keeps_the_import_rules() -> None:
    bad = [v for module, path in modules() for v in violations(path.read_text(encoding="utf-8"), module)]
    assert not bad, "imports across folders that the rules forbid:\n" + "\n".join(bad)


def test_the_rules_cover_every_package() -> None:
    assert {module.split(".")[0] for module, _ in modules()} == set(STELLA)
    assert all(owner(module) for module, _ in modules())


@pytest.mark.parametrize(("module", "source"), [
    ("remote_api.gateway", "from sidecar.channel import Event"),
    ("remote_api.cli", "def f():\n    import desktop.cli\n"),
    ("remote_api.shared.logs", "from remote_api.client import LinkClient"),
    ("atlas.contact_sheet", "from desktop.gpu import probe"),
    ("shaders.renderer", "from atlas.builder import build"),
    ("shaders.glsl", "import sidecar.channel"),
    ("sidecar.engine.frame_stream", "from desktop import cli"),
    ("remote_api.shared.models.cli", "from ...client import LinkClient"),
])
def test_a_forbidden_import_is_caught(module: str, source: str) -> None:
    assert violations(source, module)


@pytest.mark.parametrize(("module", "source"), [
    ("sidecar.reply", "from remote_api.client import Token"),
    ("remote_api.cli", "from remote_api.shared.models.provision import Models"),
    ("atlas.contact_sheet", "from shaders import CharacterRenderer"),
    ("desktop.cli", "import sidecar.config, atlas.user"),
    ("remote_api.gateway", "from . import protocol"),
    ("shaders.renderer", "from atlas.manifest import Manifest"),
])
def test_an_allowed_import_passes(module: str, source: str) -> None:
    assert violations(source, module) == []
