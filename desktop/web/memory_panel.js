// The Memory panel: the facts Stella remembers about the user, each with the words it came from and when,
// a Forget button each and Forget all. The engine sends them as the `memory` event when the panel asks
// (`{cmd: 'memory', action: 'list'}`) and after each forgetting; what is forgotten leaves the store, its
// index and the history she is prompted with (docs/memory.md). Its words are in MEMORY_STRINGS, English
// and Chinese; static elements name theirs with data-i18n="memory.<key>".

export const MEMORY_STRINGS = {
  en: {
    open: 'Memory',
    title: 'What Stella remembers',
    intro: 'Facts she took from what you told her, kept only in her encrypted store on this computer. They leave '
      + 'it only inside what is sent to your own Stella server.',
    empty: 'She remembers nothing about you yet. Tell her about yourself: “My sister Lena lives in Lisbon.”',
    close: 'Close memory',
    forget: 'Forget',
    forgetAll: 'Forget all',
    confirmAll: 'Forget everything she remembers about you, and the exchanges where you said it?',
    source: (words, when) => `You said “${words}” on ${when}`,
    sourceGone: (when) => `Learned on ${when}; your words were forgotten`,
    forgotten: 'Forgotten.',
    unreachable: 'Stella’s engine is not reachable right now; try again in a moment.',
  },
  zh: {
    open: '记忆',
    title: 'Stella 记得的事',
    intro: '这些是她从你说的话里记下的事，只保存在这台电脑上她加密的存储里；只会在发给你自己的 Stella 服务器的内容中离开。',
    empty: '她还不记得关于你的任何事。告诉她一些关于你的事吧：“我妹妹住在上海。”',
    close: '关闭记忆',
    forget: '忘掉',
    forgetAll: '全部忘掉',
    confirmAll: '忘掉她记得的关于你的一切，以及你说这些话的对话吗？',
    source: (words, when) => `你在 ${when} 说：“${words}”`,
    sourceGone: (when) => `记于 ${when}；你的原话已被忘掉`,
    forgotten: '已忘掉。',
    unreachable: '现在连不上 Stella 的引擎，请稍后再试。',
  },
};

// The page's language: the <html lang> the window's language mode sets ("zh…" for Chinese).
export function memoryLanguage(doc = document) {
  return (doc.documentElement.lang || 'en').toLowerCase().startsWith('zh') ? 'zh' : 'en';
}

export function memoryText(key, ...args) {
  const text = MEMORY_STRINGS[memoryLanguage()][key];
  return typeof text === 'function' ? text(...args) : text;
}

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
    this.forgetAll.addEventListener('click', () => {
      if (window.confirm(memoryText('confirmAll'))) this._send({ cmd: 'memory', action: 'forget_all' });
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
    const when = (ms) => new Date(ms).toLocaleString(memoryLanguage() === 'zh' ? 'zh-CN' : undefined,
      { dateStyle: 'medium', timeStyle: 'short' });
    this.list.replaceChildren(...facts.map((fact) => {
      const item = document.createElement('li');
      item.dataset.fact = String(fact.id);
      const said = document.createElement('p');
      said.className = 'fact';
      said.textContent = fact.said;
      const source = document.createElement('p');
      source.className = 'source';
      source.textContent = fact.source ? memoryText('source', fact.source, when(fact.when_ms))
        : memoryText('sourceGone', when(fact.when_ms));
      const forget = document.createElement('button');
      forget.type = 'button';
      forget.className = 'secondary forget';
      forget.textContent = memoryText('forget');
      forget.addEventListener('click', () => this._send({ cmd: 'memory', action: 'forget', id: fact.id }));
      item.append(said, source, forget);
      return item;
    }));
    if (!facts.length) {
      const empty = document.createElement('li');
      empty.className = 'empty';
      empty.textContent = memoryText('empty');
      this.list.append(empty);
    }
    this.forgetAll.disabled = !facts.length;
  }

  _send(command) {
    if (!this.channel.send(command)) this.toasts.show(memoryText('unreachable'));
  }
}
