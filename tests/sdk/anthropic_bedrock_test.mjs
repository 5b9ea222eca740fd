// anthropic_bedrock_test.mjs: Anthropic's Bedrock client
// (@anthropic-ai/bedrock-sdk, AnthropicBedrock) against BASEURL (kilovolt, or
// the Bedrock stand-in directly):
//
//   node anthropic_bedrock_test.mjs BASEURL KEY [--sigv4 AK SK] [--refused]
//
// KEY goes as a Bedrock API key: the client's `apiKey` option (or
// AWS_BEARER_TOKEN_BEDROCK) makes it send "Authorization: Bearer KEY" and
// skip SigV4. With --sigv4 it signs with awsAccessKey/awsSecretKey instead.
// `baseURL` (or ANTHROPIC_BEDROCK_BASE_URL) points it at BASEURL. It turns
// messages.create into POST /model/{model}/invoke and a stream into
// /invoke-with-response-stream (the model percent-encoded into the path) and
// decodes the event stream back into Anthropic events. Calls: create, a raw
// stream, the stream helper, create on an inference-profile ARN; the system
// prompt marked for caching. Prints "ok"/"FAIL" lines, a "usage {json}" line
// per call, "N passed, N failed". With --refused every call must fail with a
// 401 or 403.
import { AnthropicBedrock } from '@anthropic-ai/bedrock-sdk';
import { rawStream, helperStream } from './anthropic_calls.mjs';
import { check, finish } from './check.mjs';
import { clientArgs, runCalls, usage as printUsage } from './bedrock_client.mjs';

const { base, key, refused, sigv4, model: MODEL, arn: ARN } = clientArgs('anthropic_bedrock_test.mjs');
const SYSTEM = 'You answer for the Anthropic Bedrock SDK test, briefly. '.repeat(40);

const client = new AnthropicBedrock({
	baseURL: base, awsRegion: 'us-east-1', maxRetries: 0, timeout: 60000,
	...(sigv4 ? { apiKey: null, awsAccessKey: sigv4.accessKeyId, awsSecretKey: sigv4.secretAccessKey } : { apiKey: key }),
});

const params = (model, text) => ({ model, max_tokens: 100,
	system: [{ type: 'text', text: SYSTEM, cache_control: { type: 'ephemeral' } }],
	messages: [{ role: 'user', content: text }] });
const usage = (call, u) => printUsage(call, { input: u.input_tokens, output: u.output_tokens,
	cacheRead: u.cache_read_input_tokens ?? 0, cacheWrite: u.cache_creation_input_tokens ?? 0 });

async function create(name, model) {
	const m = await client.messages.create(params(model, 'Say hello.'));
	check(`${name}: text content`, m.content[0]?.type === 'text' && m.content[0].text.length > 0);
	check(`${name}: usage input/output`, m.usage?.input_tokens > 0 && m.usage?.output_tokens > 0, JSON.stringify(m.usage));
	usage(name, m.usage);
}

const calls = [['create', () => create('create', MODEL)], ['stream', () => rawStream(client, params(MODEL, 'Stream hello.'), usage)],
	['stream helper', () => helperStream(client, params(MODEL, 'Helper stream hello.'), usage)],
	['create arn', () => create('create-arn', ARN)]];
await runCalls(calls, refused, (e) => e.status);
finish();
