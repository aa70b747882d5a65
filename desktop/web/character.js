// Stella's character in WebGL2. Plain ES module: no build step, no CDN.
//
// Loads the same GLSL files (shaders/character.vert, .frag) and the same atlas + manifest as the
// moderngl renderer (shaders/), so both draw identical frames. Switching outfit only writes
// uniforms; the atlas is uploaded once.
//
//   const character = new CharacterRenderer(canvas, {atlasUrl, manifestUrl, shaderBase});
//   await character.ready;
//   character.start();                       // live loop: crossfades, breathing, idle blinks
//   character.setOutfit('red_dress');        // from outfit events
//   character.setMouth(level);               // from the ~20 ms lip-sync levels
//   character.renderAt({outfit: 'school', mouth: 0.5});   // one exact frame (tests, thumbnails)

// Idle blinking, mirrored from shaders/renderer.py: gaps between blinks (s) and blink length.
const BLINK_GAPS = [3.7, 4.6, 2.9, 5.3];
const BLINK_S = 0.16;
const BLINK_CYCLE = BLINK_GAPS.reduce((a, b) => a + b, 0);
const DISPLAY_FRAME_MS = 1000 / 60; // a display frame: the head start an outfit switch gets

/** Eyelid closure (0..1) of the idle blink at time t (seconds): a quick close, a slower open. */
export function autoBlink(t) {
  t %= BLINK_CYCLE;
  let end = 0;
  for (const gap of BLINK_GAPS) {
    end += gap;
    const phase = t - (end - BLINK_S);
    if (phase >= 0 && phase < BLINK_S) {
      const close = BLINK_S * 0.4;
      return phase < close ? phase / close : 1 - (phase - close) / (BLINK_S - close);
    }
  }
  return 0;
}

/** When the next idle blink starts, after time t (seconds): the page sleeps until then when idle. */
export function nextBlink(t) {
  const base = t - (t % BLINK_CYCLE);
  let end = 0;
  for (const gap of [...BLINK_GAPS, ...BLINK_GAPS]) {
    end += gap;
    if (base + end - BLINK_S > t) return base + end - BLINK_S;
  }
  return t + BLINK_CYCLE; // not reached: a start lies within the next cycle
}

async function fetchOk(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`character: ${url} answered ${response.status}`);
  return response;
}

async function decodedImage(blob, url) {
  const src = URL.createObjectURL(blob);
  try {
    const image = new Image();
    image.src = src;
    await image.decode().catch(() => { throw new Error(`character: ${url} is not an image the web view can decode`); });
    return image;
  } finally {
    URL.revokeObjectURL(src);
  }
}

function compile(gl, type, source, name) {
  const shader = gl.createShader(type);
  gl.shaderSource(shader, source);
  gl.compileShader(shader);
  if (!gl.getShaderParameter(shader, gl.COMPILE_STATUS)) {
    throw new Error(`character: ${name} does not compile: ${gl.getShaderInfoLog(shader)}`);
  }
  return shader;
}

const clamp01 = (x) => Math.min(1, Math.max(0, Number(x) || 0));

export class CharacterRenderer {
  /**
   * @param {HTMLCanvasElement} canvas drawn at its own width/height (device pixels)
   * @param {{atlasUrl: string, manifestUrl: string, shaderBase: string, crossfadeMs?: number,
   *          idleBlink?: boolean, preserveDrawingBuffer?: boolean}} options
   */
  constructor(canvas, { atlasUrl, manifestUrl, shaderBase, crossfadeMs = 150, idleBlink = true,
                        preserveDrawingBuffer = false }) {
    this.canvas = canvas;
    this.crossfadeMs = crossfadeMs;
    this.idleBlink = idleBlink;
    this.breathing = true; // the idle breath (off: the character stands still between blinks)
    const gl = canvas.getContext('webgl2', { alpha: true, premultipliedAlpha: true, antialias: false,
                                             preserveDrawingBuffer });
    if (!gl) throw new Error('character: WebGL2 is not available');
    this.gl = gl;
    this.manifest = null;
    this.outfit = null;
    this._previous = null;
    this._switchedAt = 0;
    this._fadeMs = 0;
    this._mouth = 0;
    this._blink = 0;
    this._frame = 0;
    this.epoch = performance.now(); // the animation clock (breathing, idle blinks) reads 0 here
    const base = shaderBase.endsWith('/') ? shaderBase : `${shaderBase}/`;
    this.ready = this._load(atlasUrl, manifestUrl, base);
  }

  /** Outfits from the manifest: [{id, name, thumbnail, ...}]. */
  get outfits() {
    return this.manifest ? this.manifest.outfits : [];
  }

  async _load(atlasUrl, manifestUrl, base) {
    const [manifest, vert, frag, blob] = await Promise.all([
      fetchOk(manifestUrl).then((r) => r.json()),
      fetchOk(`${base}character.vert`).then((r) => r.text()),
      fetchOk(`${base}character.frag`).then((r) => r.text()),
      fetchOk(atlasUrl).then((r) => r.blob()),
    ]);
    // The atlas is already premultiplied: its texels must reach the texture exactly as stored. An <img> is
    // uploaded from its encoded bytes without alpha or colour-space conversion (UNPACK_* below) by Chromium and
    // WebKit alike; an ImageBitmap is not (WebKitGTK keeps it premultiplied whatever `premultiplyAlpha` says,
    // which zeroes the colour of clear texels and rounds the translucent ones: the filtered edges went wrong).
    const image = await decodedImage(blob, atlasUrl);
    const gl = this.gl;
    const program = gl.createProgram();
    gl.attachShader(program, compile(gl, gl.VERTEX_SHADER, vert, 'character.vert'));
    gl.attachShader(program, compile(gl, gl.FRAGMENT_SHADER, frag, 'character.frag'));
    gl.linkProgram(program);
    if (!gl.getProgramParameter(program, gl.LINK_STATUS)) {
      throw new Error(`character: shaders do not link: ${gl.getProgramInfoLog(program)}`);
    }
    this.program = program;
    this.uniforms = {};
    const count = gl.getProgramParameter(program, gl.ACTIVE_UNIFORMS);
    for (let i = 0; i < count; i++) {
      const { name } = gl.getActiveUniform(program, i);
      this.uniforms[name] = gl.getUniformLocation(program, name);
    }

    this.texture = gl.createTexture();
    gl.activeTexture(gl.TEXTURE0);
    gl.bindTexture(gl.TEXTURE_2D, this.texture);
    gl.pixelStorei(gl.UNPACK_FLIP_Y_WEBGL, false); // v = 0 is the PNG's top row, as in the manifest
    gl.pixelStorei(gl.UNPACK_PREMULTIPLY_ALPHA_WEBGL, false);
    gl.pixelStorei(gl.UNPACK_COLORSPACE_CONVERSION_WEBGL, gl.NONE);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA8, gl.RGBA, gl.UNSIGNED_BYTE, image);
    image.removeAttribute('src');
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAX_LEVEL, manifest.max_mip_level);
    gl.generateMipmap(gl.TEXTURE_2D);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.LINEAR_MIPMAP_LINEAR);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, gl.LINEAR);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_S, gl.CLAMP_TO_EDGE);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_T, gl.CLAMP_TO_EDGE);

    this.vao = gl.createVertexArray();
    gl.bindVertexArray(this.vao);
    const vbo = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, vbo);
    gl.bufferData(gl.ARRAY_BUFFER, new Float32Array([0, 0, 1, 0, 0, 1, 1, 1]), gl.STATIC_DRAW);
    const loc = gl.getAttribLocation(program, 'a_corner');
    gl.enableVertexAttribArray(loc);
    gl.vertexAttribPointer(loc, 2, gl.FLOAT, false, 0, 0);

    this.manifest = manifest;
    gl.useProgram(program);
    this._uniform1i('u_atlas', 0);
    this._uniform4('u_eyes_region', manifest.regions.eyes.uv);
    this._uniform4('u_mouth_region', manifest.regions.mouth.uv);
    this.outfit = this._previous = manifest.default_outfit;
    this._writeOutfits(this.outfit, this.outfit);
    return this;
  }

  _entry(id) {
    const entry = this.manifest.outfits.find((o) => o.id === id);
    if (!entry) throw new Error(`character: unknown outfit "${id}"`);
    return entry;
  }

  _uniform1i(name, v) { if (this.uniforms[name]) this.gl.uniform1i(this.uniforms[name], v); }
  _uniform1f(name, v) { if (this.uniforms[name]) this.gl.uniform1f(this.uniforms[name], v); }
  _uniform2(name, v) { if (this.uniforms[name]) this.gl.uniform2fv(this.uniforms[name], v); }
  _uniform4(name, v) { if (this.uniforms[name]) this.gl.uniform4fv(this.uniforms[name], v); }

  /** The whole cost of a switch: six uniform writes, no texture traffic. */
  _writeOutfits(currentId, previousId) {
    const current = this._entry(currentId);
    const previous = this._entry(previousId);
    this.gl.useProgram(this.program);
    this._uniform4('u_cur_rect', current.uv);
    this._uniform4('u_cur_eyes', current.eyes_closed.uv);
    this._uniform4('u_cur_mouth', current.mouth_open.uv);
    this._uniform4('u_prev_rect', previous.uv);
    this._uniform4('u_prev_eyes', previous.eyes_closed.uv);
    this._uniform4('u_prev_mouth', previous.mouth_open.uv);
  }

  /**
   * Wear another outfit; the next frame shows it, crossfading over crossfadeMs. The fade starts
   * one display frame back: a frame drawn 3 ms after a click would otherwise show 2% of it, no
   * visible change (seen on WebKitGTK), where the user expects the click's frame to answer.
   */
  setOutfit(id, { crossfadeMs = this.crossfadeMs } = {}) {
    this._entry(id);
    this._previous = this.outfit;
    this.outfit = id;
    this._switchedAt = performance.now() - DISPLAY_FRAME_MS;
    this._fadeMs = crossfadeMs;
    this._writeOutfits(this.outfit, this._previous);
  }

  /** Mouth openness 0..1 (lip sync). */
  setMouth(x) { this._mouth = clamp01(x); }

  /** Eyelid closure 0..1, on top of the idle blinks. */
  setBlink(x) { this._blink = clamp01(x); }

  _draw(progress, mouth, blink, time) {
    const gl = this.gl;
    const { width, height } = this.canvas;
    gl.bindFramebuffer(gl.FRAMEBUFFER, null);
    gl.viewport(0, 0, width, height);
    gl.disable(gl.BLEND);
    gl.clearColor(0, 0, 0, 0);
    gl.clear(gl.COLOR_BUFFER_BIT);
    gl.useProgram(this.program);
    gl.activeTexture(gl.TEXTURE0);
    gl.bindTexture(gl.TEXTURE_2D, this.texture);
    gl.bindVertexArray(this.vao);
    this._uniform2('u_resolution', [width, height]);
    this._uniform1f('u_progress', clamp01(progress));
    this._uniform1f('u_mouth', clamp01(mouth));
    this._uniform1f('u_blink', clamp01(blink));
    this._uniform1f('u_time', time);
    gl.drawArrays(gl.TRIANGLE_STRIP, 0, 4);
  }

  /** Draw the live state now (what the animation loop calls every frame). */
  renderLive(now = performance.now()) {
    const progress = this._fadeMs > 0 ? (now - this._switchedAt) / this._fadeMs : 1;
    const t = (now - this.epoch) / 1000;
    const blink = this.idleBlink ? Math.max(this._blink, autoBlink(t)) : this._blink;
    this._draw(progress, this._mouth, blink, this.breathing ? t : 0);
  }

  /**
   * Draw exactly one state, e.g. {outfit: 'school', previous: 'hoodie', progress: 0.5, mouth: 1,
   * blink: 0, time: 0}; the live state is left as it was.
   */
  renderAt({ outfit, previous = null, progress = 1, mouth = 0, blink = 0, time = 0 }) {
    this._writeOutfits(outfit, previous || outfit);
    this._draw(progress, mouth, blink, time);
    this._writeOutfits(this.outfit, this._previous);
  }

  /** Start the requestAnimationFrame loop. */
  start() {
    const tick = (now) => {
      this.renderLive(now);
      this._frame = requestAnimationFrame(tick);
    };
    if (!this._frame) this._frame = requestAnimationFrame(tick);
  }

  stop() {
    cancelAnimationFrame(this._frame);
    this._frame = 0;
  }

  /** The drawing buffer as premultiplied RGBA, top row first (needs preserveDrawingBuffer). */
  readPixels() {
    const gl = this.gl;
    const { width, height } = this.canvas;
    const raw = new Uint8Array(width * height * 4);
    gl.readPixels(0, 0, width, height, gl.RGBA, gl.UNSIGNED_BYTE, raw);
    const out = new Uint8Array(raw.length);
    const row = width * 4;
    for (let y = 0; y < height; y++) out.set(raw.subarray((height - 1 - y) * row, (height - y) * row), y * row);
    return { width, height, data: out };
  }
}
