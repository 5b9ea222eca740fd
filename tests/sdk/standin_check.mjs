// standin_check.mjs: the Bedrock stand-in's own checks, with raw HTTP/1.1
// requests signed by AWS's signer (@smithy/signature-v4) and streams decoded
// by AWS's codec (@smithy/eventstream-codec):
//
//   node standin_check.mjs BASEURL API_KEY AK SK
//
// A good signature is accepted (on a model id, an encoded ARN, the control
// plane's query); a tampered body, path, query, header, secret, region,
// service or date is refused 403 InvalidSignatureException with Bedrock's
// message; no Authorization, a wrong bearer key and a body that is not the
// signed x-amz-content-sha256 are refused. Usage is what the rules say
// (standin_usage.mjs), cache reads and writes included. The magic prompts cut
// a stream, corrupt a frame, throttle. IMDSv2 and STS vend credentials that
// sign. Prints "ok"/"FAIL" lines and "N passed, N failed".
import http from 'node:http';
import { SignatureV4 } from '@smithy/signature-v4';
import { Hash } from '@smithy/hash-node';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { check, finish, run } from './check.mjs';

const [base, apiKey, AK, SK] = process.argv.slice(2);
const url = new URL(base);
const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const ARN_PATH = encodeURIComponent(`arn:aws:bedrock:us-east-1:123456789012:inference-profile/${MODEL}`);
const codec = new EventStreamCodec(toUtf8, fromUtf8);

function send({ method = 'POST', path, headers = {}, body = '' }) {
	return new Promise((resolve) => {
		const req = http.request({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
			const chunks = [];
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), complete: true }));
			res.on('aborted', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), complete: false }));
			res.on('error', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), complete: false }));
		});
		req.on('error', (e) => resolve({ status: 0, error: e }));
		req.end(body);
	});
}

// sign(req, creds, opts): the request with AWS's signature headers added.
async function sign(r, creds = { accessKeyId: AK, secretAccessKey: SK }, o = {}) {
	const [path, q = ''] = r.path.split('?');
	const signer = new SignatureV4({ credentials: creds, region: o.region ?? 'us-east-1',
		service: o.service ?? 'bedrock', sha256: Hash.bind(null, 'sha256'), uriEscapePath: true, applyChecksum: o.checksum ?? false });
	const signed = await signer.sign({ method: r.method ?? 'POST', protocol: 'http:', hostname: url.hostname, path,
		query: Object.fromEntries(new URLSearchParams(q)), headers: { host: url.host, 'content-type': 'application/json', ...r.headers },
		body: r.body ?? '' }, { signingDate: o.date ?? new Date() });
	return { ...r, headers: signed.headers };
}

const invokeBody = (text, extra = {}) => JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 50,
	messages: [{ role: 'user', content: text }], ...extra });
const json = (r) => { try { return JSON.parse(r.body.toString()); } catch { return undefined; } };
const SIG_MISMATCH = /^The request signature we calculated does not match the signature you provided/;

async function refusedAs(name, r, type, message = /./) {
	const res = await send(r);
	check(`${name}: refused 4xx ${type}`, res.status >= 400 && res.status < 500 &&
		(res.headers['x-amzn-errortype'] ?? '').split(':')[0] === type && message.test(json(res)?.message ?? ''),
	`${res.status} ${res.headers?.['x-amzn-errortype']} ${res.body}`);
}

async function signatures() {
	const good = await sign({ path: `/model/${MODEL}/invoke`, body: invokeBody('hello') });
	const ok = await send(good);
	check('a request signed by AWS\'s signer is accepted', ok.status === 200 && json(ok)?.type === 'message', `${ok.status} ${ok.body}`);
	const arn = await send(await sign({ path: `/model/${ARN_PATH}/invoke`, body: invokeBody('hello') }));
	check('a signed request on a percent-encoded ARN is accepted', arn.status === 200, `${arn.status} ${arn.body}`);
	const cp = await send(await sign({ method: 'GET', path: '/inference-profiles?type=SYSTEM_DEFINED&maxResults=3' }));
	const list = json(cp);
	check('the control plane: a signed ListInferenceProfiles page', cp.status === 200 &&
		list?.inferenceProfileSummaries?.length === 3 && list.nextToken &&
		list.inferenceProfileSummaries.every((p) => p.type === 'SYSTEM_DEFINED' && p.inferenceProfileArn.includes(':inference-profile/')),
	`${cp.status} ${cp.body}`);
	await refusedAs('a tampered body', { ...good, body: invokeBody('hellO') }, 'InvalidSignatureException', SIG_MISMATCH);
	await refusedAs('a tampered path', { ...good, path: `/model/${MODEL}/invoke-with-response-stream` }, 'InvalidSignatureException', SIG_MISMATCH);
	await refusedAs('an added query', { ...good, path: `${good.path}?x=1` }, 'InvalidSignatureException', SIG_MISMATCH);
	await refusedAs('a tampered signed header', { ...good, headers: { ...good.headers, 'content-type': 'text/plain' } },
		'InvalidSignatureException', SIG_MISMATCH);
	await refusedAs('a wrong secret', await sign({ path: good.path, body: invokeBody('x') }, { accessKeyId: AK, secretAccessKey: SK + 'x' }),
		'InvalidSignatureException', SIG_MISMATCH);
	await refusedAs('another region', await sign({ path: good.path, body: invokeBody('x') }, undefined, { region: 'eu-west-1' }),
		'InvalidSignatureException');
	await refusedAs('another service', await sign({ path: good.path, body: invokeBody('x') }, undefined, { service: 's3' }),
		'InvalidSignatureException');
	await refusedAs('a date an hour off', await sign({ path: good.path, body: invokeBody('x') }, undefined,
		{ date: new Date(Date.now() - 3600e3) }), 'InvalidSignatureException', /Signature expired/);
	await refusedAs('an unknown access key', await sign({ path: good.path, body: invokeBody('x') },
		{ accessKeyId: 'AKIAUNKNOWN000000000', secretAccessKey: SK }), 'UnrecognizedClientException');
	const summed = await sign({ path: good.path, body: invokeBody('x') }, undefined, { checksum: true });
	check('a signed x-amz-content-sha256 is accepted', (await send(summed)).status === 200);
	await refusedAs('a body that is not the signed x-amz-content-sha256', { ...summed, body: invokeBody('y') }, 'XAmzContentSHA256Mismatch');
	await refusedAs('no Authorization', { path: good.path, headers: { 'content-type': 'application/json' }, body: invokeBody('x') },
		'MissingAuthenticationTokenException');
	await refusedAs('a wrong Bedrock API key', { path: good.path, headers: { authorization: 'Bearer nope' }, body: invokeBody('x') },
		'UnrecognizedClientException');
	const bearer = await send({ path: good.path, headers: { authorization: `Bearer ${apiKey}` }, body: invokeBody('x') });
	check('the Bedrock API key as a bearer token is accepted', bearer.status === 200, `${bearer.status} ${bearer.body}`);
	await refusedAs('a body with `model`', await sign({ path: good.path, body: invokeBody('x', { model: MODEL }) }), 'ValidationException');
}

const bearerReq = (path, body, headers = {}) => send({ path, body, headers: { authorization: `Bearer ${apiKey}`, ...headers } });

function decodeFrames(buf) {
	const out = [];
	let off = 0;
	while (off + 4 <= buf.length) {
		const len = buf.readUInt32BE(off);
		if (off + len > buf.length)
			return { out, rest: buf.length - off };
		try {
			out.push(codec.decode(buf.subarray(off, off + len)));
		} catch (e) {
			return { out, error: e.message };
		}
		off += len;
	}
	return { out, rest: buf.length - off };
}
const hdr = (m, name) => m.headers[name]?.value;

async function usageRules() {
	// 400 bytes of text -> 100 tokens; the cached prefix is the system block
	const sys = 'x'.repeat(800), text = 'y'.repeat(400);
	const body = (t) => JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 7,
		system: [{ type: 'text', text: sys, cache_control: { type: 'ephemeral' } }], messages: [{ role: 'user', content: t }] });
	const first = json(await bearerReq(`/model/${MODEL}/invoke`, body(text + 'a'.repeat(4))));
	check('usage: the first marked prefix is a cache write, the rest input; output capped by max_tokens',
		JSON.stringify(first?.usage) === JSON.stringify({ input_tokens: 101, cache_creation_input_tokens: 200,
			cache_read_input_tokens: 0, output_tokens: 7 }) && first.stop_reason === 'max_tokens', JSON.stringify(first?.usage));
	const again = json(await bearerReq(`/model/${MODEL}/invoke`, body(text), { 'x-standin-output-tokens': '3' }));
	check('usage: the same prefix again is a cache read; the output header sets the count',
		again?.usage?.cache_read_input_tokens === 200 && again.usage.cache_creation_input_tokens === 0 &&
		again.usage.input_tokens === 100 && again.usage.output_tokens === 3 && again.stop_reason === 'end_turn', JSON.stringify(again?.usage));
	const conv = json(await bearerReq(`/model/${MODEL}/converse`, JSON.stringify({
		system: [{ text: sys }, { cachePoint: { type: 'default' } }, { text: 'z'.repeat(40) }, { cachePoint: { type: 'default' } }],
		messages: [{ role: 'user', content: [{ text: 'q'.repeat(8) }] }], inferenceConfig: { maxTokens: 5 } })));
	check('usage: Converse reads the prefix it saw and writes the next one (cachePoint)',
		JSON.stringify(conv?.usage) === JSON.stringify({ inputTokens: 2, outputTokens: 5, totalTokens: 2 + 5 + 200 + 10,
			cacheReadInputTokens: 200, cacheWriteInputTokens: 10 }), JSON.stringify(conv?.usage));
}

async function streams() {
	const s = await bearerReq(`/model/${MODEL}/invoke-with-response-stream`, invokeBody('hi [[out=20]]'));
	const { out, rest } = decodeFrames(s.body);
	const ev = out.map((m) => JSON.parse(Buffer.from(JSON.parse(toUtf8(m.body)).bytes, 'base64').toString()));
	check('stream: application/vnd.amazon.eventstream of chunk events', s.headers['content-type'] === 'application/vnd.amazon.eventstream' &&
		rest === 0 && out.every((m) => hdr(m, ':event-type') === 'chunk' && hdr(m, ':message-type') === 'event'), `${out.length} ${rest}`);
	const metrics = ev.at(-1)?.['amazon-bedrock-invocationMetrics'];
	check('stream: the last event carries amazon-bedrock-invocationMetrics', ev.at(-1)?.type === 'message_stop' &&
		metrics?.outputTokenCount === 20 && metrics.inputTokenCount === ev[0].message.usage.input_tokens &&
		'cacheReadInputTokenCount' in metrics && 'cacheWriteInputTokenCount' in metrics, JSON.stringify(ev.at(-1)));
	const cut = await bearerReq(`/model/${MODEL}/invoke-with-response-stream`, invokeBody('hi [[cut]]'));
	const c = decodeFrames(cut.body);
	check('[[cut]]: the stream ends inside a message', !cut.complete && c.rest > 0 && c.out.length > 0, `${cut.complete} ${c.rest}`);
	const bad = await bearerReq(`/model/${MODEL}/converse-stream`, JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'hi [[malformed]]' }] }] }));
	check('[[malformed]]: a frame fails its CRC', bad.complete && /checksum/i.test(decodeFrames(bad.body).error ?? ''), decodeFrames(bad.body).error);
	const thr = decodeFrames((await bearerReq(`/model/${MODEL}/invoke-with-response-stream`, invokeBody('hi [[throttle]]'))).body);
	const last = thr.out.at(-1);
	check('[[throttle]]: the stream ends with a throttlingException message', last && hdr(last, ':message-type') === 'exception' &&
		hdr(last, ':exception-type') === 'throttlingException', JSON.stringify(last?.headers));
	const t429 = await bearerReq(`/model/${MODEL}/invoke`, invokeBody('hi [[throttle]]'));
	check('[[throttle]] on invoke: 429 ThrottlingException', t429.status === 429 &&
		t429.headers['x-amzn-errortype'].startsWith('ThrottlingException'));
	const oai = json(await bearerReq('/openai/v1/chat/completions', JSON.stringify({ model: 'openai.gpt-oss-120b-1:0', max_tokens: 4,
		messages: [{ role: 'user', content: 'hi' }] })));
	check('openai chat completions: usage', oai?.usage?.completion_tokens === 4 && oai.usage.prompt_tokens === 1, JSON.stringify(oai));
}

async function credentials() {
	const noTok = await send({ method: 'GET', path: '/latest/meta-data/iam/security-credentials/' });
	check('IMDSv2: no token, 401', noTok.status === 401);
	const tok = (await send({ method: 'PUT', path: '/latest/api/token', headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '60' } })).body.toString();
	const role = (await send({ method: 'GET', path: '/latest/meta-data/iam/security-credentials/', headers: { 'x-aws-ec2-metadata-token': tok } })).body.toString();
	const c = json(await send({ method: 'GET', path: `/latest/meta-data/iam/security-credentials/${role}`, headers: { 'x-aws-ec2-metadata-token': tok } }));
	check('IMDSv2: a role and its credentials with an Expiration', c?.Code === 'Success' && c.AccessKeyId?.startsWith('ASIA') &&
		!Number.isNaN(Date.parse(c.Expiration)), JSON.stringify(c));
	const creds = { accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey, sessionToken: c.Token };
	const r = await send(await sign({ path: `/model/${MODEL}/invoke`, body: invokeBody('imds') }, creds));
	check('IMDSv2: its credentials sign (with the session token)', r.status === 200, `${r.status} ${r.body}`);
	await refusedAs('IMDSv2 credentials without their session token', await sign({ path: `/model/${MODEL}/invoke`, body: invokeBody('x') },
		{ ...creds, sessionToken: undefined }), 'InvalidSignatureException');
	const form = new URLSearchParams({ Action: 'AssumeRoleWithWebIdentity', Version: '2011-06-15',
		RoleArn: 'arn:aws:iam::123456789012:role/kv-standin-role', RoleSessionName: 'kv', WebIdentityToken: 'eyJ.test.jwt' });
	const x = (await send({ path: '/', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() })).body.toString();
	const tag = (t) => new RegExp(`<${t}>([^<]*)</${t}>`).exec(x)?.[1];
	check('STS: AssumeRoleWithWebIdentity answers Credentials in XML', x.startsWith('<AssumeRoleWithWebIdentityResponse') &&
		tag('AccessKeyId')?.startsWith('ASIA') && tag('SessionToken') && !Number.isNaN(Date.parse(tag('Expiration'))), x.slice(0, 300));
	const s = await send(await sign({ path: `/model/${MODEL}/converse`, body: JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'sts' }] }] }) },
		{ accessKeyId: tag('AccessKeyId'), secretAccessKey: tag('SecretAccessKey'), sessionToken: tag('SessionToken') }));
	check('STS: its credentials sign', s.status === 200, `${s.status} ${s.body}`);
}

await run('signatures', signatures);
await run('usage rules', usageRules);
await run('streams', streams);
await run('credentials', credentials);
finish();
