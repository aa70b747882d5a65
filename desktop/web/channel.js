// The page's side of the local channel to Stella's engine (sidecar/channel.py).
//
// The shell puts the engine's port and the launch secret in the URL fragment (never sent over
// HTTP). The secret travels as a WebSocket subprotocol, the only header a page may set. The
// channel reconnects by itself: the engine restarts on the same port after a crash.
//
//   const channel = new Channel(endpointFromHash(location.hash));
//   channel.addEventListener('message', (e) => e.detail);   // {type: ...} events
//   channel.addEventListener('frame', (e) => e.detail);     // Blob: a PNG of the fallback stream
//   channel.addEventListener('status', (e) => e.detail);    // {connected, retryAt, everConnected}
//   channel.connect();
//   channel.send({cmd: 'text', text: 'Hi!'});

import { COMMANDS, EVENTS } from './channel_schema.js';

export const SUBPROTOCOL = 'stella.v1';
const RETRY_FIRST_MS = 250;
// Until the first connection the engine is still starting beside the window: a refused connection to
// 127.0.0.1 costs nothing, and with the back-off the page saw the engine up to a quarter second late.
// An engine that has not come in 10 s is not starting: the back-off takes over.
const STARTING_RETRY_MS = 40;
const STARTING_TRIES = 250;
const RETRY_MAX_MS = 3000;

/** {port, secret} from "#port=…&secret=…", or null when the page was opened some other way. */
export function endpointFromHash(hash) {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const port = Number(params.get('port'));
  const secret = params.get('secret') || '';
  return Number.isInteger(port) && port > 0 && /^[A-Za-z0-9_-]{32,}$/.test(secret) ? { port, secret } : null;
}

/** The event in one text message from the engine; throws unless it is JSON naming an event of the schema, with its fields. */
export function parseEvent(text) {
  const event = JSON.parse(text);
  if (!EVENTS.has(event?.type)) throw new Error(`unknown event ${JSON.stringify(event?.type)} from the engine (channel_schema.js)`);
  const fields = EVENTS.get(event.type);
  const extra = fields === null ? [] : Object.keys(event).filter((k) => k !== 'type' && !fields.includes(k));
  if (extra.length) throw new Error(`the "${event.type}" event from the engine has unknown fields ${extra.join(', ')} (channel_schema.js)`);
  return event;
}

/** Throws unless `command` is one the schema names, with the fields it needs and no others. */
export function checkCommand(command) {
  const spec = COMMANDS.get(command?.cmd);
  if (!spec) throw new Error(`unknown command ${JSON.stringify(command?.cmd)} (channel_schema.js)`);
  const missing = spec.required.filter((k) => !(k in command));
  const extra = Object.keys(command).filter((k) => k !== 'cmd' && !spec.required.includes(k) && !spec.optional.includes(k));
  if (missing.length || extra.length) {
    throw new Error(`the "${command.cmd}" command ${missing.length ? `needs ${missing.join(', ')}` : `has no field ${extra.join(', ')}`} (channel_schema.js)`);
  }
}

export class Channel extends EventTarget {
  constructor({ port, secret }) {
    super();
    this.url = `ws://127.0.0.1:${port}/`;
    this.protocols = [SUBPROTOCOL, `auth.${secret}`];
    this.socket = null;
    this.everConnected = false;
    this.retryMs = RETRY_FIRST_MS;
    this.startingTries = STARTING_TRIES;
    this._timer = 0;
  }

  get connected() {
    return this.socket !== null && this.socket.readyState === WebSocket.OPEN;
  }

  connect() {
    clearTimeout(this._timer);
    const socket = new WebSocket(this.url, this.protocols);
    socket.binaryType = 'blob';
    this.socket = socket;
    socket.onopen = () => {
      this.everConnected = true;
      this.retryMs = RETRY_FIRST_MS;
      this._status({ connected: true });
    };
    socket.onmessage = (e) => {
      if (typeof e.data !== 'string') {
        this.dispatchEvent(new CustomEvent('frame', { detail: e.data }));
        return;
      }
      let event;
      try {
        event = parseEvent(e.data);
      } catch (error) {
        console.error(error.message); // not ours to show: the engine only sends the schema's events
        return;
      }
      this.dispatchEvent(new CustomEvent('message', { detail: event }));
    };
    socket.onclose = () => {
      if (this.socket !== socket) return;
      const starting = !this.everConnected && this.startingTries-- > 0;
      const delay = starting ? STARTING_RETRY_MS : this.retryMs;
      if (!starting) this.retryMs = Math.min(RETRY_MAX_MS, Math.round(this.retryMs * 1.6));
      this._timer = setTimeout(() => this.connect(), delay);
      this._status({ connected: false, retryAt: performance.now() + delay });
    };
  }

  /** Send a command; false if the engine is not reachable right now. A command the schema does not name (or its fields) throws. */
  send(command) {
    checkCommand(command);
    if (!this.connected) return false;
    this.socket.send(JSON.stringify(command));
    return true;
  }

  _status(detail) {
    this.dispatchEvent(new CustomEvent('status', { detail: { ...detail, everConnected: this.everConnected } }));
  }
}
