// ws_realtime.mjs: the OpenAI WebSocket stand-in's Realtime API session
// (GET /v1/realtime?model=M upgraded), the GA events as OpenAI documents
// them and @openai/agents-realtime parses them: session.created, then
// session.update -> session.updated, conversation.item.create ->
// conversation.item.added/.done, input_audio_buffer.append/.commit/.clear,
// response.create -> response.created, the output item's text or audio
// (and transcript) deltas, response.done with usage (ws_usage.mjs), and
// response.cancel (its response.done "cancelled", with the usage of the
// input and of the output sent before it). With turn detection on
// (server_vad or semantic_vad) and create_response not false, a commit
// starts a response by itself, as the server's VAD does (no
// response.create on the wire).
import { randomBytes } from 'node:crypto';
import { AUDIO_OUT_BYTES_PER_TOKEN, answerWords, askedOutput, audioTokensOf, magicOf, realtimeUsage, tokensOf }
	from './ws_usage.mjs';

const id = (p) => `${p}_${randomBytes(8).toString('hex')}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const PCM = { type: 'audio/pcm', rate: 24000 };

export function rtError(type, code, message, eventId = null, param = null) {
	return { type: 'error', error: { type, code, message, param, event_id: eventId } };
}

function newSession(model) {
	return {
		type: 'realtime', object: 'realtime.session', id: id('sess'), model, output_modalities: ['audio'],
		instructions: '', tools: [], tool_choice: 'auto', max_output_tokens: 'inf', tracing: null, prompt: null,
		truncation: 'auto', expires_at: Math.floor(Date.now() / 1000) + 3600, include: null,
		audio: {
			input: { format: PCM, transcription: null, noise_reduction: null,
				turn_detection: { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 200,
					create_response: true, interrupt_response: true, idle_timeout_ms: null } },
			output: { format: PCM, voice: 'alloy', speed: 1 },
		},
	};
}

function mergeSession(s, u) {
	const { audio, ...rest } = u ?? {};
	Object.assign(s, rest);
	if (audio?.input)
		Object.assign(s.audio.input, audio.input);
	if (audio?.output)
		Object.assign(s.audio.output, audio.output);
}

// An item's tokens: its text and its audio (base64 pcm16) content.
function itemTokens(item) {
	let text = '', audio = 0;
	for (const c of item.content ?? []) {
		text += c.text ?? c.transcript ?? '';
		if (typeof c.audio === 'string')
			audio += Buffer.from(c.audio, 'base64').length;
	}
	if (item.type === 'function_call_output')
		text += item.output ?? '';
	if (item.type === 'function_call')
		text += item.arguments ?? '';
	return { text: tokensOf(text), audio: audioTokensOf(audio) };
}

// The stand-in's state for one socket; SEND(event) puts an event on the
// wire (a promise), LOG(rec) records a line, MIDTURN(magic) as in
// ws_responses.mjs.
// USAGE of a response cancelled after TEXT text and AUDIO audio tokens.
function cancelledUsage(usage, text, audio) {
	return { ...usage, output_tokens: text + audio, total_tokens: usage.input_tokens + text + audio,
		output_token_details: { text_tokens: text, audio_tokens: audio } };
}

export class RealtimeSession {
	constructor(model, send, log, midTurn) {
		this.s = newSession(model);
		this.items = [];	// { id, item, tok: {text, audio} }
		this.buffer = 0;	// bytes appended and not committed
		this.lastRead = { instructions: null, n: 0 };
		this.active = null;
		this.send = (ev) => send({ event_id: id('event'), ...ev });
		this.log = log;
		this.midTurn = midTurn;
	}

	start() { return this.send({ type: 'session.created', session: this.s }); }

	async addItem(item, previous) {
		const it = { ...item, id: item.id ?? id('item'), object: 'realtime.item', status: 'completed' };
		const prev = previous ?? this.items.at(-1)?.id ?? null;
		this.items.push({ id: it.id, item: it, tok: itemTokens(item) });
		await this.send({ type: 'conversation.item.added', previous_item_id: prev, item: it });
		await this.send({ type: 'conversation.item.done', previous_item_id: prev, item: it });
		return it;
	}

	// Client event EV (parsed); returns a promise settled when it is handled.
	async handle(ev) {
		switch (ev.type) {
		case 'session.update':
			mergeSession(this.s, ev.session);
			return this.send({ type: 'session.updated', session: this.s });
		case 'conversation.item.create':
			return this.addItem(ev.item ?? {}, ev.previous_item_id);
		case 'conversation.item.delete':
			this.items = this.items.filter((x) => x.id !== ev.item_id);
			return this.send({ type: 'conversation.item.deleted', item_id: ev.item_id });
		case 'input_audio_buffer.append':
			this.buffer += Buffer.from(ev.audio ?? '', 'base64').length;
			return undefined;
		case 'input_audio_buffer.clear':
			this.buffer = 0;
			return this.send({ type: 'input_audio_buffer.cleared' });
		case 'input_audio_buffer.commit':
			return this.commit(ev);
		case 'response.create':
			return this.respond(ev.response ?? {}, ev.event_id ?? null);
		case 'response.cancel':
			if (this.active)
				this.active.cancelled = true;
			return undefined;
		case 'output_audio_buffer.clear':
			return undefined;
		default:
			return this.send(rtError('invalid_request_error', 'invalid_value',
				`Invalid value: '${ev.type}'. Supported values are: session.update, input_audio_buffer.append, ...`, ev.event_id ?? null, 'type'));
		}
	}

	async commit(ev) {
		if (this.buffer < 2400)	// OpenAI's minimum: 100 ms of audio
			return this.send(rtError('invalid_request_error', 'input_audio_buffer_commit_empty',
				`Error committing input audio buffer: buffer too small. Expected at least 100ms of audio, but buffer only has ${(this.buffer / 48).toFixed(2)}ms of audio.`,
				ev.event_id ?? null));
		const bytes = this.buffer;
		this.buffer = 0;
		const itemId = id('item'), prev = this.items.at(-1)?.id ?? null;
		await this.send({ type: 'input_audio_buffer.committed', previous_item_id: prev, item_id: itemId });
		const item = { id: itemId, type: 'message', role: 'user', content: [{ type: 'input_audio', transcript: null }] };
		await this.addItem(item, prev);
		this.items.at(-1).tok = { text: 0, audio: audioTokensOf(bytes) };
		const td = this.s.audio.input.turn_detection;
		// The server's own response, streamed while later events are read.
		if (td && td.create_response !== false)
			this.respond({}, null, 'vad').catch((e) => this.log({ kind: 'error', message: e.message }));
		return undefined;
	}

	// The context a response reads: its instructions and items.
	context(r) {
		const instructions = r.instructions ?? this.s.instructions ?? '';
		const own = r.conversation === 'none';
		const items = own ? (r.input ?? []).map((it) => ({ tok: itemTokens(it) })) : this.items;
		const ctx = [{ text: tokensOf(instructions), audio: 0 }, ...items.map((x) => x.tok)];
		const seen = !own && this.lastRead.instructions === instructions ? this.lastRead.n : 0;
		if (!own)
			this.lastRead = { instructions, n: ctx.length };
		const text = [instructions, ...items.map((x) => JSON.stringify(x.item ?? x))].join('\n');
		return { ctx, seen, text };
	}

	async respond(r, eventId, by = 'client') {
		if (this.active)
			return this.send(rtError('invalid_request_error', 'conversation_already_has_active_response',
				`Conversation already has an active response in progress: ${this.active.id}. Wait until the response is finished before creating a new one.`, eventId));
		const mods = r.output_modalities ?? this.s.output_modalities ?? ['audio'];
		const maxRaw = r.max_output_tokens ?? this.s.max_output_tokens;
		const max = maxRaw === 'inf' || maxRaw == null ? Infinity : maxRaw;
		const { ctx, seen, text } = this.context(r);
		const usage = realtimeUsage(ctx, seen, max, askedOutput(text), mods.includes('audio'));
		const resp = { id: id('resp'), object: 'realtime.response', status: 'in_progress', output: [],
			conversation_id: r.conversation === 'none' ? null : 'conv_standin', output_modalities: mods,
			max_output_tokens: maxRaw ?? 'inf', audio: { output: this.s.audio.output }, usage: null,
			metadata: r.metadata ?? null, status_details: null };
		this.active = resp;
		try {
			return await this.stream(resp, usage, magicOf(text), by, r.conversation === 'none');
		} finally {
			this.active = null;
		}
	}

	async stream(resp, usage, magic, by, detached) {
		await this.send({ type: 'response.created', response: resp });
		const audio = resp.output_modalities.includes('audio');
		const item = { id: id('item'), object: 'realtime.item', type: 'message', role: 'assistant', status: 'in_progress', content: [] };
		const where = { response_id: resp.id, item_id: item.id, output_index: 0, content_index: 0 };
		await this.send({ type: 'response.output_item.added', response_id: resp.id, output_index: 0, item });
		if (!detached)
			await this.send({ type: 'conversation.item.added', previous_item_id: this.items.at(-1)?.id ?? null, item });
		await this.send({ type: 'response.content_part.added', ...where, part: audio ? { type: 'audio', transcript: '' } : { type: 'text', text: '' } });
		if (await this.midTurn(magic)) {
			this.log({ kind: 'turn', api: 'realtime', response_id: resp.id, by, status: 'stopped', usage, usage_sent: false });
			return;
		}
		const words = answerWords(usage.output_token_details.text_tokens);
		let sentText = 0, sentAudio = 0;
		for (const w of words) {
			if (magic.slow)
				await sleep(magic.slow);
			if (resp.cancelled)
				break;
			await this.send({ type: audio ? 'response.output_audio_transcript.delta' : 'response.output_text.delta', ...where, delta: w });
			sentText++;
		}
		const chunk = Buffer.alloc(AUDIO_OUT_BYTES_PER_TOKEN).toString('base64');
		for (let i = 0; i < usage.output_token_details.audio_tokens && !resp.cancelled; i++, sentAudio++)
			await this.send({ type: 'response.output_audio.delta', ...where, delta: chunk });
		// Cancelled, OpenAI bills (and reports) the input and the output made
		// before the cancel landed.
		if (resp.cancelled)
			usage = cancelledUsage(usage, Math.min(sentText, usage.output_token_details.text_tokens), sentAudio);
		const said = words.join('');
		let part;
		if (audio) {
			await this.send({ type: 'response.output_audio.done', ...where });
			await this.send({ type: 'response.output_audio_transcript.done', ...where, transcript: said });
			part = { type: 'audio', transcript: said };
		} else {
			await this.send({ type: 'response.output_text.done', ...where, text: said });
			part = { type: 'text', text: said };
		}
		await this.send({ type: 'response.content_part.done', ...where, part });
		const done = { ...item, status: 'completed',
			content: [audio ? { type: 'output_audio', transcript: said } : { type: 'output_text', text: said }] };
		await this.send({ type: 'response.output_item.done', response_id: resp.id, output_index: 0, item: done });
		if (!detached) {
			this.items.push({ id: done.id, item: done,
				tok: { text: usage.output_token_details.text_tokens, audio: usage.output_token_details.audio_tokens } });
			await this.send({ type: 'conversation.item.done', previous_item_id: this.items.at(-2)?.id ?? null, item: done });
		}
		const status = resp.cancelled ? 'cancelled' : 'completed';
		await this.send({ type: 'response.done', response: { ...resp, status, output: [done], usage } });
		this.log({ kind: 'turn', api: 'realtime', response_id: resp.id, by, status, usage, usage_sent: true });
	}
}
