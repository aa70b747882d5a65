"""What the app keeps across restarts, and that none of it is readable on disk."""

from __future__ import annotations

import secrets
import stat
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.store import DeviceCredentials, PassphraseKey, RawKey, Store, StoreError

from .files import snapshot

SENTENCE = "The lighthouse keeper's violet umbrella hums at midnight."


def test_history_survives_close_and_reopen(db_path, raw_key):
    with Store.open(db_path, raw_key) as store:
        said = [
            store.append_turn("system", "You are Stella."),
            store.append_turn("user", "Hello there!", created_at_ms=1_700_000_000_000),
            store.append_turn("assistant", "Hi! Lovely to hear you."),
            store.append_turn("user", "What are you wearing?"),
        ]
    with Store.open(db_path, raw_key) as store:
        assert store.history() == said
        assert store.history(limit=2) == said[2:]  # the most recent turns, oldest first
        assert store.history(limit=0) == []
    assert said[1].created_at_ms == 1_700_000_000_000
    assert [t.id for t in said] == sorted({t.id for t in said})


def test_the_files_hold_no_plaintext(db_path, raw_key):
    store = Store.open(db_path, raw_key)
    store.append_turn("user", SENTENCE)
    store.set_setting("motto", SENTENCE)
    store.set_credentials(DeviceCredentials("https://gpu.example:8765", "device-violet-umbrella", SENTENCE))
    live = snapshot(db_path)  # while open, the new pages are in the WAL
    store.close()
    closed = snapshot(db_path)  # after close, checkpointed into the database file
    assert len(live[f"{db_path.name}-wal"]) > 0 and len(closed[db_path.name]) > 0
    for files in (live, closed):
        for name, data in files.items():
            for needle in (SENTENCE, "violet umbrella", "gpu.example", "lighthouse"):
                for encoding in ("utf-8", "utf-16-le"):
                    assert needle.encode(encoding) not in data, f"{needle!r} readable in {name}"
    with Store.open(db_path, raw_key) as store:
        assert store.history()[0].text == SENTENCE
        assert store.credentials().refresh_credential == SENTENCE


def test_barge_in_keeps_only_what_was_heard(db_path, raw_key):
    with Store.open(db_path, raw_key) as store:
        store.append_turn("user", "Tell me about the sea.")
        reply = store.append_turn("assistant", "The sea is vast. It covers most of the planet. Whales sing in it.")
        cut = store.mark_interrupted(reply.id, "The sea is vast.")
        early = store.append_turn("assistant", "Well, as I was saying", heard_text="")
        with pytest.raises(StoreError, match="no turn 999"):
            store.mark_interrupted(999, "x")
    assert cut.interrupted and cut.as_heard == "The sea is vast."
    with Store.open(db_path, raw_key) as store:
        user, reply_back, early_back = store.history()
    assert not user.interrupted and user.as_heard == "Tell me about the sea."
    assert reply_back.interrupted and reply_back.as_heard == "The sea is vast."
    assert reply_back.text.endswith("Whales sing in it.")  # the full reply is kept, marked as cut
    assert early_back == early and early_back.interrupted and early_back.as_heard == ""


def test_settings_outfit_and_credentials_survive_reopen(db_path, raw_key):
    creds = DeviceCredentials("wss://home.example/link", "dev-42", "refresh-abc")
    with Store.open(db_path, raw_key) as store:
        assert store.get_setting("volume") is None and store.get_setting("volume", 0.8) == 0.8
        assert store.outfit() is None and store.credentials() is None
        store.set_setting("volume", 0.5)
        store.set_setting("volume", 0.7)
        store.set_setting("wake_words", ["hey jarvis", "hey stella"])
        store.set_setting("voice", {"name": "joe", "rate": 1.1, "enabled": True, "pitch": None})
        store.set_outfit("red-dress")
        store.set_outfit("blue-coat")
        store.set_credentials(creds)
    with Store.open(db_path, raw_key) as store:
        assert store.get_setting("volume") == 0.7
        assert store.get_setting("wake_words") == ["hey jarvis", "hey stella"]
        assert store.get_setting("voice") == {"name": "joe", "rate": 1.1, "enabled": True, "pitch": None}
        assert store.outfit() == "blue-coat"
        assert store.credentials() == creds
        store.clear_credentials()
    with Store.open(db_path, raw_key) as store:
        assert store.credentials() is None
    assert "refresh-abc" not in repr(creds)


def test_bad_values_are_refused_and_nothing_is_stored(db_path, raw_key):
    with Store.open(db_path, raw_key) as store:
        with pytest.raises(ValueError, match="role is one of user, assistant, system, got 'narrator'"):
            store.append_turn("narrator", "Once upon a time")
        with pytest.raises(ValueError, match="setting 'volume' must be plain JSON data"):
            store.set_setting("volume", float("nan"))
        with pytest.raises(ValueError, match="setting 'device' must be plain JSON data"):
            store.set_setting("device", object())
        with pytest.raises(ValueError, match="limit must be at least 0"):
            store.history(limit=-1)
        assert store.history() == [] and store.get_setting("volume") is None
    with pytest.raises(StoreError, match="is closed"):
        store.history()


def test_database_and_its_folder_are_private(db_path, raw_key):
    with Store.open(db_path, raw_key) as store:
        store.append_turn("user", "hi")
        wal = db_path.with_name(db_path.name + "-wal")
        assert stat.S_IMODE(wal.stat().st_mode) == 0o600
    assert stat.S_IMODE(db_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(db_path.parent.stat().st_mode) == 0o700


def test_a_zero_byte_file_left_by_a_crash_at_first_start_becomes_a_fresh_database(db_path, raw_key):
    db_path.parent.mkdir()
    db_path.touch()
    with Store.open(db_path, raw_key) as store:
        store.append_turn("user", "first words")
    with Store.open(db_path, raw_key) as store:
        assert [t.text for t in store.history()] == ["first words"]


def test_passphrases_with_quotes_and_accents_reopen_the_same_database(db_path):
    composed = "Zoë's café — it''s \"ours\""
    decomposed = unicodedata.normalize("NFD", composed)
    assert decomposed != composed
    with Store.open(db_path, PassphraseKey(composed)) as store:
        store.append_turn("user", "bonjour")
    with Store.open(db_path, PassphraseKey(decomposed)) as store:  # typed on a keyboard that decomposes
        assert [t.text for t in store.history()] == ["bonjour"]


@pytest.mark.parametrize(("passphrase", "message"), [
    ("", "the passphrase is empty"),
    ("abc\x00def", "NUL"),
    ("x'" + "ab" * 32 + "'", "looks like a raw SQLCipher key"),
])
def test_unusable_passphrases_are_refused(passphrase, message):
    with pytest.raises(ValueError, match=message):
        PassphraseKey(passphrase)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def shared_db(tmp_path_factory):
    return tmp_path_factory.mktemp("shared") / "stella.db", RawKey(secrets.token_bytes(32))


@settings(max_examples=60, deadline=None)
@given(text=st.text(), heard=st.none() | st.text(), key=st.text(), value=_json)
def test_any_text_and_setting_comes_back_exactly_after_reopen(shared_db, text, heard, key, value):
    path, raw_key = shared_db
    with Store.open(path, raw_key) as store:
        turn = store.append_turn("assistant", text, heard_text=heard)
        store.set_setting(key, value)
    with Store.open(path, raw_key) as store:
        assert store.history(limit=1) == [turn]
        assert store.get_setting(key) == value
