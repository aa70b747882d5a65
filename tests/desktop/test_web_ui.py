"""The window's page in headless Chromium, on the real engine, gateway and llama-server."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from tests.desktop.conftest import Engine, run_engine
from tests.desktop.gateway import Gateway
from tests.desktop.network import Network
from tests.desktop.page_texts import PAGE_TEXTS, english_left
from tests.desktop.polling import wait_for
from tests.store.files import snapshot

pytestmark = [pytest.mark.llama, pytest.mark.keyring, pytest.mark.browser]

# Records what the user saw change: the state indicator, and the text of Stella's newest bubble.
WATCH = """() => {
  window.seen = {states: [], reply: []};
  const state = document.getElementById('state');
  new MutationObserver(() => seen.states.push(state.dataset.state)).observe(state, {attributes: true});
  const list = document.getElementById('transcript');
  new MutationObserver(() => {
    const bubble = list.querySelector('.bubble.assistant:last-child');
    if (bubble) seen.reply.push(bubble.textContent);
  }).observe(list, {subtree: true, childList: true, characterData: true});
}"""
RED_SHARE = """() => {
  const img = document.getElementById('character-frames');
  if (!img.complete || !img.naturalWidth) return null;  // between two frames
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, c.width, c.height).data;
  let red = 0, opaque = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (d[i + 3] < 200) continue;
    opaque++;
    if (d[i] > 170 && d[i + 1] < 90 && d[i + 2] < 90) red++;
  }
  return [opaque ? red / opaque : 0];
}"""


def open_ui(page, engine: Engine, assets: str) -> None:  # noqa: ANN001
    page.goto(engine.page_url(assets))
    page.wait_for_selector('#link[data-transport="websocket"]')
    page.wait_for_selector('.outfit[aria-pressed="true"]')
    page.evaluate(WATCH)


def until(page, expression: str, timeout: float = 20) -> None:  # noqa: ANN001
    """Poll a page expression from Python: the page's CSP forbids the eval() wait_for_function needs."""
    wait_for(lambda: page.evaluate(f"() => {expression}"), timeout, expression)


def red_share(page) -> float:  # noqa: ANN001
    """How much of the streamed character is red (waits for a whole frame)."""
    return wait_for(lambda: page.evaluate(RED_SHARE), 5, "a whole frame")[0]


def toast_text(page) -> str:  # noqa: ANN001
    return " | ".join(page.locator("#toasts .toast p").all_inner_texts())


def test_a_typed_message_streams_the_reply_into_the_transcript(page, engine: Engine, assets: str) -> None:
    open_ui(page, engine, assets)
    page.fill("#message", "Hello Stella! What do you like to do?")
    page.press("#message", "Enter")

    page.wait_for_selector(".bubble.user >> text=Hello Stella! What do you like to do?")
    final = page.wait_for_selector(".bubble.assistant:not(.partial)", timeout=60_000).inner_text()
    seen = page.evaluate("seen")
    partials = [t for t in dict.fromkeys(seen["reply"]) if t not in ("…", final)]
    assert final.strip() and final != "No reply this time."
    assert len(partials) >= 2, f"the reply arrived in one piece, not streamed: {seen['reply']}"
    assert all(final.startswith(p.strip()) for p in partials), seen["reply"]
    states = [s for i, s in enumerate(seen["states"]) if i == 0 or s != seen["states"][i - 1]]
    assert states[-3:] == ["thinking", "speaking", "idle"], seen["states"]
    assert page.locator("#state .label").inner_text() == "Idle"
    assert page.locator("#message").input_value() == ""


def test_a_typed_outfit_request_is_worn_at_once_without_asking_the_model(page, engine: Engine, assets: str) -> None:
    open_ui(page, engine, assets)
    assert page.get_attribute('.outfit[aria-pressed="true"]', "data-outfit") != "red_dress"
    page.fill("#message", "Could you wear the red dress?")
    page.press("#message", "Enter")

    page.wait_for_selector('.outfit[data-outfit="red_dress"][aria-pressed="true"]', timeout=10_000)
    assert page.evaluate("document.body.dataset.outfit") == "red_dress"
    page.fill("#message", "Put on the bikini")  # not in the catalogue: goes to the model, changes nothing
    page.press("#message", "Enter")
    page.wait_for_selector(".bubble.assistant:not(.partial)", timeout=60_000)
    assert page.get_attribute('.outfit[aria-pressed="true"]', "data-outfit") == "red_dress"
    assert page.locator(".bubble.assistant").count() == 1, "the outfit request went to the model"


def test_pairing_then_link_status_follows_the_network_websocket_longpoll_offline_and_back(
        page, gateway: Gateway, engine_env: dict[str, str], tmp_path: Path, assets: str) -> None:
    env = {**engine_env, "STELLA_CHAT__REPLY_TIMEOUT_S": "5"}
    with Network(gateway.port) as net, run_engine(net.url, tmp_path / "s.db", env) as engine:
        # A server reached through a proxy is not "local": this device must be paired first.
        page.goto(engine.page_url(assets))
        wait_for(lambda: "does not accept this device" in toast_text(page), 15, "the refusal explained")
        page.click("#open-settings")
        page.fill("#pairing-code", gateway.pairing_code("test-laptop"))
        page.click("#pair")
        page.wait_for_selector('#link[data-transport="websocket"]')
        assert page.locator("#pairing-status").inner_text() == "This device is paired with the server."
        page.click("#close-settings")
        page.evaluate(WATCH)
        label = page.locator("#link .label")
        assert label.inner_text() == "Online · WebSocket"

        net.block_websockets()
        page.wait_for_selector('#link[data-transport="longpoll"]')
        assert label.inner_text() == "Online · Long-poll"

        net.go_offline()
        page.wait_for_selector('#link[data-transport="offline"]')
        wait_for(lambda: re.fullmatch(r"Offline · retrying( in \d+ s|…)", label.inner_text()), 5,
                 "the reconnect countdown")
        page.fill("#message", "Are you there?")
        page.press("#message", "Enter")
        wait_for(lambda: "no complete reply within 5 s" in toast_text(page), 15, "a plain-words timeout message")
        assert "Check that the Stella server" in toast_text(page)

        net.heal()
        page.wait_for_selector('#link[data-transport="websocket"]', timeout=20_000)
        assert label.inner_text() == "Online · WebSocket"


def test_killing_the_engine_the_window_says_so_and_it_comes_back(page, engine: Engine, assets: str) -> None:
    open_ui(page, engine, assets)
    page.click('.outfit[data-outfit="school"]')
    until(page, "document.body.dataset.outfit === 'school'")
    wait_for(lambda: engine.store.with_suffix(".db-wal").exists(), 5, "the outfit being saved")
    pid = engine.supervisor.pid
    assert pid is not None

    os.kill(pid, signal.SIGKILL)
    banner = page.locator("#engine")
    wait_for(lambda: "Lost contact with Stella’s engine" in banner.inner_text(), 5, "the lost-contact banner")
    page.fill("#message", "hello?")
    page.press("#message", "Enter")
    wait_for(lambda: "not reachable right now" in toast_text(page), 2, "the unsent message explained")

    wait_for(lambda: "has been restarted" in banner.inner_text(), 20, "the restarted banner")
    assert banner.inner_text() == ("Stella’s engine stopped unexpectedly (it was stopped by SIGKILL) "
                                   "and has been restarted.")
    assert engine.supervisor.pid not in (None, pid)
    assert page.evaluate("document.body.dataset.outfit") == "school"  # the store kept the choice
    page.wait_for_selector('#link[data-transport="websocket"]')


def test_settings_are_kept_and_bad_ones_refused_in_plain_words(page, engine: Engine, assets: str) -> None:
    open_ui(page, engine, assets)
    page.click("#open-settings")
    form = page.locator("#settings-form")
    until(page, "document.querySelector('[name=server_url]').value.startsWith('http://127.0.0.1')")
    form.locator("[name=wake_phrase]").fill("hey luna")
    form.locator("[name=tts_engine]").select_option("espeak")
    page.click("#settings-form button[type=submit]")
    page.wait_for_selector("#settings-note >> text=Saved ✓")

    form.locator("[name=server_url]").fill("gpu-box:8765")
    page.click("#settings-form button[type=submit]")
    wait_for(lambda: "server address must start with http:// or https://" in toast_text(page), 5,
             "the bad address explained")

    page.reload()
    open_ui(page, engine, assets)
    page.click("#open-settings")
    until(page, "document.querySelector('[name=wake_phrase]').value === 'hey luna'")
    assert form.locator("[name=tts_engine]").input_value() == "espeak"
    assert form.locator("[name=server_url]").input_value() == engine.supervisor.command[
        engine.supervisor.command.index("--server") + 1]


def test_set_to_chinese_the_window_reads_in_chinese_keeps_it_and_goes_back(page, engine: Engine, assets: str) -> None:
    open_ui(page, engine, assets)
    labels = page.locator(".outfit span")
    assert labels.all_inner_texts() == ["Hoodie", "Red dress", "School uniform", "Space suit", "Pyjamas", "Formal",
                                        "Hanfu robe", "Cyberpunk jacket"]
    page.click("#open-settings")
    form = page.locator("#settings-form")
    until(page, "document.querySelector('[name=server_url]').value.startsWith('http://127.0.0.1')")
    language = form.locator("[name=language]")
    assert language.input_value() == "en" and page.locator("#settings label.language").inner_text().startswith(
        "Language / 语言")
    assert language.locator("option").all_inner_texts() == ["English", "中文"]
    language.select_option("zh")
    page.click("#settings-form button[type=submit]")
    page.wait_for_selector("#settings-note >> text=已保存 ✓")

    assert page.evaluate("document.documentElement.lang") == "zh-CN"
    assert page.locator("#settings h2").inner_text() == "设置"
    assert page.locator("#state .label").inner_text() == "空闲"
    assert page.locator("#link .label").inner_text() == "在线 · WebSocket"
    assert labels.all_inner_texts() == ["卫衣", "红裙子", "校服", "宇航服", "睡衣", "礼服", "古风汉服", "赛博朋克"]
    assert page.locator("#pairing-status").inner_text() in ("这台设备已与服务器配对。", page.evaluate(
        "async () => (await import('/desktop/web/strings.js')).STRINGS.zh['settings.not_paired']"))
    left = english_left(page.evaluate(PAGE_TEXTS))
    assert not left, "English left in the Chinese window:\n" + "\n".join(left)

    page.click("#close-settings")
    page.fill("#message", "换上汉服")  # her outfits answer to their Chinese names, the buttons show them
    page.press("#message", "Enter")
    page.wait_for_selector('.outfit[data-outfit="hanfu"][aria-pressed="true"]', timeout=10_000)
    assert page.get_attribute('.outfit[data-outfit="hanfu"]', "title") == "古风汉服"

    page.reload()  # the engine kept the language: the window opens in Chinese
    open_ui(page, engine, assets)
    until(page, "document.documentElement.lang === 'zh-CN'")
    assert page.get_attribute("#message", "placeholder") == "输入消息…"
    assert page.locator("#state .label").inner_text() == "空闲"

    page.click("#open-settings")
    until(page, "document.querySelector('[name=language]').value === 'zh'")
    form.locator("[name=language]").select_option("en")
    page.click("#settings-form button[type=submit]")
    page.wait_for_selector("#settings-note >> text=Saved ✓")
    assert page.evaluate("document.documentElement.lang") == "en"
    assert page.locator("#state .label").inner_text() == "Idle"
    assert labels.all_inner_texts()[-2:] == ["Hanfu robe", "Cyberpunk jacket"]
    assert page.get_attribute("#message", "placeholder") == "Type a message…"


def test_the_embedded_defaults_model_is_offered_with_what_each_is_like(page, engine: Engine, assets: str) -> None:
    open_ui(page, engine, assets)
    page.click("#open-settings")
    until(page, "document.querySelectorAll('[name=embedded_model] option').length > 1")
    labels = page.locator("[name=embedded_model] option").all_inner_texts()
    assert labels[0].startswith("The default (")
    assert any(label.startswith("qwen2.5-0.5b — faster") for label in labels), labels
    assert all(" GB" in label for label in labels[1:]), "each model with its size"


def test_the_two_stage_wake_word_is_offered_with_its_model_choice(page, engine: Engine, assets: str) -> None:
    open_ui(page, engine, assets)
    page.click("#open-settings")
    form = page.locator("#settings-form")
    until(page, "document.querySelector('[name=server_url]').value.startsWith('http://127.0.0.1')")
    form.locator("[name=wake_engine]").select_option("two_stage")
    assert form.locator("[name=wake_model]").is_visible(), "the built-in word to listen for is chosen here too"
    assert not form.locator("[name=wake_phrase]").is_visible()
    # the engine's answer to opening (fresh device lists) may come after the first change: it must not undo it
    page.evaluate("document.querySelector('[name=wake_model] option').dataset.stale = '1'")
    page.evaluate("document.getElementById('open-settings').click()")  # asks for the lists again
    until(page, "!document.querySelector('[name=wake_model] option[data-stale]')")  # they came
    assert form.locator("[name=wake_engine]").input_value() == "two_stage"
    assert form.locator("[name=wake_model]").is_visible() and not form.locator("[name=wake_phrase]").is_visible()


def test_a_late_answer_to_opening_settings_does_not_undo_what_is_being_typed(page, engine: Engine,
                                                                           assets: str) -> None:
    """The engine's answer to opening (fresh device lists; slow when the sound system is) may come while the
    user is still in a field they typed in — no "change" yet, that comes when they leave it."""
    held: list[str] = []
    to_page: list = []

    def through(ws) -> None:  # noqa: ANN001 - Playwright's WebSocketRoute
        server = ws.connect_to_server()
        to_page.append(ws)

        def from_engine(message: str | bytes) -> None:
            if holding and isinstance(message, str) and '"type":"settings"' in message:
                held.append(message)  # the answer to opening, kept back
            else:
                ws.send(message)

        server.on_message(from_engine)

    holding = False
    page.route_web_socket(re.compile(r"^ws://127\.0\.0\.1:\d+/$"), through)
    open_ui(page, engine, assets)
    holding = True
    page.click("#open-settings")
    wait_for(lambda: page.wait_for_timeout(20) or held, 10, "the engine's answer to opening")  # (Playwright's
    # handlers run while it is called)
    page.locator("[name=wake_phrase]").fill("hey luna")  # the field keeps the focus: no change event yet
    page.evaluate("document.querySelector('[name=wake_model] option').dataset.stale = '1'")
    holding = False
    for message in held:
        to_page[-1].send(message)
    until(page, "!document.querySelector('[name=wake_model] option[data-stale]')")  # it came
    assert page.locator("[name=wake_phrase]").input_value() == "hey luna"


def test_without_webgl_the_character_comes_as_frames_from_the_engine(browser, engine: Engine, assets: str) -> None:
    page = browser.new_page()
    try:
        page.add_init_script("""(() => {
          const real = HTMLCanvasElement.prototype.getContext;
          HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {
            return kind === 'webgl2' ? null : real.call(this, kind, ...rest);
          };
        })()""")
        open_ui(page, engine, assets)
        until(page, "document.getElementById('character-frames').naturalWidth > 100", 30)
        assert page.locator("#character").is_hidden()
        before = red_share(page)
        page.click('.outfit[data-outfit="red_dress"]')
        wait_for(lambda: red_share(page) > before + 0.1, 10, "the red dress in the streamed frames")
    finally:
        page.close()


def without_keyring(engine_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The engine's environment on a machine with no Secret Service: its D-Bus address leads nowhere."""
    return {**engine_env, "DBUS_SESSION_BUS_ADDRESS": f"unix:path={tmp_path / 'no-bus'}"}


def set_passphrase(page, first: str, second: str) -> None:  # noqa: ANN001
    page.fill("#passphrase", first)
    page.fill("#passphrase-confirm", second)
    page.click("#unlock-submit")


def test_without_a_keyring_a_passphrase_protects_the_store_and_a_wrong_one_changes_nothing(
        page, gateway: Gateway, engine_env: dict[str, str], tmp_path: Path, assets: str) -> None:
    env, store = without_keyring(engine_env, tmp_path), tmp_path / "s.db"
    passphrase = "a long walk by the sea"
    with run_engine(gateway.url, store, env) as engine:
        page.goto(engine.page_url(assets))
        page.wait_for_selector("#unlock", state="visible")
        assert page.locator("#unlock-title").inner_text() == "Choose a passphrase for your conversations"
        why = page.locator("#unlock-why").inner_text()
        assert "no keyring was found" in why and "gnome-keyring" in why and "passphrase" in why
        assert not store.exists() or store.stat().st_size == 0  # nothing is written before the user chooses

        set_passphrase(page, passphrase, passphrase + "!")
        assert page.locator("#unlock-error").inner_text().startswith("The two passphrases are not the same")
        set_passphrase(page, "short", "short")
        page.wait_for_selector("#unlock-error >> text=at least 8 characters")
        set_passphrase(page, passphrase, passphrase)
        page.wait_for_selector("#unlock", state="hidden")
        page.wait_for_selector('#link[data-transport="websocket"]')
        page.click('.outfit[data-outfit="school"]')
        page.fill("#message", "Remember the blue kite.")
        page.press("#message", "Enter")
        page.wait_for_selector(".bubble.assistant:not(.partial)", timeout=60_000)
        assert page.locator('#toasts .toast[data-kind="error"]').count() == 0, toast_text(page)
    assert store.read_bytes()[:16] != b"SQLite format 3\x00"  # encrypted, never plain

    before = snapshot(store)
    page.goto("about:blank")  # the next address differs only after the '#': it would not load the page again
    with run_engine(gateway.url, store, env) as engine:
        page.goto(engine.page_url(assets))
        page.wait_for_selector("#unlock", state="visible")
        assert page.locator("#unlock-title").inner_text() == "Unlock your conversations"
        assert page.locator("#passphrase-confirm").is_hidden()
        page.fill("#passphrase", "a short walk by the sea")
        page.click("#unlock-submit")
        page.wait_for_selector("#unlock-error >> text=does not open your saved conversations")
        assert page.locator("#unlock").is_visible() and page.locator("#passphrase").input_value() == ""
        assert snapshot(store) == before  # the wrong passphrase left every byte as it was

        page.fill("#passphrase", passphrase)
        page.click("#unlock-submit")
        page.wait_for_selector("#unlock", state="hidden")
        page.wait_for_selector(".bubble.user.earlier >> text=Remember the blue kite.")
        until(page, "document.body.dataset.outfit === 'school'")


def test_without_a_keyring_going_on_unsaved_says_so_and_writes_nothing(
        page, gateway: Gateway, engine_env: dict[str, str], tmp_path: Path, assets: str) -> None:
    with run_engine(gateway.url, tmp_path / "s.db", without_keyring(engine_env, tmp_path)) as engine:
        page.goto(engine.page_url(assets))
        page.click("#unlock-skip")
        page.wait_for_selector("#unlock", state="hidden")
        wait_for(lambda: "conversations and settings are not being saved" in toast_text(page), 10,
                 "what will not be kept")
        page.wait_for_selector('#link[data-transport="websocket"]')
        page.fill("#message", "Hello?")
        page.press("#message", "Enter")
        page.wait_for_selector(".bubble.assistant:not(.partial)", timeout=60_000)
    assert not (tmp_path / "s.db").exists() or (tmp_path / "s.db").stat().st_size == 0


def test_the_timeline_debug_panel_is_off_by_default_and_shows_each_turns_gaps_when_asked(
        page, engine: Engine, assets: str) -> None:
    open_ui(page, engine, assets)
    assert page.locator("#timeline-debug").is_hidden(), "the debug panel is off by default"
    page.goto(engine.page_url(assets) + "&debug=timeline")
    page.reload()  # a new hash alone does not load the page again
    page.wait_for_selector('#link[data-transport="websocket"]')
    page.fill("#message", "Hi Stella, how are you?")
    page.press("#message", "Enter")
    page.wait_for_selector("#timeline-debug tr[data-stage='llm_first_token']", timeout=60_000)
    assert page.locator("#timeline-debug").is_visible()
    assert "turn" in page.locator("#timeline-debug caption").inner_text()
