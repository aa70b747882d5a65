"""The window's words (desktop/web/strings.js): every text the page shows is there in English and Chinese, and
the page shown in Chinese has no English left but names. Headless Chromium on the page as the shell serves it,
without an engine (the page then says it needs the app, in the window's language); the page on the real engine
switching language from Settings is in test_web_ui.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from desktop.assets import PAGE
from tests.desktop.page_texts import NAMES, PAGE_TEXTS, english_left

pytestmark = pytest.mark.browser

WEB = Path(__file__).resolve().parents[2] / "desktop" / "web"
STRINGS = """async () => {
  const m = await import('/desktop/web/strings.js');
  return m.STRINGS;
}"""
SET_LANGUAGE = """async (lang) => {
  (await import('/desktop/web/strings.js')).setLanguage(lang);
  return document.documentElement.lang;
}"""
# The page's scripts that write its words (shaders' file names in character.js would read as keys).
SOURCES = ["app.js", "memory_panel.js"]
# Keys app.js builds from a state's name: each state it writes that way.
BUILT_KEYS = ["state.idle", "state.listening", "state.thinking", "state.speaking", "enrol.listening", "enrol.done",
              "enrol.cancelled", "enrol.unheard", "enrol.unavailable"]


def open_page(page, assets: str) -> None:  # noqa: ANN001
    page.goto(f"{assets}/{PAGE}")
    page.wait_for_selector("#engine:not([hidden])")  # no engine: the page says so, after putting its words in place


def test_every_key_has_its_english_and_chinese_text_and_the_chinese_holds_no_english(page, assets: str) -> None:
    open_page(page, assets)
    strings = page.evaluate(STRINGS)
    assert set(strings["en"]) == set(strings["zh"]), set(strings["en"]) ^ set(strings["zh"])
    english = [f"{key}: {text!r}" for key, text in strings["zh"].items()
               if re.search(r"[A-Za-z]", NAMES.sub("", re.sub(r"\{\w+\}", "", text)))]
    assert not english, f"Chinese texts with English in them: {english}"
    for key, text in strings["en"].items():  # the same values to fill in, in both languages
        assert set(re.findall(r"\{\w+\}", text)) == set(re.findall(r"\{\w+\}", strings["zh"][key])), key


def test_every_key_the_page_uses_has_a_text(page, assets: str) -> None:
    open_page(page, assets)
    known = set(page.evaluate(STRINGS)["en"])
    html = (WEB / "index.html").read_text(encoding="utf-8")
    used = set(re.findall(r'data-i18n(?:-[a-z-]+)?="([\w.]+)"', html))
    app = "".join((WEB / name).read_text(encoding="utf-8") for name in SOURCES)
    used |= set(re.findall(r"""['`]([a-z]+\.[a-z_]+)['`]""", app)) | set(BUILT_KEYS)
    assert len(used) > 100 and not used - known, f"keys without a text: {sorted(used - known)}"
    assert all(f"`{key.split('.')[0]}.${{" in app for key in BUILT_KEYS), "the keys app.js builds changed"


def test_the_page_in_chinese_has_no_english_left_and_back_in_english_reads_as_before(page, assets: str) -> None:
    open_page(page, assets)
    english = page.evaluate(PAGE_TEXTS)
    assert english[0] == {"where": "title", "text": "Stella"}
    assert english_left(english), "the English page reads in English"

    assert page.evaluate(SET_LANGUAGE, "zh") == "zh-CN"
    chinese = page.evaluate(PAGE_TEXTS)
    assert not english_left(chinese), "English left in the Chinese window:\n" + "\n".join(english_left(chinese))
    shown = {t["text"] for t in chinese}
    assert {"设置", "保存", "输入消息…", "按住说话", "解锁你的对话", "服务器地址", "语言 / Language"} <= shown
    assert page.locator("#engine").inner_text().startswith("这个页面需要 Stella 应用")
    assert page.locator("[name=language] option").all_inner_texts() == ["English", "中文"]

    assert page.evaluate(SET_LANGUAGE, "en") == "en"
    assert page.evaluate(PAGE_TEXTS) == english


def test_an_unknown_language_shows_english(page, assets: str) -> None:
    open_page(page, assets)
    assert page.evaluate(SET_LANGUAGE, "zh") == "zh-CN"
    assert page.evaluate(SET_LANGUAGE, "tlh") == "en"
    assert page.locator("#settings h2").text_content() == "Settings"
