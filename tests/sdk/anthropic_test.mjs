// anthropic_test.mjs BASEURL KEY: the official Anthropic Node SDK against
// BASEURL (kilovolt, or the mock upstream directly), e.g. http://127.0.0.1:8080.
// The key goes once as x-api-key (how curl users and older SDKs send it) and
// once as Authorization: Bearer (what this SDK sends): kilovolt accepts both. Prints one line per check and
// "N passed, N failed"; exits 1 on any failure.
import Anthropic from '@anthropic-ai/sdk';

import { check, finish, run } from './check.mjs';

const [base, key] = process.argv.slice(2);
if (!base || !key) {
	console.error('usage: node anthropic_test.mjs BASEURL KEY');
	process.exit(2);
}
const baseURL = base.replace(/\/+$/, '').replace(/\/v1$/, '');
const common = { baseURL, maxRetries: 0, timeout: 30000 };	// a retry would hide a gateway error
const byApiKey = new Anthropic({
	...common, apiKey: key, defaultHeaders: { 'x-api-key': key, authorization: null },
});
const byBearer = new Anthropic({ ...common, authToken: key });
const MODEL = 'claude-sonnet-4';
const params = { model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'Say hello.' }] };

async function create(name, client) {
	const m = await client.messages.create(params);
	check(`${name}: model is the dated claude-sonnet-4`, m.model.startsWith(MODEL), m.model);
	check(`${name}: text content`, m.content[0]?.type === 'text' && m.content[0].text.length > 0);
	check(`${name}: stop_reason end_turn`, m.stop_reason === 'end_turn', m.stop_reason);
	check(`${name}: usage input/output`, m.usage?.input_tokens > 0 && m.usage?.output_tokens > 0,
	    JSON.stringify(m.usage));
}

// The raw event sequence, as the gateway's usage scanner sees it.
async function rawStream() {
	const stream = await byApiKey.messages.create({ ...params, stream: true });
	const types = [];
	let input = 0, output = 0, text = '';
	for await (const ev of stream) {
		types.push(ev.type);
		if (ev.type === 'message_start')
			input = ev.message.usage.input_tokens;
		if (ev.type === 'message_delta')
			output = ev.usage.output_tokens;	// cumulative: the last one counts
		if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta')
			text += ev.delta.text;
	}
	check('stream: message_start first, message_stop last',
	    types[0] === 'message_start' && types[types.length - 1] === 'message_stop', types.join(','));
	check('stream: text deltas', text.length > 0);
	check('stream: usage input (message_start)', input > 0, `${input}`);
	check('stream: usage output (message_delta)', output > 0, `${output}`);
}

// The SDK's own accumulator.
async function helperStream() {
	const msg = await byBearer.messages.stream(params).finalMessage();
	check('stream helper: final text', msg.content[0]?.text?.length > 0);
	check('stream helper: usage input/output', msg.usage?.input_tokens > 0 &&
	    msg.usage?.output_tokens > 0, JSON.stringify(msg.usage));
}

await run('create (x-api-key)', () => create('create (x-api-key)', byApiKey));
await run('create (bearer)', () => create('create (bearer)', byBearer));
await run('stream', rawStream);
await run('stream helper', helperStream);
finish();
