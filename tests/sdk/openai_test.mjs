// openai_test.mjs BASEURL KEY: the official OpenAI Node SDK against BASEURL
// (kilovolt, or the mock upstream directly), e.g. http://127.0.0.1:8080.
// Prints one line per check and "N passed, N failed"; exits 1 on any failure.
// KV_EXPECT_GATEWAY=1 also checks the x-kilovolt-* response headers.
import OpenAI from 'openai';

import { check, finish, run } from './check.mjs';

const [base, key] = process.argv.slice(2);
if (!base || !key) {
	console.error('usage: node openai_test.mjs BASEURL KEY');
	process.exit(2);
}
const client = new OpenAI({
	baseURL: base.replace(/\/+$/, '').replace(/(\/v1)?$/, '/v1'),
	apiKey: key,
	maxRetries: 0,	// a retry would hide a gateway error
	timeout: 30000,
});
const MODEL = 'gpt-4o-mini';
const messages = [{ role: 'user', content: 'Say hello.' }];

function gatewayHeaders(name, headers) {
	if (process.env.KV_EXPECT_GATEWAY !== '1')
		return;
	check(`${name}: x-kilovolt-key is a 12-hex key id`,
	    /^[0-9a-f]{12}$/.test(headers.get('x-kilovolt-key') ?? ''), headers.get('x-kilovolt-key'));
	check(`${name}: x-kilovolt-budget-remaining has 6 decimals`,
	    /^-?\d+\.\d{6}$/.test(headers.get('x-kilovolt-budget-remaining') ?? ''),
	    headers.get('x-kilovolt-budget-remaining'));
}

async function chat() {
	const { data, response } = await client.chat.completions
	    .create({ model: MODEL, messages, max_tokens: 50 }).withResponse();
	check('chat: model is the dated gpt-4o-mini', data.model.startsWith(MODEL), data.model);
	check('chat: object is chat.completion', data.object === 'chat.completion', data.object);
	check('chat: content', (data.choices[0]?.message?.content ?? '').length > 0);
	check('chat: finish_reason stop', data.choices[0]?.finish_reason === 'stop');
	check('chat: usage counts', data.usage?.prompt_tokens > 0 && data.usage?.completion_tokens > 0 &&
	    data.usage.total_tokens === data.usage.prompt_tokens + data.usage.completion_tokens,
	    JSON.stringify(data.usage));
	gatewayHeaders('chat', response.headers);
}

// Without include_usage the client must see exactly what the provider sends
// then: no usage anywhere and no chunk with empty choices (kilovolt asks the
// upstream for usage and must remove the extra chunk).
async function chatStream() {
	const stream = await client.chat.completions.create({ model: MODEL, messages, stream: true });
	let chunks = 0, text = '', withUsage = 0, emptyChoices = 0, finish = null;
	for await (const c of stream) {
		chunks++;
		if (c.usage != null)
			withUsage++;
		if (c.choices.length === 0)
			emptyChoices++;
		text += c.choices[0]?.delta?.content ?? '';
		finish = c.choices[0]?.finish_reason ?? finish;
	}
	check('chat stream: chunks arrive', chunks > 1, `${chunks}`);
	check('chat stream: content', text.length > 0);
	check('chat stream: finish_reason stop', finish === 'stop', finish);
	check('chat stream: no chunk carries usage', withUsage === 0, `${withUsage}`);
	check('chat stream: no chunk with empty choices', emptyChoices === 0, `${emptyChoices}`);
}

async function chatStreamUsage() {
	const stream = await client.chat.completions.create({
		model: MODEL, messages, stream: true, stream_options: { include_usage: true },
	});
	const all = [];
	for await (const c of stream)
		all.push(c);
	const last = all[all.length - 1];
	const usageChunks = all.filter((c) => c.usage != null);
	check('chat stream+usage: exactly one usage chunk', usageChunks.length === 1, `${usageChunks.length}`);
	check('chat stream+usage: it is last, with empty choices',
	    last?.usage != null && last.choices.length === 0);
	check('chat stream+usage: usage counts', last?.usage?.prompt_tokens > 0 &&
	    last?.usage?.completion_tokens > 0, JSON.stringify(last?.usage));
}

async function embeddings() {
	const e = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'hello' });
	const v = e.data[0]?.embedding;
	check('embeddings: a vector of numbers', Array.isArray(v) && v.length > 0 &&
	    v.every((x) => typeof x === 'number' && Number.isFinite(x)), JSON.stringify(v));
	check('embeddings: usage', e.usage?.prompt_tokens > 0 &&
	    e.usage.total_tokens === e.usage.prompt_tokens, JSON.stringify(e.usage));
}

async function responses() {
	const r = await client.responses.create({ model: MODEL, input: 'Say hello.' });
	check('responses: status completed', r.status === 'completed', r.status);
	check('responses: output_text', (r.output_text ?? '').length > 0);
	check('responses: usage', r.usage?.input_tokens > 0 && r.usage?.output_tokens > 0 &&
	    r.usage.total_tokens === r.usage.input_tokens + r.usage.output_tokens,
	    JSON.stringify(r.usage));
}

async function responsesStream() {
	const stream = await client.responses.create({ model: MODEL, input: 'Say hello.', stream: true });
	const types = [];
	let text = '', completed = null;
	for await (const ev of stream) {
		types.push(ev.type);
		if (ev.type === 'response.output_text.delta')
			text += ev.delta;
		if (ev.type === 'response.completed')
			completed = ev.response;
	}
	check('responses stream: starts with response.created', types[0] === 'response.created', types[0]);
	check('responses stream: ends with response.completed',
	    types[types.length - 1] === 'response.completed', types[types.length - 1]);
	check('responses stream: text deltas', text.length > 0);
	check('responses stream: completed carries usage', completed?.usage?.input_tokens > 0 &&
	    completed?.usage?.output_tokens > 0, JSON.stringify(completed?.usage));
}

async function models() {
	const ids = [];
	for await (const m of client.models.list())
		ids.push(m.id);
	check('models: lists gpt-4o-mini', ids.includes(MODEL), ids.join(','));
}

await run('chat', chat);
await run('chat stream', chatStream);
await run('chat stream+usage', chatStreamUsage);
await run('embeddings', embeddings);
await run('responses', responses);
await run('responses stream', responsesStream);
await run('models', models);
finish();
