// Generated from sidecar/channel_messages.py by `python -m sidecar.channel_schema`: do not edit.
// The window channel's messages: events the engine sends, with the fields each may carry
// (null: a pipeline record not checked field by field), and commands the page may send.

export const EVENTS = new Map([
  ['audio_out', ['duration', 'index', 't', 'turn']],  // a pipeline frame (sidecar/frames.py)
  ['blink', ['t']],  // a pipeline frame (sidecar/frames.py)
  ['end', ['t']],  // a pipeline frame (sidecar/frames.py)
  ['enrolment', null],  // a pipeline frame (sidecar/frames.py)
  ['error', ['code', 'fatal', 'message', 't']],  // channel.py: a problem to show in plain words; the engine goes on. / a pipeline frame (sidecar/frames.py)
  ['heard', ['interrupted', 't', 'text', 'turn']],  // a pipeline frame (sidecar/frames.py)
  ['hello', ['last_exit', 'pid', 'protocol', 'restarts']],  // engine/core.py: the greeting (protocol, pid, restarts, last exit).
  ['history', ['turns']],  // engine/stored.py: the conversation so far.
  ['input_start', ['device', 'rate', 't']],  // a pipeline frame (sidecar/frames.py)
  ['interruption', ['reason', 't']],  // a pipeline frame (sidecar/frames.py)
  ['link', ['attempt', 'connected', 'detail', 'refused', 'retry_in', 'transport']],  // engine/link.py: the link to the gateway.
  ['listening', ['t', 'until']],  // a pipeline frame (sidecar/frames.py)
  ['memory', ['facts']],  // engine/stored.py: the facts she remembers about the user, each with where it came from.
  ['mouth', ['level', 't']],  // a pipeline frame (sidecar/frames.py)
  ['outfit', ['id', 'source', 't']],  // engine/wardrobe.py: the outfit worn and who chose it. / a pipeline frame (sidecar/frames.py)
  ['playback', ['buffered_ms', 'heard', 'queued', 't', 'turn', 'written']],  // a pipeline frame (sidecar/frames.py)
  ['push_to_talk', ['pressed', 't']],  // a pipeline frame (sidecar/frames.py)
  ['reply_done', ['cached_tokens', 'prompt_tokens', 'reason', 't', 'text', 'turn']],  // a pipeline frame (sidecar/frames.py)
  ['request_sent', ['rid', 't', 'turn']],  // a pipeline frame (sidecar/frames.py)
  ['sentence', ['index', 't', 'text', 'turn']],  // a pipeline frame (sidecar/frames.py)
  ['settings', ['choices', 'paired', 'saved', 'values']],  // engine/settings.py: the settings, their choices and what was saved.
  ['speaking', ['speaking', 't', 'turn']],  // a pipeline frame (sidecar/frames.py)
  ['speech_end', ['endpoint', 't']],  // a pipeline frame (sidecar/frames.py)
  ['speech_start', ['t']],  // a pipeline frame (sidecar/frames.py)
  ['state', ['state']],  // engine/presence.py: idle / listening / thinking / speaking.
  ['store', ['detail', 'error', 'key', 'keyring_help', 'message', 'mode', 'status']],  // engine/unlock.py: the encrypted store (opening, open, off) and how it was unlocked. / engine/unlock.py: the store waits for a passphrase: why, and what went wrong last.
  ['token', ['index', 't', 'text', 'turn']],  // a pipeline frame (sidecar/frames.py)
  ['transcript', null],  // a pipeline frame (sidecar/frames.py)
  ['tts', ['engine', 'index', 'rate', 't', 'text', 'tts_ms', 'turn']],  // a pipeline frame (sidecar/frames.py)
  ['turn', ['latency_ms', 'marks', 'prompt', 't', 'turn']],  // a pipeline frame (sidecar/frames.py)
  ['turn_end', ['t', 'turn']],  // a pipeline frame (sidecar/frames.py)
  ['user_text', ['t', 'text']],  // a pipeline frame (sidecar/frames.py)
  ['user_turn', ['local_answer', 'source', 'speech_end', 't', 'text', 'turn']],  // a pipeline frame (sidecar/frames.py)
  ['voice', ['detail', 'enrolled', 'status', 'wake_engine', 'wake_word']],  // engine/voice_session.py: the voice loop's status.
  ['volume', ['step', 't']],  // a pipeline frame (sidecar/frames.py)
  ['wake', ['engine', 'score', 't', 'word']],  // a pipeline frame (sidecar/frames.py)
  ['wake_check', ['acoustic', 'acoustic_floor', 'engine', 'floor', 'heard', 'odds', 't', 'voice', 'voice_floor', 'woke']],  // a pipeline frame (sidecar/frames.py)
]);

export const COMMANDS = new Map([
  ['cancel', { required: [], optional: [] }],  // stop the reply
  ['enrol', { required: ['action'], optional: [] }],  // teach her the user's voice (three takes of the wake word), cancel that, or forget the voice
  ['frames', { required: ['height', 'width'], optional: [] }],  // stream the character as PNG frames (no WebGL); a size of 0 stops them
  ['memory', { required: ['action'], optional: ['id'] }],  // what she remembers: list it, forget one fact (id), or forget all
  ['outfit', { required: ['id'], optional: [] }],  // wear this outfit (id)
  ['pair', { required: ['code'], optional: [] }],  // redeem a pairing code
  ['ptt_start', { required: [], optional: [] }],  // push-to-talk pressed
  ['ptt_stop', { required: [], optional: [] }],  // push-to-talk released
  ['settings', { required: [], optional: ['values'] }],  // read the settings, or save `values`
  ['text', { required: ['text'], optional: [] }],  // a typed message
  ['unlock', { required: ['how'], optional: ['passphrase'] }],  // open the store (passphrase, keyring, or skip)
]);
