// aws_bedrock_test.mjs: the AWS SDK for JavaScript's Bedrock runtime client
// (@aws-sdk/client-bedrock-runtime) against BASEURL (kilovolt, or the
// Bedrock stand-in directly):
//
//   node aws_bedrock_test.mjs BASEURL KEY [--sigv4 AK SK | --env-token] [--refused]
//
// KEY goes as a Bedrock API key: the client's `token` with
// authSchemePreference ['httpBearerAuth'] sends "Authorization: Bearer KEY";
// with --env-token the client has no credentials in its config and KEY is
// only in AWS_BEARER_TOKEN_BEDROCK, which the SDK then sends the same way. With --sigv4 the client signs with
// the access key AK and secret SK instead. The client uses the SDK's HTTP/1.1
// handler (NodeHttpHandler): its default is HTTP/2. It runs InvokeModel,
// InvokeModelWithResponseStream, Converse, ConverseStream on an inference
// profile id and InvokeModel on an inference-profile ARN (which the SDK
// percent-encodes into the path), the system prompt marked for caching.
// Prints "ok"/"FAIL" lines, a "usage {json}" line per call with the usage the
// client saw, and "N passed, N failed". With --refused every call must fail
// with a 401 or 403 instead.
import {
	BedrockRuntimeClient, InvokeModelCommand, InvokeModelWithResponseStreamCommand,
	ConverseCommand, ConverseStreamCommand,
} from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { check, finish } from './check.mjs';
import { clientArgs, runCalls, usage } from './bedrock_client.mjs';

const { base, key, refused, sigv4, model: MODEL, arn: ARN } = clientArgs('aws_bedrock_test.mjs');
const SYSTEM = 'You are a terse assistant for the kilovolt Bedrock test. '.repeat(40);

// --env-token: the key only in AWS_BEARER_TOKEN_BEDROCK, as a user sets it.
const envToken = process.argv.includes('--env-token');
if (envToken) {
	process.env.AWS_BEARER_TOKEN_BEDROCK = key;
	for (const v of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE'])
		delete process.env[v];	// no other credentials for the chain to find
}
const client = new BedrockRuntimeClient({
	region: 'us-east-1', endpoint: base, maxAttempts: 1,
	requestHandler: new NodeHttpHandler({ requestTimeout: 60000 }),
	...(sigv4 ? { credentials: sigv4 } : envToken ? {} : { token: { token: key }, authSchemePreference: ['httpBearerAuth'] }),
});

const anthropicBody = (text) => JSON.stringify({
	anthropic_version: 'bedrock-2023-05-31', max_tokens: 100,
	system: [{ type: 'text', text: SYSTEM, cache_control: { type: 'ephemeral' } }],
	messages: [{ role: 'user', content: text }],
});
const fromAnthropic = (u) => ({ input: u.input_tokens, output: u.output_tokens,
	cacheRead: u.cache_read_input_tokens ?? 0, cacheWrite: u.cache_creation_input_tokens ?? 0 });
const fromConverse = (u) => ({ input: u.inputTokens, output: u.outputTokens,
	cacheRead: u.cacheReadInputTokens ?? 0, cacheWrite: u.cacheWriteInputTokens ?? 0 });

async function invokeModel(name, modelId) {
	const r = await client.send(new InvokeModelCommand({ modelId, contentType: 'application/json',
		accept: 'application/json', body: anthropicBody('Say hello.') }));
	const m = JSON.parse(Buffer.from(r.body).toString());
	check(`${name}: a Messages answer with text`, m.type === 'message' && m.content?.[0]?.text?.length > 0);
	check(`${name}: usage input/output`, m.usage?.input_tokens > 0 && m.usage?.output_tokens > 0, JSON.stringify(m.usage));
	usage(name, fromAnthropic(m.usage));
}

async function invokeStream() {
	const r = await client.send(new InvokeModelWithResponseStreamCommand({ modelId: MODEL,
		contentType: 'application/json', accept: 'application/json', body: anthropicBody('Stream a hello.') }));
	const types = [];
	let u = {}, metrics, text = '';
	for await (const ev of r.body) {
		if (!ev.chunk)
			continue;
		const e = JSON.parse(Buffer.from(ev.chunk.bytes).toString());
		types.push(e.type);
		if (e.type === 'message_start')
			u = { ...e.message.usage };
		if (e.type === 'message_delta')
			u.output_tokens = e.usage.output_tokens;
		if (e.type === 'content_block_delta')
			text += e.delta.text ?? '';
		if (e['amazon-bedrock-invocationMetrics'])
			metrics = e['amazon-bedrock-invocationMetrics'];
	}
	check('invoke stream: message_start first, message_stop last',
		types[0] === 'message_start' && types.at(-1) === 'message_stop', types.join(','));
	check('invoke stream: text deltas', text.length > 0);
	check('invoke stream: invocationMetrics agree with the events', metrics &&
		metrics.inputTokenCount === u.input_tokens && metrics.outputTokenCount === u.output_tokens,
	JSON.stringify({ metrics, u }));
	usage('invoke-stream', fromAnthropic(u));
}

const converseInput = (text) => ({ modelId: MODEL, inferenceConfig: { maxTokens: 100 },
	system: [{ text: SYSTEM }, { cachePoint: { type: 'default' } }],
	messages: [{ role: 'user', content: [{ text }] }] });

async function converse() {
	const r = await client.send(new ConverseCommand(converseInput('Converse hello.')));
	check('converse: an assistant message with text', r.output?.message?.content?.[0]?.text?.length > 0);
	check('converse: usage with totalTokens', r.usage?.totalTokens === r.usage.inputTokens + r.usage.outputTokens +
		(r.usage.cacheReadInputTokens ?? 0) + (r.usage.cacheWriteInputTokens ?? 0), JSON.stringify(r.usage));
	usage('converse', fromConverse(r.usage));
}

async function converseStream() {
	const r = await client.send(new ConverseStreamCommand(converseInput('Converse stream hello.')));
	const kinds = [];
	let u, text = '';
	for await (const ev of r.stream) {
		const k = Object.keys(ev).find((x) => ev[x] !== undefined);
		kinds.push(k);
		if (ev.contentBlockDelta)
			text += ev.contentBlockDelta.delta?.text ?? '';
		if (ev.metadata)
			u = ev.metadata.usage;
	}
	check('converse stream: messageStart .. messageStop, metadata',
		kinds[0] === 'messageStart' && kinds.includes('messageStop') && kinds.at(-1) === 'metadata', kinds.join(','));
	check('converse stream: text deltas', text.length > 0);
	check('converse stream: usage in metadata', u?.inputTokens > 0 && u?.outputTokens > 0, JSON.stringify(u));
	usage('converse-stream', fromConverse(u ?? {}));
}

const calls = [['invoke', () => invokeModel('invoke', MODEL)], ['invoke stream', invokeStream],
	['converse', converse], ['converse stream', converseStream], ['invoke arn', () => invokeModel('invoke-arn', ARN)]];
await runCalls(calls, refused, (e) => e.$metadata?.httpStatusCode);
finish();
