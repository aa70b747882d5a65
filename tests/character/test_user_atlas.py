"""Your own character: `stella outfits` builds outfits from the user's PNG layers into the user data
folder, the app chooses that atlas at start (else the built-in one, saying why), and every bad
input gets an error naming the file and what to do — with the working atlas left as it was."""

from __future__ import annotations

import io
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from atlas import wardrobe
from atlas.art import write_sources
from atlas.errors import AtlasError
from atlas.figure import CELL
from atlas.manifest import DEFAULT_DIR, Manifest
from atlas.user import UserFolders, choose_atlas
from desktop import cli
from shaders import CharacterRenderer, FrameState
from shaders.pixels import unpremultiply
from tests.character.user_layers import GOLD, TEAL, share_of, write_cape_layers

BUILT_IN = [o.id for o in Manifest.load(DEFAULT_DIR).outfits]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def drawn_character(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built-in character's layers, drawn once (what the first `stella outfits add` copies in)."""
    src = tmp_path_factory.mktemp("built-in") / "character"
    write_sources(src)
    return src


@pytest.fixture
def folders(tmp_path: Path, drawn_character: Path) -> UserFolders:
    """A user who has a character folder already (a copy of the built-in one) and no atlas yet."""
    folders = UserFolders(tmp_path / "data" / "stella")
    shutil.copytree(drawn_character, folders.source)
    return folders


@pytest.fixture(scope="module")
def caped(drawn_character: Path, tmp_path_factory: pytest.TempPathFactory) -> UserFolders:
    """A user who added a teal cape, built once per module."""
    folders = UserFolders(tmp_path_factory.mktemp("caped") / "stella")
    shutil.copytree(drawn_character, folders.source)
    wardrobe.add("cape", write_cape_layers(folders.data.parent / "cape"), "Teal cape", folders)
    return folders


@pytest.fixture
def with_cape(caped: UserFolders, tmp_path: Path) -> UserFolders:
    """This test's own copy of that user's character and atlas."""
    folders = UserFolders(tmp_path / "data" / "stella")
    for name in ("source", "atlas"):
        shutil.copytree(getattr(caped, name), getattr(folders, name))
    return folders


def stella(*args: str, data_home: Path) -> subprocess.CompletedProcess[str]:
    """`stella ...` as the user types it, with the user data folder under `data_home`."""
    return subprocess.run([sys.executable, "-m", "desktop.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "XDG_DATA_HOME": str(data_home)}, timeout=300, check=False)


# ---- the way a user goes ------------------------------------------------------------------------


def test_stella_outfits_add_builds_the_users_atlas_and_the_app_chooses_it(tmp_path: Path) -> None:
    """From nothing: the first build draws the built-in character into the user's folder and builds
    the atlas there; `add` puts the cape in; `list` shows it as theirs; the installed app is not touched."""
    before = {p: p.read_bytes() for p in DEFAULT_DIR.iterdir()}
    layers = write_cape_layers(tmp_path / "my cape")
    data_home = tmp_path / "xdg-data"
    folders = UserFolders(data_home / "stella")

    built = stella("outfits", "build", data_home=data_home)
    assert built.returncode == 0, built.stderr
    assert "8 outfits" in built.stdout and (folders.source / "outfits" / "hoodie" / "outfit.png").is_file()
    assert [o.id for o in choose_atlas(folders=folders).manifest.outfits] == BUILT_IN

    added = stella("outfits", "add", "cape", "--layers", str(layers), "--name", "Teal cape", data_home=data_home)
    assert added.returncode == 0, added.stderr
    assert "added 'cape': 9 outfits" in added.stdout and str(folders.atlas) in added.stdout

    choice = choose_atlas(folders=folders)
    assert choice.user and choice.folder == folders.atlas and not choice.problem
    assert [o.id for o in choice.manifest.outfits] == [*BUILT_IN, "cape"]  # appended after the built-in ones
    cape = choice.manifest.outfit("cape")
    assert cape.name == "Teal cape" and cape.thumbnail.startswith("data:image/png;base64,")
    assert (folders.source / "outfits" / "cape" / "outfit.png").read_bytes() == (layers / "outfit.png").read_bytes()

    listed = stella("outfits", "list", data_home=data_home)
    assert listed.returncode == 0, listed.stderr
    assert f"yours, {folders.atlas}" in listed.stdout
    assert [line.split()[-1] for line in listed.stdout.splitlines()[1:]] == ["built-in"] * len(BUILT_IN) + ["yours"]
    assert {p: p.read_bytes() for p in DEFAULT_DIR.iterdir()} == before

    reset = stella("outfits", "reset", data_home=data_home)
    assert reset.returncode == 0 and not folders.atlas.exists() and not folders.source.exists()
    assert choose_atlas(folders=folders).folder == DEFAULT_DIR


def test_the_new_outfit_is_drawn_with_its_layers_over_the_body(with_cape: UserFolders) -> None:
    """What the window's renderers draw from the user's atlas: the cape and crown, on Stella."""
    with CharacterRenderer(with_cape.atlas, idle_blink=False, clock=lambda: 0.0) as renderer:
        cape = unpremultiply(renderer.render(FrameState("cape"), CELL))
        hoodie = unpremultiply(renderer.render(FrameState("hoodie"), CELL))
        talking = unpremultiply(renderer.render(FrameState("cape", mouth=1.0), CELL))
    h = CELL[1]
    assert share_of(cape[int(0.6 * h):], TEAL) > 0.3 and share_of(hoodie[int(0.6 * h):], TEAL) < 0.01
    assert share_of(cape[: int(0.14 * h)], GOLD) > 0.02
    assert (talking != cape).any(), "the face overlays of the new outfit (mouth open) do not change the frame"


def test_a_folder_of_layers_dropped_into_your_character_and_rebuilt(folders: UserFolders, tmp_path: Path) -> None:
    write_cape_layers(folders.source / "outfits" / "zz_cape")
    manifest = wardrobe.rebuild(folders)
    assert [o.id for o in manifest.outfits] == [*BUILT_IN, "zz_cape"] and manifest.outfit("zz_cape").name == "Zz cape"
    assert choose_atlas(folders=folders).user


def test_remove_and_rebuild_after_editing_a_layer_by_hand(with_cape: UserFolders) -> None:
    layer = with_cape.source / "outfits" / "cape" / "outfit.png"
    Image.new("RGBA", CELL, (200, 0, 200, 255)).save(layer)  # the user repaints the cape in their editor
    wardrobe.rebuild(with_cape)
    with CharacterRenderer(with_cape.atlas, idle_blink=False, clock=lambda: 0.0) as renderer:
        assert share_of(unpremultiply(renderer.render(FrameState("cape"), CELL)), (200, 0, 200)) > 0.5

    hat = wardrobe.add("aa_hat", write_cape_layers(with_cape.data / "hat"), None, with_cape)
    assert [o.id for o in hat.outfits][-2:] == ["cape", "aa_hat"]  # added outfits keep the order they were added in
    wardrobe.remove("aa_hat", with_cape)
    manifest = wardrobe.remove("pyjamas", with_cape)  # a built-in outfit leaves the user's copy only
    assert [o.id for o in manifest.outfits] == [o for o in BUILT_IN if o != "pyjamas"] + ["cape"]
    assert "pyjamas" in {o.id for o in Manifest.load(DEFAULT_DIR).outfits}


def test_the_readme_outfit_commands_work_as_written(tmp_path: Path) -> None:
    """The `stella outfits` lines of the README's "Your own character", run in order as a user types them."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Your own character\n", 1)[1].split("\n## ")[0]
    block = next(b for b in section.split("```sh\n")[1:] if "stella outfits add" in b).split("```")[0]
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.startswith("stella outfits")]
    assert [c.split()[2] for c in commands] == ["add", "list", "remove", "build", "reset"]
    layers = write_cape_layers(tmp_path / "my-cape")
    folders = UserFolders(tmp_path / "xdg-data" / "stella")
    for command in commands:
        args = [a.replace("~/my-cape", str(layers)) for a in shlex.split(command)[1:]]
        done = stella(*args, data_home=tmp_path / "xdg-data")
        assert done.returncode == 0, f"{command}: {done.stderr}"
        if args[1] == "add":
            assert choose_atlas(folders=folders).manifest.outfit("cape").name == "Teal cape"
        if args[1] == "remove":
            assert "cape" not in {o.id for o in choose_atlas(folders=folders).manifest.outfits}
    assert not folders.atlas.exists() and choose_atlas(folders=folders).folder == DEFAULT_DIR


# ---- every bad input: a clear error naming the file, and nothing changed ------------------------


@pytest.fixture
def unchanged(with_cape: UserFolders) -> Iterator[UserFolders]:
    """The user's working atlas and folder, checked to be exactly as they were after the bad command."""
    def files() -> dict[Path, bytes]:
        return {p: p.read_bytes() for root in (with_cape.atlas, with_cape.source) for p in root.rglob("*")
                if p.is_file()}

    before = files()
    yield with_cape
    assert files() == before
    assert sorted(p.name for p in with_cape.data.iterdir()) == ["atlas", "character"]  # no staged leftovers


def _add_error(folders: UserFolders, layers: Path, outfit_id: str = "hat", name: str | None = None) -> AtlasError:
    with pytest.raises(AtlasError) as info:
        wardrobe.add(outfit_id, layers, name, folders)
    return info.value


def test_wrong_size_names_the_file_and_both_sizes(unchanged: UserFolders, tmp_path: Path) -> None:
    layers = write_cape_layers(tmp_path / "hat", size=(400, 600))
    err = _add_error(unchanged, layers)
    assert err.path == layers / "outfit.png"
    assert "size mismatch: 400x600" in str(err) and "448x672" in str(err) and "exactly that size" in str(err)


def test_missing_outfit_layer(unchanged: UserFolders, tmp_path: Path) -> None:
    layers = write_cape_layers(tmp_path / "hat")
    (layers / "outfit.png").unlink()
    err = _add_error(unchanged, layers)
    assert err.path == layers / "outfit.png" and "missing layer 'outfit'" in str(err)


def test_not_a_png(unchanged: UserFolders, tmp_path: Path) -> None:
    layers = write_cape_layers(tmp_path / "hat")
    (layers / "outfit.png").write_bytes(b"GIMP project, not an image")
    err = _add_error(unchanged, layers)
    assert err.path == layers / "outfit.png" and "not a readable PNG" in str(err)

    jpeg = io.BytesIO()
    Image.new("RGB", CELL, TEAL).save(jpeg, "JPEG")
    (layers / "outfit.png").write_bytes(jpeg.getvalue())
    err = _add_error(unchanged, layers)
    assert err.path == layers / "outfit.png" and "is a JPEG file; layers must be PNG" in str(err)


def test_a_layer_saved_in_another_format_or_under_another_name(unchanged: UserFolders, tmp_path: Path) -> None:
    layers = write_cape_layers(tmp_path / "hat")
    (layers / "outfit.png").rename(layers / "outfit.webp")
    err = _add_error(unchanged, layers)
    assert err.path == layers / "outfit.webp" and "save this one as outfit.png" in str(err)

    (layers / "outfit.webp").rename(layers / "Cape.png")
    err = _add_error(unchanged, layers)
    assert err.path == layers / "Cape.png" and "unknown layer" in str(err) and "outfit.png" in str(err)


def test_layer_without_transparency(unchanged: UserFolders, tmp_path: Path) -> None:
    layers = write_cape_layers(tmp_path / "hat")
    Image.new("RGB", CELL, TEAL).save(layers / "outfit.png")
    err = _add_error(unchanged, layers)
    assert err.path == layers / "outfit.png" and "mode RGB" in str(err) and "transparency" in str(err)


def test_duplicate_id(unchanged: UserFolders, tmp_path: Path) -> None:
    layers = write_cape_layers(tmp_path / "again")
    for taken, label in (("cape", "Teal cape"), ("hoodie", "Hoodie")):
        err = _add_error(unchanged, layers, taken)
        assert err.path == unchanged.source / "outfits" / taken
        assert "duplicate id" in str(err) and repr(label) in str(err) and f"stella outfits remove {taken}" in str(err)


def test_bad_id_empty_name_and_not_a_folder(unchanged: UserFolders, tmp_path: Path) -> None:
    layers = write_cape_layers(tmp_path / "hat")
    for bad in ("Red Hat", "../escape", ""):
        assert "cannot be an outfit id" in str(_add_error(unchanged, layers, bad))
    assert "--name must not be empty" in str(_add_error(unchanged, layers, name="  "))
    err = _add_error(unchanged, layers / "outfit.png")
    assert err.path == layers / "outfit.png" and "not a folder" in str(err)


def test_errors_in_the_users_character_folder_name_that_folder(unchanged: UserFolders) -> None:
    with pytest.raises(AtlasError) as info:
        wardrobe.remove("bikini", unchanged)
    assert info.value.path == unchanged.source / "outfits" / "bikini"
    assert "no outfit 'bikini'" in str(info.value) and "cape" in str(info.value)


def test_a_broken_hand_edit_is_reported_in_place_and_the_old_atlas_kept(with_cape: UserFolders) -> None:
    built = (with_cape.atlas / "atlas.png").read_bytes()
    layer = with_cape.source / "outfits" / "hoodie" / "outfit.png"
    Image.new("RGBA", (10, 10)).save(layer)
    with pytest.raises(AtlasError) as info:
        wardrobe.rebuild(with_cape)
    assert info.value.path == layer and "size mismatch" in str(info.value)  # not the staged copy's path
    assert (with_cape.atlas / "atlas.png").read_bytes() == built


def test_a_first_add_that_cannot_work_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    fresh = UserFolders(tmp_path / "new-user" / "stella")
    assert "duplicate id" in str(_add_error(fresh, write_cape_layers(tmp_path / "hood"), "hoodie"))
    assert "size mismatch" in str(_add_error(fresh, write_cape_layers(tmp_path / "small", size=(64, 96))))
    assert not fresh.data.exists()


def test_cli_error_exits_2_with_the_file_and_the_fix(tmp_path: Path) -> None:
    layers = write_cape_layers(tmp_path / "hat", size=(100, 100))
    proc = stella("outfits", "add", "hat", "--layers", str(layers), data_home=tmp_path / "xdg-data")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: {layers / 'outfit.png'}: size mismatch"), proc.stderr
    assert not (tmp_path / "xdg-data" / "stella" / "atlas").exists()


# ---- which atlas the app shows ------------------------------------------------------------------


def test_without_a_user_atlas_the_built_in_one_is_shown_quietly(tmp_path: Path) -> None:
    choice = choose_atlas(folders=UserFolders(tmp_path / "nobody"))
    assert choice.folder == DEFAULT_DIR and not choice.user and not choice.problem


def test_an_atlas_set_in_the_app_settings_comes_first(with_cape: UserFolders, tmp_path: Path) -> None:
    choice = choose_atlas(str(with_cape.atlas), folders=UserFolders(tmp_path / "someone-else"))
    assert choice.user and choice.folder == with_cape.atlas and "cape" in {o.id for o in choice.manifest.outfits}
    missing = choose_atlas(str(tmp_path / "nowhere"), folders=with_cape)
    assert missing.folder == DEFAULT_DIR and str(tmp_path / "nowhere" / "manifest.json") in missing.problem


def _break_manifest(folders: UserFolders, edit) -> None:  # noqa: ANN001 - dict -> None
    path = folders.atlas / "manifest.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(("damage", "where", "says"), [
    (lambda f: (f.atlas / "manifest.json").write_text('{"format": "stella-atlas/1", "outf'),
     "manifest.json", "unreadable atlas manifest"),
    (lambda f: (f.atlas / "manifest.json").write_text("[]"), "manifest.json", "unreadable atlas manifest"),
    (lambda f: _break_manifest(f, lambda d: d.update(format="stella-atlas/2")),
     "manifest.json", "unsupported manifest format 'stella-atlas/2'"),
    (lambda f: _break_manifest(f, lambda d: d["outfits"][0].pop("rect")), "manifest.json",
     "unreadable atlas manifest"),
    (lambda f: (f.atlas / "atlas.png").unlink(), "atlas.png", "missing texture"),
    (lambda f: (f.atlas / "atlas.png").write_bytes((f.atlas / "atlas.png").read_bytes()[:5000]),
     "atlas.png", "not a readable PNG"),
    (lambda f: Image.new("RGBA", (64, 64)).save(f.atlas / "atlas.png"), "atlas.png", "expects an RGBA PNG of"),
    (lambda f: _break_manifest(f, lambda d: d["outfits"][-1].update(rect=[4000, 0, 448, 672])),
     "manifest.json", "points outside the texture"),
], ids=["truncated-json", "not-an-object", "wrong-version", "missing-field", "missing-texture",
        "truncated-texture", "wrong-texture-size", "rect-outside"])
def test_a_broken_user_atlas_falls_back_to_the_built_in_one_saying_why(
        with_cape: UserFolders, damage, where: str, says: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001
    damage(with_cape)
    choice = choose_atlas(folders=with_cape)
    assert choice.folder == DEFAULT_DIR and not choice.user
    assert [o.id for o in choice.manifest.outfits] == BUILT_IN
    assert choice.problem.startswith("Your own character could not be loaded, so the built-in one is shown.")
    assert str(with_cape.atlas / where) in choice.problem and says in choice.problem
    assert "stella outfits build" in choice.problem

    monkeypatch.setenv("XDG_DATA_HOME", str(with_cape.data.parent))
    assert cli.main(["outfits", "list"]) == 1
    listed = capsys.readouterr()
    assert says in listed.err and "the built-in one" in listed.out
