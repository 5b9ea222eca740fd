// ws_usage.mjs: the OpenAI WebSocket stand-in's usage, deterministic from
// what a turn was sent, so a test can price every turn to the nano-dollar.
//
// Responses (one response.create):
//   new input    = ceil(UTF-8 bytes of JSON.stringify([instructions, input,
//                  tools]) / 4), at least 1 (absent members are null)
//   chained      = the input + output tokens of the previous_response_id's
//                  response (0 without one): the context the server holds
//   input_tokens = chained + new input; input_tokens_details.cached_tokens
//                  = chained (the held context is a cache hit)
//   output       = 0 for "generate": false (the warm-up), else
//                  min(max_output_tokens, N): N from "[[out=N]]" in the
//                  input, else 12; reasoning_tokens = min(4, output) when
//                  the request asks for reasoning (part of output_tokens)
//
// Realtime (one response.create on the session's conversation):
//   an item's text tokens  = ceil(UTF-8 bytes of its text / 4)
//   an item's audio tokens = ceil(ms / 100), pcm16 at 24 kHz = 48 bytes/ms
//   input = the session's (or the response's) instructions as text, plus
//           every conversation item so far (earlier answers included);
//           cached = what an earlier response of the session already read
//           (its text and audio split in cached_tokens_details)
//   output total = min(max_output_tokens, N) (N as above, default 12); a
//           text-only response is all text tokens, an audio one gives
//           floor(total / 4) to the transcript's text and the rest to audio
//           (one audio token = 50 ms = 2,400 bytes of pcm16)
import { tokensOf } from './standin_usage.mjs';

export { answerWords, tokensOf } from './standin_usage.mjs';
export const DEFAULT_OUTPUT = 12;
export const AUDIO_IN_BYTES_PER_TOKEN = 4800;	// 100 ms of pcm16 at 24 kHz
export const AUDIO_OUT_BYTES_PER_TOKEN = 2400;	// 50 ms

export const audioTokensOf = (bytes) => Math.ceil(bytes / AUDIO_IN_BYTES_PER_TOKEN);

// The output tokens a turn asks for: "[[out=N]]" anywhere in TEXT.
export function askedOutput(text) {
	return Number(/\[\[out=(\d+)\]\]/.exec(text)?.[1] ?? DEFAULT_OUTPUT);
}

// Magic text in a turn's input: [[slow=MS]] waits MS between deltas,
// [[cut]] drops the connection mid-turn, [[masked]] sends a masked server
// frame mid-turn (a protocol error a client must refuse) and nothing more
// (the turn stops there).
export function magicOf(text) {
	return {
		slow: Number(/\[\[slow=(\d+)\]\]/.exec(text)?.[1] ?? 0),
		cut: text.includes('[[cut]]'), masked: text.includes('[[masked]]'),
	};
}

// A Responses turn's usage; PREV is the chained response's usage or null.
export function responsesUsage(body, prev) {
	const fresh = Math.max(1, tokensOf(JSON.stringify([body.instructions ?? null, body.input ?? null, body.tools ?? null])));
	const chained = prev ? prev.input_tokens + prev.output_tokens : 0;
	const text = JSON.stringify(body.input ?? '');
	let output = 0;
	if (body.generate !== false) {
		const max = Number.isInteger(body.max_output_tokens) ? body.max_output_tokens : Infinity;
		output = Math.min(max, askedOutput(text));
	}
	const reasoning = body.reasoning ? Math.min(4, output) : 0;
	return {
		input_tokens: chained + fresh,
		input_tokens_details: { cached_tokens: chained },
		output_tokens: output,
		output_tokens_details: { reasoning_tokens: reasoning },
		total_tokens: chained + fresh + output,
	};
}

// A Realtime response's usage. CONTEXT is [{text, audio}] token counts of
// the instructions and items it reads; SEEN is how many of them an earlier
// response read (the cached prefix); MAX the output limit; ASKED its N;
// AUDIO whether it answers in audio.
export function realtimeUsage(context, seen, max, asked, audio) {
	const sum = (list, k) => list.reduce((a, x) => a + x[k], 0);
	const cached = context.slice(0, seen);
	const text = sum(context, 'text'), aud = sum(context, 'audio');
	const ctext = sum(cached, 'text'), caud = sum(cached, 'audio');
	const total = Math.min(max, asked);
	const outText = audio ? Math.floor(total / 4) : total;
	const outAudio = total - outText;
	return {
		total_tokens: text + aud + total,
		input_tokens: text + aud,
		output_tokens: total,
		input_token_details: {
			text_tokens: text, audio_tokens: aud, image_tokens: 0, cached_tokens: ctext + caud,
			cached_tokens_details: { text_tokens: ctext, audio_tokens: caud, image_tokens: 0 },
		},
		output_token_details: { text_tokens: outText, audio_tokens: outAudio },
	};
}
