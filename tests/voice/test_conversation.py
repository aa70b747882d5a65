"""The conversation the sidecar owns, and the settings that shape it."""

from __future__ import annotations

from pathlib import Path

import pytest

from remote_api.shared.config_loader import ConfigError, load_config
from sidecar.config import AppConfig, ChatConfig, PersonaConfig, VoiceConfig
from sidecar.conversation import Conversation, Exchange, MemoryHistory, user_name
from sidecar.outfit_catalogue import load_catalogue

from .speech import QUESTIONS


def test_messages_hold_the_persona_an_example_the_history_and_the_question():
    convo = Conversation(PersonaConfig(name="Nova", personality="a calm guide"), ChatConfig())
    convo.record("Hi!", "Hello, friend.")
    messages = convo.messages("What time is it?")
    assert messages[0]["role"] == "system" and "You are Nova, a calm guide." in messages[0]["content"]
    assert [m["role"] for m in messages[1:]] == ["user", "assistant", "user", "assistant", "user"]
    assert messages[-3:] == [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello, friend."},
                             {"role": "user", "content": "What time is it?"}]


def test_history_is_trimmed_to_the_token_budget_oldest_first():
    history = MemoryHistory()
    for i in range(50):
        history.append(Exchange(f"question {i} " + "x" * 100, f"answer {i} " + "y" * 100))
    convo = Conversation(PersonaConfig(), ChatConfig(history_tokens=300), history)
    kept = [m["content"] for m in convo.messages("now?")[3:-1]]
    assert kept, "recent history is kept"
    assert kept[-1].startswith("answer 49") and kept[0].startswith("question ")
    assert sum(len(c) for c in kept) // 4 <= 300
    assert not any(c.startswith("question 0 ") for c in kept)


def test_an_empty_reply_is_not_history():
    convo = Conversation(PersonaConfig(), ChatConfig())
    convo.record("Hello?", "  ")
    assert convo.history.recent(10) == []


def test_settings_load_from_toml_and_environment(tmp_path: Path):
    toml = tmp_path / "stella.toml"
    toml.write_text('server_url = "http://gpu:8765"\n[voice]\nhangover_ms = 500\nwake_engine = "openwakeword"\n'
                    'wake_model = "alexa"\n[persona]\nname = "Nova"\n[link]\nheartbeat_interval = 1.5\n')
    config = load_config(AppConfig, toml, {"STELLA_VOICE__PREROLL_MS": "200"})
    assert config.server_url == "http://gpu:8765"
    assert (config.voice.hangover_ms, config.voice.preroll_ms, config.voice.wake_model) == (500, 200, "alexa")
    assert config.persona.name == "Nova" and config.link.heartbeat_interval == 1.5


@pytest.mark.parametrize("env, message", [
    ({"STELLA_VOICE__HANGOVER": "400"}, "unknown setting 'voice.hangover'"),
    ({"STELLA_VOICE__VAD_THRESHOLD": "1.5"}, "vad_threshold"),
    ({"STELLA_VOICE__BLOCK_MS": "100"}, "block_ms"),
    ({"STELLA_VOICE__WAKE_ENGINE": "openwakeword", "STELLA_VOICE__WAKE_MODEL": "ok_google"}, "wake_model"),
    ({"STELLA_VOICE__WAKE_ENGINE": "porcupine"}, "wake_engine"),
])
def test_bad_settings_are_named(env, message):
    with pytest.raises(ConfigError, match=message):
        load_config(AppConfig, None, env)


def test_defaults_are_valid():
    assert VoiceConfig().wake_phrase == "hey stella"
    assert AppConfig().chat.max_tokens <= 64, "a small model must answer briefly"


def test_the_prompt_prefix_stays_the_same_between_turns_until_the_history_budget_overflows():
    """llama-server reuses its cache only for a byte-identical prefix: trimming one exchange per turn
    would rewrite everything after the persona every turn once the budget is full."""
    convo = Conversation(PersonaConfig(), ChatConfig(history_tokens=300))
    rewrites = 0
    previous: list[dict[str, str]] | None = None
    for i in range(40):
        prompt = convo.messages(f"question {i} " + "q" * 60)
        if previous is not None and prompt[:len(previous)] != previous:
            rewrites += 1
            assert sum(len(m["content"]) for m in prompt[3:-1]) // 4 <= 150, "a jump drops to half the budget"
        assert sum(len(m["content"]) for m in prompt[3:-1]) // 4 <= 300
        convo.record(prompt[-1]["content"], f"answer {i} " + "a" * 60)
        previous = [*prompt, {"role": "assistant", "content": f"answer {i} " + "a" * 60}]
    assert 0 < rewrites <= 40 // 3, "the prefix is rewritten only when the budget overflows"


def test_the_prefix_is_the_next_turns_prompt_without_the_question():
    convo = Conversation(PersonaConfig(), ChatConfig())
    convo.record("Hi!", "Hello, friend.")
    assert convo.messages("And you?") == [*convo.prefix(), {"role": "user", "content": "And you?"}]


@pytest.mark.llama
def test_a_long_spoken_conversation_never_outgrows_a_slot_of_the_model(llama_server):
    """The history budget is estimated without a tokenizer; here the real one (gemma3 on
    llama-server, the app's template) counts the prompt of every turn of a long conversation of
    short spoken exchanges — the kind that once overflowed a 1024-token slot after twenty turns."""
    import httpx

    chat = ChatConfig()
    convo = Conversation(PersonaConfig(), chat, outfits=load_catalogue())
    replies = ["I'm in a good mood. I'm in a good mood.", "I can recommend a good book, but I'm not sure.",
               "Two plus two is four.", "Penguins live in the south, on the ice!", "I'm fine, thanks."]

    def tokens(messages: list[dict[str, str]]) -> int:
        prompt = httpx.post(f"{llama_server.url}/apply-template", json={"messages": messages},
                            headers=llama_server.headers, timeout=30).json()["prompt"]
        return len(httpx.post(f"{llama_server.url}/tokenize", json={"content": prompt},
                              headers=llama_server.headers, timeout=30).json()["tokens"])

    base = tokens(convo.messages("How are you?"))
    for turn in range(40):
        question = QUESTIONS[turn % len(QUESTIONS)]
        messages = convo.messages(question)
        used = tokens(messages)
        assert used + chat.max_tokens <= 1024, f"turn {turn + 1}: {used} prompt tokens"
        assert used - base <= chat.history_tokens + 20, "the history costs what its budget says"
        convo.record(question, replies[turn % len(replies)])


@pytest.mark.parametrize(("said", "name"), [
    ("Hi! My name is Arjun. Who are you?", "Arjun"), ("Hello, I'm Priya.", "Priya"), ("Just call me Jo.", "Jo"),
    ("我叫小明。", "小明"), ("I'm tired.", None), ("I'm Happy today", None), ("My name is Stella too!", None),
    ("what's your name", None)])
def test_the_name_the_user_gives_is_theirs(said, name):
    assert user_name(said) == name


def test_the_users_name_stays_in_the_system_line_after_its_exchange_leaves_the_history_and_a_restart():
    history = MemoryHistory()
    convo = Conversation(PersonaConfig(), ChatConfig(history_tokens=120), history)
    convo.record("Hi! My name is Arjun.", "Nice to meet you, Arjun!")
    for i in range(20):
        convo.record(f"Tell me fact number {i}.", f"Here is fact number {i}, a long one to fill the history.")
    messages = convo.messages("What's my name?")
    assert not any("Arjun" in m["content"] for m in messages[1:]), "the exchange that said it is gone"
    assert "The user's name is Arjun." in messages[0]["content"]
    assert "your name is always stella" in messages[0]["content"].lower()
    restarted = Conversation(PersonaConfig(), ChatConfig(history_tokens=120))
    restarted.remember_in(history)  # the encrypted store, opened at the next start
    assert "The user's name is Arjun." in restarted.system_line()
    convo.record("Actually, call me Arju.", "Arju it is!")
    assert "The user's name is Arju." in convo.system_line()
