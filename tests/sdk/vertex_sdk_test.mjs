// vertex_sdk_test.mjs: Anthropic's Vertex AI client (@anthropic-ai/vertex-sdk,
// AnthropicVertex) against BASEURL (kilovolt):
//
//   node vertex_sdk_test.mjs BASEURL KEY [--project P] [--region R] [--refused]
//
// KEY goes as the Google access token: the client's `authClient` is
// google-auth-library's own OAuth2Client holding KEY as its access token, so
// the client sends "Authorization: Bearer KEY" as it would a Google token.
// `baseURL` is BASEURL/v1 (what ANTHROPIC_VERTEX_BASE_URL holds). It turns
// messages.create into POST /v1/projects/P/locations/R/publishers/anthropic/
// models/{model}:rawPredict (a stream: :streamRawPredict) and
// countTokens into .../count-tokens:rawPredict. Calls: create, a raw stream,
// the stream helper, countTokens; the system prompt marked for caching.
// Prints "ok"/"FAIL" lines, a "usage {json}" line per metered call, "N
// passed, N failed". With --refused every call must fail with a 401 or 403.
import { AnthropicVertex } from '@anthropic-ai/vertex-sdk';
import { OAuth2Client } from 'google-auth-library';
import { parseArgs } from 'node:util';
import { rawStream, helperStream } from './anthropic_calls.mjs';
import { check, finish } from './check.mjs';
import { runCalls, usage as printUsage } from './bedrock_client.mjs';

const { values: opt, positionals: [base, key] } = parseArgs({ allowPositionals: true, options: {
	project: { type: 'string', default: 'kv-client-project' }, region: { type: 'string', default: 'us-east5' },
	refused: { type: 'boolean', default: false } } });
const MODEL = process.env.KV_VERTEX_MODEL ?? 'claude-sonnet-4-5@20250929';
const SYSTEM = 'You answer for the Anthropic Vertex SDK test, briefly. '.repeat(40);

const auth = new OAuth2Client();
auth.setCredentials({ access_token: key, expiry_date: Date.now() + 3600 * 1000 });
const client = new AnthropicVertex({ baseURL: `${base}/v1`, region: opt.region, projectId: opt.project,
	authClient: auth, maxRetries: 0, timeout: 60000 });

const params = (text) => ({ model: MODEL, max_tokens: 100,
	system: [{ type: 'text', text: SYSTEM, cache_control: { type: 'ephemeral' } }],
	messages: [{ role: 'user', content: text }] });
const usage = (call, u) => printUsage(call, { input: u.input_tokens, output: u.output_tokens,
	cacheRead: u.cache_read_input_tokens ?? 0, cacheWrite: u.cache_creation_input_tokens ?? 0 });

async function create() {
	const m = await client.messages.create(params('Say hello.'));
	check('create: text content', m.content[0]?.type === 'text' && m.content[0].text.length > 0);
	check('create: usage input/output', m.usage?.input_tokens > 0 && m.usage?.output_tokens > 0, JSON.stringify(m.usage));
	usage('create', m.usage);
}

async function countTokens() {
	const c = await client.messages.countTokens({ model: MODEL, messages: [{ role: 'user', content: 'Count me.' }] });
	check('countTokens: input_tokens', c.input_tokens > 0, JSON.stringify(c));
}

const calls = [['create', create], ['stream', () => rawStream(client, params('Stream hello. [[out=20]]'), usage)],
	['stream helper', () => helperStream(client, params('Helper stream hello.'), usage)], ['countTokens', countTokens]];
await runCalls(calls, opt.refused, (e) => e.status);
finish();
