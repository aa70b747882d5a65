"""The Memory panel in the window's page (headless Chromium) on the real engine, store, gateway and llama-server:
what she remembers is shown with the words it came from, and Forget takes it away everywhere."""

from __future__ import annotations

import pytest

from tests.desktop.conftest import Engine
from tests.desktop.test_web_ui import open_ui, until

pytestmark = [pytest.mark.llama, pytest.mark.keyring, pytest.mark.browser]


def test_the_memory_panel_shows_what_she_remembers_and_forgets_it(page, engine: Engine, assets: str) -> None:
    open_ui(page, engine, assets)
    for said in ("My sister Lena lives in Lisbon.", "I work as a nurse."):
        page.fill("#message", said)
        page.press("#message", "Enter")
        page.wait_for_selector(f".bubble.user >> text={said}")
        until(page, "!document.querySelector('.bubble.assistant.partial') && "
                    f"document.querySelectorAll('.bubble.assistant').length >= {said.startswith('I') + 1}", 90)

    page.click("#open-memory")
    page.wait_for_selector("#memory-list li[data-fact] >> text=The user's sister lives in Lisbon.")
    item = page.locator("#memory-list li[data-fact]").filter(
        has=page.locator(".fact", has_text="The user's sister lives in Lisbon."))
    assert "You said “My sister Lena lives in Lisbon.” on" in item.locator(".source").inner_text()
    assert page.locator("#memory-list li[data-fact]").count() == 3  # Lena's name, where she lives, the job

    item.locator("button.forget").click()
    until(page, "document.querySelectorAll('#memory-list li[data-fact]').length === 2")
    assert "Lisbon" not in page.locator("#memory-list").inner_text()
    until(page, "!document.getElementById('transcript').textContent.includes('Lisbon')")  # the exchange went too

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#memory-forget-all")
    page.wait_for_selector("#memory-list li.empty")
    assert page.locator("#memory-forget-all").is_disabled()
    page.click("#close-memory")
    assert page.locator("#memory").is_hidden()
