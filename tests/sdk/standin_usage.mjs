// standin_usage.mjs: the Bedrock stand-in's usage, deterministic from the
// request (and, for prompt caching, from the prefixes it has seen), billed the
// way Bedrock bills Anthropic models: input tokens exclude the cached prefix,
// which is counted once as a cache write (the first time a prefix is seen) or
// as a cache read (every later time).
//
//   text tokens  = ceil(UTF-8 bytes of the text / 4), at least 1
//   input        = the tokens of all text (system, messages, tools) less the
//                  cached prefix
//   cached prefix= the text up to and including the last block that carries
//                  cache_control (Messages) or the last cachePoint (Converse);
//                  the longest marked prefix seen before is a cache read, the
//                  rest of it a cache write
//   output       = min(max tokens, N): N from the x-standin-output-tokens
//                  header, else "[[out=N]]" in the text, else 12
//
// Magic text in the prompt: [[cut]] ends a stream mid-message (the
// connection closed), [[malformed]] sends a frame with a bad CRC, [[throttle]]
// answers a throttlingException (an exception message on a stream, a 429
// otherwise), [[slow=MS]] waits MS between stream frames.
import { createHash } from 'node:crypto';

export const DEFAULT_OUTPUT = 12;
export const tokensOf = (s) => (s.length ? Math.max(1, Math.ceil(Buffer.byteLength(s) / 4)) : 0);

// Every string under a "text" or string "content" member, in document order,
// cut into pieces at each cache mark; returns { pieces, cacheAt } where
// cacheAt is the index of the piece that ends the cached prefix (or -1).
function collect(node, out, key) {
	if (typeof node === 'string') {
		if (key === 'text' || key === 'content' || key === 'system' || key === 'description')
			out.text.push(node);
		return;
	}
	if (Array.isArray(node)) {
		for (const x of node)
			collect(x, out, key);
		return;
	}
	if (node && typeof node === 'object') {
		for (const [k, v] of Object.entries(node)) {
			if (k === 'cache_control' || k === 'cachePoint')
				continue;
			if (k === 'inputSchema' || k === 'input_schema')
				out.text.push(JSON.stringify(v));
			else
				collect(v, out, k);
		}
		if (node.cache_control || node.cachePoint)
			out.marks.push(out.text.length);	// the prefix ends after the text so far
	}
}

// The order Anthropic caches in: tools, system, messages; Converse the same
// with toolConfig, system, messages.
function promptParts(body) {
	const tools = body.tools ?? body.toolConfig?.tools;
	return [tools, body.system, body.messages].filter((x) => x !== undefined);
}

export function usageOf(body, headers, seenPrefixes, defaultMax) {
	const out = { text: [], marks: [] };
	for (const part of promptParts(body))
		collect(part, out, 'content');
	const all = out.text.join('');
	// Each mark ends a prefix; the longest one seen before is read from the
	// cache, the rest up to the last mark written to it (Anthropic's rule).
	let cacheRead = 0, cachedTokens = 0;
	for (const mark of out.marks) {
		const prefix = out.text.slice(0, mark).join('');
		const h = createHash('sha256').update(prefix).digest('hex');
		if (seenPrefixes.has(h))
			cacheRead = tokensOf(prefix);
		seenPrefixes.add(h);
		cachedTokens = tokensOf(prefix);
	}
	const cacheWrite = cachedTokens - cacheRead;
	const input = Math.max(1, tokensOf(all) - cachedTokens);
	const max = body.max_tokens ?? body.max_completion_tokens ?? body.inferenceConfig?.maxTokens ?? defaultMax;
	const asked = Number(headers['x-standin-output-tokens'] ?? /\[\[out=(\d+)\]\]/.exec(all)?.[1] ?? DEFAULT_OUTPUT);
	const output = Math.min(max, asked);
	return {
		input, output, cacheRead, cacheWrite,
		stop: output < asked ? 'max_tokens' : 'end_turn',
		magic: {
			cut: all.includes('[[cut]]'), malformed: all.includes('[[malformed]]'),
			throttle: all.includes('[[throttle]]'), slow: Number(/\[\[slow=(\d+)\]\]/.exec(all)?.[1] ?? 0),
		},
	};
}

// The answer's text: `n` words, one token each by the stand-in's count.
export function answerWords(n) {
	return Array.from({ length: n }, (_, i) => `w${i % 10} `);
}
