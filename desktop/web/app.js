// Stella's window: the character, outfits, conversation, indicators and settings, all driven by
// the engine's events over the local channel (channel.js). The same page runs in the desktop
// window and in headless Chromium for tests.

import { CharacterRenderer, autoBlink, nextBlink } from './character.js';
import { Channel, endpointFromHash } from './channel.js';
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
const STATE_LABELS = { idle: 'Idle', listening: 'Listening', thinking: 'Thinking…', speaking: 'Speaking' };
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
  }

  render(outfits) {
    this.nav.replaceChildren(...outfits.map((o) => {
      const button = el('button', { type: 'button', className: 'outfit', title: o.name },
        el('img', { src: o.thumbnail, alt: '' }), el('span', { textContent: o.name }));
      button.dataset.outfit = o.id;
      button.setAttribute('aria-pressed', 'false');
      button.addEventListener('click', () => this.onPick(o.id));
      return button;
    }));
  }

  select(id) {
    for (const button of this.nav.children) button.setAttribute('aria-pressed', String(button.dataset.outfit === id));
  }
}

// --- the conversation ---------------------------------------------------------------------------

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
    for (const t of turns) {
      if (t.role !== 'system') this._add(t.role, t.text, 'earlier', ...(t.interrupted ? ['interrupted'] : []));
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
    bubble.textContent = text.trim() || (reason === 'cancelled' ? '' : 'No reply this time.');
    if (reason === 'cancelled') bubble.classList.add('interrupted');
    if (reason === 'error' || !text.trim()) bubble.classList.add('failed');
  }
}

// --- small pieces of chrome ---------------------------------------------------------------------

class Toasts {
  constructor(box) { this.box = box; }

  show(message, kind = 'error', ttlMs = 12000) {
    for (const t of this.box.children) if (t.dataset.message === message) return;
    const close = el('button', { type: 'button', textContent: '×', title: 'Dismiss' });
    const toast = el('div', { className: 'toast', role: kind === 'error' ? 'alert' : 'status' },
      el('p', { textContent: message }), close);
    toast.dataset.kind = kind;
    toast.dataset.message = message;
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
    let text = 'Connecting…';
    if (s.refused) {
      text = 'Not allowed · pair in Settings';
    } else if (s.connected) {
      text = s.transport === 'websocket' ? 'Online · WebSocket' : 'Online · Long-poll';
    } else if (s.retryAt !== null) {
      const left = Math.max(0, Math.ceil((s.retryAt - performance.now()) / 1000));
      text = left > 0 ? `Offline · retrying in ${left} s` : 'Offline · retrying…';
    }
    if (this.label.textContent === text && this._shown === s) return; // repaint only on a change
    this._shown = s;
    this.node.dataset.transport = s.connected ? s.transport : 'offline';
    this.node.dataset.connecting = String(!s.connected && !s.refused && s.retryAt === null);
    this.node.title = s.detail ? `Server: ${s.detail}` : '';
    this.label.textContent = text;
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

  _show(text, kind = 'warn', ttlMs = 0) {
    clearTimeout(this._timer);
    this.node.textContent = text;
    this.node.dataset.kind = kind;
    this.node.hidden = false;
    if (ttlMs) this._timer = setTimeout(() => { this.node.hidden = true; }, ttlMs);
  }

  lost(status) {
    this._retryAt = status.everConnected ? status.retryAt : null;
    if (status.everConnected) this._countdown();
    else this._show('Starting Stella’s engine…');
  }

  hello(event) {
    this._retryAt = null;
    if (event.restarts > this.restarts) {
      const how = event.last_exit ? ` (${event.last_exit})` : '';
      this._show(`Stella’s engine stopped unexpectedly${how} and has been restarted.`, 'ok', 12000);
    } else if (this.node.dataset.kind !== 'ok') {
      this.node.hidden = true;
    }
    this.restarts = event.restarts;
  }

  missing() {
    this._show('This page needs the Stella app: open Stella from its desktop icon or with `stella`.');
  }

  _countdown() {
    if (this._retryAt === null) return;
    const left = Math.max(0, Math.ceil((this._retryAt - performance.now()) / 1000));
    this._show(`Lost contact with Stella’s engine — reconnecting${left ? ` in ${left} s` : '…'}`);
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
    title.textContent = `turn ${event.turn} (ms)`;
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
    this.note.textContent = '';
    this.channel.send({ cmd: 'settings' }); // fresh device lists
    this.form.server_url.focus();
  }

  close() { this.panel.hidden = this.backdrop.hidden = true; }

  save(overrides = {}) {
    const values = {};
    for (const name of ['server_url', 'wake_engine', 'wake_model', 'wake_phrase', 'tts_engine', 'input_device',
      'output_device', 'embedded_model']) values[name] = this.form[name].value;
    Object.assign(values, overrides);
    this.embeddedChosen = values.server_url === '';
    if (!this.channel.send({ cmd: 'settings', values })) {
      this.toasts.show('Stella’s engine is not reachable right now, so the settings were not saved. Try again in a moment.');
    }
  }

  update(event) {
    const { choices } = event;
    if (event.saved) this.edited.clear();
    // the engine's values, but what the user changed since opening stays (the lists opening asked for can
    // come after the first change)
    const values = { ...event.values };
    for (const name of this.edited) if (this.form[name]) values[name] = this.form[name].value;
    const options = (select, items, label, defaultLabel) => {
      const current = values[select.name];
      const list = defaultLabel === undefined ? items : ['', ...items];
      if (!list.includes(current)) list.push(current);
      select.replaceChildren(...list.map((v) => el('option', {
        value: v,
        textContent: v === '' ? defaultLabel : label(v) + (items.includes(v) || v === '' ? '' : ' (not connected)'),
      })));
    };
    options(this.form.wake_model, choices.wake_model, titleCase);
    options(this.form.input_device, choices.input_device, (v) => v, 'System default');
    options(this.form.output_device, choices.output_device, (v) => v, 'System default');
    // the embedded default's models, each with what it is like (a list beside the names, in the same order)
    const described = new Map(choices.embedded_model.map((v, i) => [v, choices.embedded_model_label[i]]));
    options(this.form.embedded_model, choices.embedded_model.filter((v) => v !== ''), (v) => described.get(v) || v,
      described.get('') || 'The default');
    for (const [name, value] of Object.entries(values)) if (this.form[name]) this.form[name].value = value;
    this._showWakeFields();
    $('pairing-status').textContent = event.paired ? 'This device is paired with the server.'
      : 'Not paired. A server on this computer lets Stella in by itself; for another one, type the code '
        + 'its operator gives you (stella-server device add).';
    if (event.saved) {
      this.note.textContent = this.embeddedChosen ? 'Saved ✓ From the next start Stella runs the embedded default '
        + '(a server on this computer).' : 'Saved ✓';
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
    $('enrol-start').textContent = this.enrolling ? 'Cancel' : 'Teach her my voice';
    $('enrol-note').textContent = {
      listening: `Say “Hey Stella” now, a moment apart (${taken} of ${needed} heard).`,
      done: 'She knows your voice ✓ Your “Hey Stella” wakes her at once; other voices seldom do.',
      cancelled: 'Not taught: nothing was kept.',
      unheard: 'She did not hear her name for half a minute, so nothing was taught. Say “Hey Stella” close to '
        + 'the microphone, a moment apart, and try again.',
      unavailable: 'Teaching her your voice needs the phrase “hey stella” and its model.',
    }[status] || '';
  }

  enrolled(known) {
    $('enrol-forget').hidden = !known;
    if (!this.enrolling) {
      $('enrol-start').textContent = known ? 'Teach her my voice again' : 'Teach her my voice';
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
    meter.title = acoustic == null ? '' : `Her name’s model: ${acoustic.toFixed(2)} (counts from ${acoustic_floor})`
      + (voice == null ? '' : `; your voice: ${voice.toFixed(2)} (another voice under ${voice_floor})`);
    const notYou = voice != null && voice_floor != null && voice < voice_floor
      && acoustic != null && acoustic >= acoustic_floor;
    $('wake-try-note').textContent = woke ? 'She heard her name ✓'
      : notYou ? 'That did not sound like the voice she was taught.'
        : heard ? 'That sounded like another name — say hers a little more clearly.'
          : 'She did not hear her name in that.';
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
    $('unlock-title').textContent = create ? 'Choose a passphrase for your conversations' : 'Unlock your conversations';
    $('unlock-why').textContent = e.message;
    $('unlock-help').textContent = e.keyring_help;
    $('unlock-detail').textContent = e.detail;
    $('confirm-row').hidden = !create;
    this.confirm.required = create;
    this.passphrase.autocomplete = create ? 'new-password' : 'current-password';
    $('unlock-submit').textContent = create ? 'Set passphrase' : 'Unlock';
    this.error.textContent = e.error;
    if (e.error) this.passphrase.value = this.confirm.value = '';
    this.node.hidden = this.backdrop.hidden = false;
    this.passphrase.focus();
  }

  /** The engine turned a command down (shown as a toast): let the user try again. */
  refused() { this._busy(false); }

  _unlock() {
    if (this.mode === 'create' && this.passphrase.value !== this.confirm.value) {
      this.error.textContent = 'The two passphrases are not the same. Type it twice, exactly the same way.';
      this.confirm.value = '';
      this.confirm.focus();
      return;
    }
    this._send({ how: 'passphrase', passphrase: this.passphrase.value });
  }

  _send(command) {
    if (!this.channel.send({ cmd: 'unlock', ...command })) {
      this.error.textContent = 'Stella’s engine is not reachable right now; try again in a moment.';
      return;
    }
    this.error.textContent = '';
    this._busy(true);
  }

  _busy(busy) {
    for (const button of this.form.querySelectorAll('button')) button.disabled = busy;
    this.node.setAttribute('aria-busy', String(busy));
  }
}

// --- wiring -------------------------------------------------------------------------------------

async function main() {
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

  const say = (text, clearAfterMs = 0) => {
    clearTimeout(captionTimer);
    caption.textContent = text;
    if (clearAfterMs) captionTimer = setTimeout(() => { caption.textContent = ''; }, clearAfterMs);
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
      stateNode.querySelector('.label').textContent = STATE_LABELS[e.state] || e.state;
      if (e.state === 'idle') view.stopMouth();
    },
    link: (e) => link.update(e),
    voice: (e) => {
      voice = e;
      wakeNode.dataset.voice = e.status;
      wakeNode.title = e.detail;
      ptt.setAttribute('aria-disabled', String(e.status !== 'ready'));
      settings.enrolled(e.enrolled);
      const label = wakeNode.querySelector('.label');
      if (e.status === 'ready') label.textContent = e.wake_word ? `Say “${e.wake_word}”` : 'Listening for you';
      else label.textContent = e.status === 'loading' ? 'Voice starting…' : 'Voice off';
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
      say('Yes? I’m listening…');
    },
    speech_start: () => say('Listening…'),
    transcript: (e) => say(e.text ? `“${e.text}”` : '', 4000),
    user_turn: (e) => {
      transcript.user(e.turn, e.text);
      say('', 0);
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
    link.update({ transport: 'offline', connected: false, retry_in: null, detail: 'waiting for Stella’s engine' });
    handlers.state({ state: 'idle' });
  });

  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = $('message');
    const text = input.value.trim();
    if (!text) return;
    if (channel.send({ cmd: 'text', text })) input.value = '';
    else toasts.show('Stella’s engine is not reachable right now, so your message was not sent. It is being restarted — try again in a moment.');
  });

  let held = false;
  const talk = (down) => {
    if (down === held) return;
    if (down && voice.status !== 'ready') {
      toasts.show(voice.detail || 'Push-to-talk needs the microphone, which is not ready yet.', 'info', 6000);
      return;
    }
    held = down;
    ptt.classList.toggle('held', down);
    channel.send({ cmd: down ? 'ptt_start' : 'ptt_stop' });
    if (down) say('Listening… release to send');
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
