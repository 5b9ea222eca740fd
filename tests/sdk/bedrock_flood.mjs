// bedrock_flood.mjs: N concurrent InvokeModelWithResponseStream requests on
// one key, all started before any ends (one connection each), for the
// budget tests:
//
//   node bedrock_flood.mjs BASEURL KEY N MODEL BODY
//
// BODY is the InvokeModel body (JSON). Each request's outcome is one JSON
// line: {i, status, complete, usage} where usage ({input, output, cacheRead,
// cacheWrite}) is what the decoded stream carried (message_start and the
// last message_delta) when the stream was whole and ended with its
// invocation metrics; complete is false for a stream that ended early.
import http from 'node:http';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';

const [base, key, nArg, model, body] = process.argv.slice(2);
const url = new URL(base);
const codec = new EventStreamCodec(toUtf8, fromUtf8);
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });

// The Anthropic events inside a whole event stream, or null if it is not one.
function events(buf) {
	const out = [];
	for (let off = 0; off < buf.length;) {
		if (off + 4 > buf.length)
			return null;
		const len = buf.readUInt32BE(off);
		if (len < 16 || off + len > buf.length)
			return null;
		let m;
		try {
			m = codec.decode(buf.subarray(off, off + len));
		} catch {
			return null;
		}
		if (m.headers[':message-type']?.value !== 'event')
			return null;
		out.push(JSON.parse(Buffer.from(JSON.parse(toUtf8(m.body)).bytes, 'base64').toString()));
		off += len;
	}
	return out;
}

function one(i) {
	return new Promise((resolve) => {
		const req = http.request({ host: url.hostname, port: url.port, method: 'POST', agent,
			path: `/model/${encodeURIComponent(model)}/invoke-with-response-stream`,
			headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json',
				accept: 'application/vnd.amazon.eventstream' } }, (res) => {
			const chunks = [];
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => {
				const buf = Buffer.concat(chunks);
				if (res.statusCode !== 200)
					return resolve({ i, status: res.statusCode, complete: true, body: buf.toString().slice(0, 300) });
				const ev = events(buf);
				const start = ev?.find((e) => e.type === 'message_start')?.message.usage;
				const delta = ev?.filter((e) => e.type === 'message_delta').at(-1)?.usage;
				const whole = Boolean(start && delta && ev.at(-1)?.['amazon-bedrock-invocationMetrics']);
				resolve({ i, status: 200, complete: whole, usage: whole ? { input: start.input_tokens,
					output: delta.output_tokens, cacheRead: start.cache_read_input_tokens ?? 0,
					cacheWrite: start.cache_creation_input_tokens ?? 0 } : undefined });
			});
			res.on('error', () => resolve({ i, status: res.statusCode, complete: false }));
		});
		req.setTimeout(120000, () => req.destroy(new Error('timeout')));
		req.on('error', (e) => resolve({ i, status: 0, complete: false, error: e.message }));
		req.end(body);
	});
}

const results = await Promise.all(Array.from({ length: Number(nArg) }, (_, i) => one(i)));
for (const r of results)
	console.log(JSON.stringify(r));
