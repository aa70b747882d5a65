// The Memory panel: the facts Stella remembers about the user, each with the words it came from and when,
// a Forget button each and Forget all. The engine sends them as the `memory` event when the panel asks
// (`{cmd: 'memory', action: 'list'}`) and after each forgetting; what is forgotten leaves the store, its
// index and the history she is prompted with (docs/memory.md). Its words, English
// and Chinese, added to the window's (strings.js) under "memory.*".

import { addStrings, language, onLanguage, show, showAsIs, t } from './strings.js';

addStrings({
  en: {
    'memory.open': 'Memory',
    'memory.openTitle': 'What Stella remembers about you',
    'memory.title': 'What Stella remembers',
    'memory.intro': 'Facts she took from what you told her, kept only in her encrypted store on this computer. They '
      + 'leave it only inside what is sent to your own Stella server.',
    'memory.empty': 'She remembers nothing about you yet. Tell her about yourself: “My sister Lena lives in Lisbon.”',
    'memory.close': 'Close memory',
    'memory.forget': 'Forget',
    'memory.forgetAll': 'Forget all',
    'memory.confirmAll': 'Forget everything she remembers about you, and the exchanges where you said it?',
    'memory.source': 'You said “{words}” on {when}',
    'memory.sourceGone': 'Learned on {when}; your words were forgotten',
    'memory.forgotten': 'Forgotten.',
    'memory.unreachable': 'Stella’s engine is not reachable right now; try again in a moment.',
  },
  zh: {
    'memory.open': '记忆',
    'memory.openTitle': 'Stella 记得的关于你的事',
    'memory.title': 'Stella 记得的事',
    'memory.intro': '这些是她从你说的话里记下的事，只保存在这台电脑上她加密的存储里；只会在发给你自己的 Stella 服务器的内容中离开。',
    'memory.empty': '她还不记得关于你的任何事。告诉她一些关于你的事吧：“我妹妹住在上海。”',
    'memory.close': '关闭记忆',
    'memory.forget': '忘掉',
    'memory.forgetAll': '全部忘掉',
    'memory.confirmAll': '忘掉她记得的关于你的一切，以及你说这些话的对话吗？',
    'memory.source': '你在 {when} 说：“{words}”',
    'memory.sourceGone': '记于 {when}；你的原话已被忘掉',
    'memory.forgotten': '已忘掉。',
    'memory.unreachable': '现在连不上 Stella 的引擎，请稍后再试。',
  },
});

export class MemoryPanel {
  constructor(channel, toasts) {
    this.channel = channel;
    this.toasts = toasts;
    this.panel = document.getElementById('memory');
    this.backdrop = document.getElementById('memory-backdrop');
    this.list = document.getElementById('memory-list');
    this.forgetAll = document.getElementById('memory-forget-all');
    document.getElementById('open-memory').addEventListener('click', () => this.open());
    document.getElementById('close-memory').addEventListener('click', () => this.close());
    this.backdrop.addEventListener('click', () => this.close());
    document.addEventListener('keydown', (e) => { if (e.key === 'Escape') this.close(); });
    onLanguage(() => { if (this.facts) this.update(this.facts); }); // the dates are written in the language
    this.forgetAll.addEventListener('click', () => {
      if (window.confirm(t('memory.confirmAll'))) this._send({ cmd: 'memory', action: 'forget_all' });
    });
  }

  get isOpen() { return !this.panel.hidden; }

  open() {
    this.panel.hidden = this.backdrop.hidden = false;
    this._send({ cmd: 'memory', action: 'list' });
  }

  close() { this.panel.hidden = this.backdrop.hidden = true; }

  // The engine's `memory` event: every fact, oldest first.
  update(facts) {
    this.facts = facts;
    const when = (ms) => new Date(ms).toLocaleString(language() === 'zh' ? 'zh-CN' : undefined,
      { dateStyle: 'medium', timeStyle: 'short' });
    this.list.replaceChildren(...facts.map((fact) => {
      const item = document.createElement('li');
      item.dataset.fact = String(fact.id);
      const said = document.createElement('p');
      said.className = 'fact';
      showAsIs(said, fact.said);
      const source = document.createElement('p');
      source.className = 'source';
      if (fact.source) show(source, 'memory.source', { words: fact.source, when: when(fact.when_ms) });
      else show(source, 'memory.sourceGone', { when: when(fact.when_ms) });
      const forget = document.createElement('button');
      forget.type = 'button';
      forget.className = 'secondary forget';
      show(forget, 'memory.forget');
      forget.addEventListener('click', () => this._send({ cmd: 'memory', action: 'forget', id: fact.id }));
      item.append(said, source, forget);
      return item;
    }));
    if (!facts.length) {
      const empty = document.createElement('li');
      empty.className = 'empty';
      show(empty, 'memory.empty');
      this.list.append(empty);
    }
    this.forgetAll.disabled = !facts.length;
  }

  _send(command) {
    if (!this.channel.send(command)) this.toasts.show(t('memory.unreachable'));
  }
}
