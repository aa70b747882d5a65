"""`stella memory list | forget ID | forget --all` on a real store whose key is in the real Secret Service."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from desktop.cli import main
from sidecar.conversation import Exchange
from sidecar.engine.stored import StoreHistory
from sidecar.store import KeyringKey, Store


@pytest.fixture
def store_path(secret_service, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for key, value in secret_service.env.items():
        monkeypatch.setenv(key, value)
    path = tmp_path / "stella.db"
    with Store.open(path, KeyringKey()) as store:
        history = StoreHistory(store)
        history.append(Exchange("My sister Lena lives in Lisbon.", "How lovely!"))
        history.append(Exchange("我喜欢爬山。", "爬山很好！"))
    return path


def stella(path: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["memory", "--store", str(path), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_list_shows_each_fact_with_its_source_and_forget_removes_it(store_path, capsys):
    code, out, _ = stella(store_path, "list", capsys=capsys)
    assert code == 0
    assert re.search(r"^\s+\d+  The user's sister lives in Lisbon\.\s+\d{4}-\d\d-\d\d \d\d:\d\d  “My sister Lena lives "
                     r"in Lisbon\.”$", out, re.M)
    assert "用户喜欢爬山。" in out and "3 facts." in out
    lisbon = re.search(r"^\s+(\d+)  The user's sister lives in Lisbon", out, re.M)[1]
    assert stella(store_path, "forget", lisbon, capsys=capsys)[:2] == (
        0, f"Forgot fact {lisbon}, and the exchanges that mentioned it.\n")
    _, out, _ = stella(store_path, "list", capsys=capsys)
    assert "Lisbon" not in out and "(the words were forgotten)" in out  # Lena's name stays; its sentence went
    assert stella(store_path, "forget", "--all", capsys=capsys)[:2] == (
        0, "Forgot 2 facts, and the exchanges that mentioned them.\n")
    assert stella(store_path, "list", capsys=capsys)[1] == "Stella remembers no facts about you.\n"


def test_bad_requests_say_what_to_do(store_path, capsys, tmp_path):
    code, _, err = stella(store_path, "forget", capsys=capsys)
    assert code == 2 and "give one fact's ID (see `stella memory list`) or --all" in err
    code, _, err = stella(store_path, "forget", "999", capsys=capsys)
    assert code == 1 and "there is no fact 999; `stella memory list` shows their ids" in err
    assert stella(tmp_path / "none.db", "list", capsys=capsys)[:2] == (
        0, f"Stella remembers nothing yet: there is no store at {tmp_path / 'none.db'}.\n")
