// standin_wire.mjs: the Bedrock runtime's answers as the stand-in
// (bedrock_standin.mjs) sends them: InvokeModel and
// InvokeModelWithResponseStream on Anthropic models (the Messages answer, its
// events wrapped as base64 `chunk` events with Bedrock's "p" padding, the
// last one carrying amazon-bedrock-invocationMetrics), Converse and
// ConverseStream (messageStart, contentBlockDelta, contentBlockStop,
// messageStop, metadata), the OpenAI-compatible chat completions. Streams are
// framed by AWS's own codec (@smithy/eventstream-codec).
import { randomUUID } from 'node:crypto';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { answerWords } from './standin_usage.mjs';

const codec = new EventStreamCodec(toUtf8, fromUtf8);
const PAD = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const str = (value) => ({ type: 'string', value });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// "us.anthropic.claude-sonnet-4-5-20250929-v1:0" (or its ARN) -> the name
// the Messages answer carries, "claude-sonnet-4-5-20250929".
export function modelName(id) {
	return id.replace(/^.*\//, '').replace(/^(us|eu|apac|global|us-gov|jp|au|ca)\./, '')
		.replace(/^[a-z0-9-]+\./, '').replace(/-v\d+(:\d+)?$/, '');
}

function eventFrame(type, payload, i) {
	const p = PAD.slice(0, 1 + (i * 7) % PAD.length);
	return codec.encode({
		headers: { ':event-type': str(type), ':content-type': str('application/json'), ':message-type': str('event') },
		body: fromUtf8(JSON.stringify({ ...payload, p })),
	});
}

function exceptionFrame(type, message) {
	return codec.encode({
		headers: { ':exception-type': str(type), ':content-type': str('application/json'),
			':message-type': str('exception') },
		body: fromUtf8(JSON.stringify({ message })),
	});
}

function streamHead(res, reqId) {
	res.writeHead(200, {
		'content-type': 'application/vnd.amazon.eventstream',
		'x-amzn-requestid': reqId,
		'x-amzn-bedrock-content-type': 'application/json',
	});
}

// Write the frames; the usage's magic cuts, corrupts or throttles halfway.
async function sendFrames(res, frames, u) {
	const half = Math.max(1, Math.floor(frames.length / 2));
	for (let i = 0; i < frames.length; i++) {
		if (i === half && u.magic.throttle) {
			res.end(exceptionFrame('throttlingException', 'Too many requests, please wait before trying again.'));
			return 'throttled';
		}
		if (i === half && u.magic.malformed) {
			const bad = Buffer.from(frames[i]);
			bad[bad.length - 1] ^= 0xff;	// the message CRC no longer matches
			res.end(bad);
			return 'malformed';
		}
		if (i === half && u.magic.cut) {
			res.write(frames[i].subarray(0, frames[i].length >> 1));
			await sleep(50);
			res.socket.destroy();
			return 'cut';
		}
		res.write(frames[i]);
		if (u.magic.slow)
			await sleep(u.magic.slow);
	}
	res.end();
	return 'complete';
}

// The Anthropic Messages events of an answer of u.output tokens.
export function anthropicEvents(id, model, u) {
	const words = answerWords(u.output);
	const usage0 = { input_tokens: u.input, cache_creation_input_tokens: u.cacheWrite,
		cache_read_input_tokens: u.cacheRead, output_tokens: 1 };
	const ev = [
		{ type: 'message_start', message: { id, type: 'message', role: 'assistant', model, content: [],
			stop_reason: null, stop_sequence: null, usage: usage0 } },
		{ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
	];
	for (let i = 0; i < words.length; i += 4)
		ev.push({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: words.slice(i, i + 4).join('') } });
	ev.push({ type: 'content_block_stop', index: 0 });
	ev.push({ type: 'message_delta', delta: { stop_reason: u.stop, stop_sequence: null }, usage: { output_tokens: u.output } });
	ev.push({ type: 'message_stop', 'amazon-bedrock-invocationMetrics': {
		inputTokenCount: u.input, outputTokenCount: u.output, invocationLatency: 321, firstByteLatency: 123,
		cacheReadInputTokenCount: u.cacheRead, cacheWriteInputTokenCount: u.cacheWrite } });
	return ev;
}

function usageHeaders(u, reqId) {
	return {
		'content-type': 'application/json', 'x-amzn-requestid': reqId,
		'x-amzn-bedrock-invocation-latency': '321',
		'x-amzn-bedrock-input-token-count': String(u.input),
		'x-amzn-bedrock-output-token-count': String(u.output),
		'x-amzn-bedrock-cache-read-input-token-count': String(u.cacheRead),
		'x-amzn-bedrock-cache-write-input-token-count': String(u.cacheWrite),
	};
}

export async function invoke(res, modelId, u, stream) {
	const reqId = randomUUID();
	const id = `msg_bdrk_${reqId.replace(/-/g, '').slice(0, 24)}`;
	const model = modelName(modelId);
	if (!stream) {
		const body = { id, type: 'message', role: 'assistant', model,
			content: [{ type: 'text', text: answerWords(u.output).join('') }],
			stop_reason: u.stop, stop_sequence: null,
			usage: { input_tokens: u.input, cache_creation_input_tokens: u.cacheWrite,
				cache_read_input_tokens: u.cacheRead, output_tokens: u.output } };
		res.writeHead(200, usageHeaders(u, reqId));
		res.end(JSON.stringify(body));
		return 'complete';
	}
	streamHead(res, reqId);
	const frames = anthropicEvents(id, model, u).map((e, i) =>
		eventFrame('chunk', { bytes: Buffer.from(JSON.stringify(e)).toString('base64') }, i));
	return sendFrames(res, frames, u);
}

function converseUsage(u) {
	return { inputTokens: u.input, outputTokens: u.output,
		totalTokens: u.input + u.output + u.cacheRead + u.cacheWrite,
		cacheReadInputTokens: u.cacheRead, cacheWriteInputTokens: u.cacheWrite };
}

export async function converse(res, u, stream) {
	const reqId = randomUUID();
	const words = answerWords(u.output);
	if (!stream) {
		res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': reqId });
		res.end(JSON.stringify({
			output: { message: { role: 'assistant', content: [{ text: words.join('') }] } },
			stopReason: u.stop, usage: converseUsage(u), metrics: { latencyMs: 321 } }));
		return 'complete';
	}
	streamHead(res, reqId);
	const ev = [['messageStart', { role: 'assistant' }]];
	for (let i = 0; i < words.length; i += 4)
		ev.push(['contentBlockDelta', { contentBlockIndex: 0, delta: { text: words.slice(i, i + 4).join('') } }]);
	ev.push(['contentBlockStop', { contentBlockIndex: 0 }]);
	ev.push(['messageStop', { stopReason: u.stop }]);
	ev.push(['metadata', { usage: converseUsage(u), metrics: { latencyMs: 321 } }]);
	return sendFrames(res, ev.map(([t, p], i) => eventFrame(t, p, i)), u);
}

// Bedrock's OpenAI-compatible chat completions (usage in the OpenAI shape;
// a stream carries it in a last chunk when stream_options.include_usage).
export async function openaiChat(res, body, u) {
	const id = `chatcmpl-${randomUUID()}`, created = Math.floor(Date.now() / 1000), model = body.model;
	const text = answerWords(u.output).join('');
	const usage = { prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output };
	const reason = u.stop === 'max_tokens' ? 'length' : 'stop';
	if (!body.stream) {
		res.writeHead(200, { 'content-type': 'application/json' });
		res.end(JSON.stringify({ id, object: 'chat.completion', created, model,
			choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: reason }], usage }));
		return 'complete';
	}
	res.writeHead(200, { 'content-type': 'text/event-stream' });
	const chunk = (choices, extra = {}) =>
		`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`;
	res.write(chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]));
	res.write(chunk([{ index: 0, delta: { content: text }, finish_reason: null }]));
	res.write(chunk([{ index: 0, delta: {}, finish_reason: reason }]));
	if (body.stream_options?.include_usage)
		res.write(chunk([], { usage }));
	res.end('data: [DONE]\n\n');
	return 'complete';
}
