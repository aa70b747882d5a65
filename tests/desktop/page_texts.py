"""What a user can read on the window's page: for tests that check which language it is in."""

from __future__ import annotations

import re

# Every text node under <body> (hidden ones too: the settings panel and the unlock dialog are in the page from the
# start), every attribute a user reads (a tooltip, a placeholder, what a screen reader says) and every text the
# style sheet puts in (::before, ::after), each with where it is. The engine's own words are left out: device and
# model names, the conversation, its messages (toasts, the store's reasons) and what it says of the voice and the
# link (the tooltips of those two indicators).
PAGE_TEXTS = """() => {
  const engineData = 'select[name=embedded_model], select[name=input_device], select[name=output_device], '
    + 'select[name=wake_model], #transcript, #toasts, #unlock-why, #unlock-help, #unlock-detail';
  const engineTitles = new Set([document.getElementById('wake'), document.getElementById('link')]);
  const where = (node) => {
    const id = node.closest('[id]');
    return `${node.tagName.toLowerCase()}${node.className && typeof node.className === 'string'
      ? '.' + node.className.split(' ')[0] : ''} in #${id ? id.id : 'body'}`;
  };
  const texts = [{where: 'title', text: document.title}];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!node.textContent.trim() || parent.closest(engineData)) continue;
    texts.push({where: where(parent), text: node.textContent.trim()});
  }
  for (const element of document.body.querySelectorAll('*')) {
    if (element.closest(engineData)) continue;
    for (const attribute of ['placeholder', 'title', 'aria-label', 'alt']) {
      if (attribute === 'title' && engineTitles.has(element) && !element.hasAttribute('data-i18n-title')) continue;
      const text = element.getAttribute(attribute);
      if (text && text.trim()) texts.push({where: `${attribute} of ${where(element)}`, text});
    }
  }
  for (const element of document.body.querySelectorAll('*')) {  // the engine's words never go into the style
    for (const pseudo of ['::before', '::after']) {
      const content = getComputedStyle(element, pseudo).content;
      if (['none', 'normal', '""'].includes(content)) continue;
      texts.push({where: `${pseudo} of ${where(element)}`, text: content});
    }
  }
  return texts;
}"""

# The Latin a Chinese window keeps: names (of her, the app, programs and protocols), a command to type, an address,
# and the language setting, which names English in English so that whoever cannot read the window finds it.
NAMES = re.compile(r"https?://\S+|`[^`]+`|stella-server device add|\bStella\b|WebSocket|Piper|Kokoro|eSpeak NG|whisper|"
                   r"\bLanguage\b|\bEnglish\b")
LATIN = re.compile(r"[A-Za-z]")


def english_left(texts: list[dict[str, str]]) -> list[str]:
    """The texts that still hold Latin letters once the names are taken out, each with where it is."""
    return [f"{t['where']}: {t['text']!r}" for t in texts if LATIN.search(NAMES.sub("", t["text"]))]
