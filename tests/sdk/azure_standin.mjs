// azure_standin.mjs: a stand-in for Azure OpenAI and for Entra ID's token
// endpoint on 127.0.0.1 (HTTP/1.1), for kilovolt's Azure tests:
//
//   node azure_standin.mjs [--port-file F] [--log F.jsonl] [--api-key K]...
//       [--deployment NAME=MODEL]... [--tenant T --client-id ID
//       --client-secret S] [--token-ttl SECS] [--fail-after N]
//
// Azure OpenAI: POST /openai/deployments/{name}/chat/completions,
// /completions, /embeddings (api-version required in the query, as Azure
// does), POST /openai/v1/chat/completions, /openai/v1/responses,
// /openai/v1/embeddings and /openai/responses (the deployment in the body's
// "model"). A request authenticates with an api-key header it was given
// (--api-key) or an Entra bearer token it issued; else 401 in Azure's
// shape. An unknown deployment is 404 DeploymentNotFound. The answers
// carry Azure's own fields: prompt_filter_results, content_filter_results,
// and a stream's first chunk with no choices (the prompt's filter results).
// "model" in an answer is the deployment's MODEL.
//
// Entra ID: POST /{tenant}/oauth2/v2.0/token with the client-credentials
// form (client_id, client_secret, scope https://cognitiveservices.azure.com/.default)
// answers a bearer token valid for --token-ttl seconds; a wrong secret is
// 401 invalid_client (AADSTS7000215), as Entra answers; so is every
// request after --fail-after N tokens were issued (a secret revoked).
//
// Usage is deterministic: prompt tokens = ceil(body bytes / 4), completion
// tokens = min(max_tokens (or max_output_tokens), 7). Each request is one
// JSON line in the log: method, target, deployment, model, auth
// ("api-key KEY", "bearer TOKEN" or "none"), status, usage, and for the
// token endpoint the client_id and whether it issued a token.
import http from 'node:http';
import { appendFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({ options: {
	'port-file': { type: 'string' }, log: { type: 'string' },
	'api-key': { type: 'string', multiple: true, default: [] },
	deployment: { type: 'string', multiple: true, default: [] },
	tenant: { type: 'string' }, 'client-id': { type: 'string' }, 'client-secret': { type: 'string' },
	'token-ttl': { type: 'string', default: '3600' },
	'fail-after': { type: 'string' },
} });

const apiKeys = new Set(opt['api-key']);
const deployments = new Map(opt.deployment.map((d) => d.split('=')));
const tokens = new Map();	// token -> expiry (ms)
const SCOPE = 'https://cognitiveservices.azure.com/.default';
const FILTER = { hate: { filtered: false, severity: 'safe' }, self_harm: { filtered: false, severity: 'safe' },
	sexual: { filtered: false, severity: 'safe' }, violence: { filtered: false, severity: 'safe' } };
const PROMPT_FILTER = [{ prompt_index: 0, content_filter_results: FILTER }];

function record(rec) {
	if (opt.log)
		appendFileSync(opt.log, JSON.stringify(rec) + '\n');
}

function json(res, status, body) {
	res.writeHead(status, { 'content-type': 'application/json', 'apim-request-id': randomBytes(8).toString('hex') });
	res.end(JSON.stringify(body));
}

function azureError(res, status, code, message) {
	json(res, status, { error: { code, message } });
}

// Who sent it: a given api-key, or an unexpired bearer token we issued.
function authOf(req) {
	const key = req.headers['api-key'];
	if (key !== undefined)
		return apiKeys.has(key) ? `api-key ${key}` : null;
	const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
	if (m && (tokens.get(m[1]) ?? 0) > Date.now())
		return `bearer ${m[1]}`;
	return null;
}

function usageFor(raw, body) {
	const prompt = Math.ceil(raw.length / 4);
	const max = body.max_tokens ?? body.max_completion_tokens ?? body.max_output_tokens ?? 7;
	return { prompt, completion: Math.min(max, 7) };
}

function chatUsage(u) {
	return { prompt_tokens: u.prompt, completion_tokens: u.completion, total_tokens: u.prompt + u.completion,
		prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
		completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0,
			accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 } };
}

function text(n) {
	return Array.from({ length: n }, (_, i) => `tok${i}`).join(' ');
}

function chatStream(res, model, body, u) {
	const base = { id: 'chatcmpl-az' + randomBytes(6).toString('hex'), object: 'chat.completion.chunk',
		created: Math.floor(Date.now() / 1000), model, system_fingerprint: 'fp_azure' };
	const send = (o) => res.write(`data: ${JSON.stringify(o)}\n\n`);
	res.writeHead(200, { 'content-type': 'text/event-stream' });
	// Azure's first chunk: no choices, no model, the prompt's filter results
	send({ choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: PROMPT_FILTER });
	send({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null,
		content_filter_results: {} }] });
	for (let i = 0; i < u.completion; i++)
		send({ ...base, choices: [{ index: 0, delta: { content: `tok${i} ` }, finish_reason: null,
			content_filter_results: FILTER }] });
	send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop', content_filter_results: {} }],
		...(body.stream_options?.include_usage ? { usage: null } : {}) });
	if (body.stream_options?.include_usage)
		send({ ...base, choices: [], usage: chatUsage(u) });
	res.end('data: [DONE]\n\n');
}

function chat(res, model, body, u) {
	if (body.stream)
		return chatStream(res, model, body, u);
	json(res, 200, { id: 'chatcmpl-az' + randomBytes(6).toString('hex'), object: 'chat.completion',
		created: Math.floor(Date.now() / 1000), model, system_fingerprint: 'fp_azure',
		prompt_filter_results: PROMPT_FILTER,
		choices: [{ index: 0, finish_reason: 'stop', logprobs: null, content_filter_results: FILTER,
			message: { role: 'assistant', content: text(u.completion), refusal: null } }],
		usage: chatUsage(u) });
}

function embeddings(res, model, body, u) {
	const inputs = Array.isArray(body.input) ? body.input : [body.input];
	const vec = [0.25, -0.5, 0.125, 1];
	const data = inputs.map((_, index) => ({ object: 'embedding', index, embedding: body.encoding_format === 'base64' ?
		Buffer.from(new Float32Array(vec).buffer).toString('base64') : vec }));
	json(res, 200, { object: 'list', data, model, usage: { prompt_tokens: u.prompt, total_tokens: u.prompt } });
}

function responses(res, model, body, u) {
	const out = text(u.completion);
	const resp = { id: 'resp_az' + randomBytes(6).toString('hex'), object: 'response',
		created_at: Math.floor(Date.now() / 1000), status: 'completed', model, error: null,
		output: [{ type: 'message', id: 'msg_az1', status: 'completed', role: 'assistant',
			content: [{ type: 'output_text', text: out, annotations: [] }] }],
		usage: { input_tokens: u.prompt, input_tokens_details: { cached_tokens: 0 }, output_tokens: u.completion,
			output_tokens_details: { reasoning_tokens: 0 }, total_tokens: u.prompt + u.completion },
		content_filters: null };
	if (!body.stream)
		return json(res, 200, resp);
	res.writeHead(200, { 'content-type': 'text/event-stream' });
	let seq = 0;
	const ev = (type, o) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...o })}\n\n`);
	ev('response.created', { response: { ...resp, status: 'in_progress', output: [], usage: null } });
	ev('response.output_text.delta', { item_id: 'msg_az1', output_index: 0, content_index: 0, delta: out });
	ev('response.completed', { response: resp });
	res.end();
}

const OPS = { '/chat/completions': chat, '/completions': chat, '/embeddings': embeddings, '/responses': responses };

// The deployment and operation a path names, or null.
function route(path, body) {
	let m = /^\/openai\/deployments\/([^/]+)(\/.*)$/.exec(path);
	if (m)
		return { deployment: decodeURIComponent(m[1]), op: m[2], needVersion: true };
	m = /^\/openai(?:\/v1)?(\/.*)$/.exec(path);
	return m ? { deployment: body.model, op: m[1], needVersion: !path.startsWith('/openai/v1/') } : null;
}

function serveOpenai(req, res, url, raw, rec) {
	let body;
	try {
		body = JSON.parse(raw || '{}');
	} catch {
		return azureError(res, 400, 'BadRequest', 'malformed JSON');
	}
	const r = route(url.pathname, body);
	const handler = r && OPS[r.op];
	rec.auth = authOf(req) ?? 'none';
	if (rec.auth === 'none')
		return azureError(res, 401, '401', 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.');
	if (!handler || req.method !== 'POST')
		return azureError(res, 404, '404', 'Resource not found');
	if (r.needVersion && !url.searchParams.get('api-version'))
		return azureError(res, 404, '404', 'Resource not found');
	rec.deployment = r.deployment;
	rec.model = deployments.get(r.deployment);
	if (rec.model === undefined)
		return azureError(res, 404, 'DeploymentNotFound', 'The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.');
	const u = usageFor(raw, body);
	rec.usage = r.op === '/embeddings' ? { prompt: u.prompt, completion: 0 } : u;
	rec.stream = !!body.stream;
	handler(res, rec.model, body, u);
}

function serveToken(req, res, raw, rec) {
	const form = new URLSearchParams(raw);
	rec.client_id = form.get('client_id');
	const revoked = opt['fail-after'] !== undefined && tokens.size >= Number(opt['fail-after']);
	const ok = !revoked && req.method === 'POST' && form.get('grant_type') === 'client_credentials' &&
		form.get('scope') === SCOPE && rec.client_id === opt['client-id'] &&
		form.get('client_secret') === opt['client-secret'];
	if (!ok) {
		rec.issued = false;
		return json(res, 401, { error: 'invalid_client', error_codes: [7000215],
			error_description: `AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${rec.client_id}'.` });
	}
	const token = 'eyJ0eXAiOiJKV1Qi.' + randomBytes(24).toString('base64url');
	const ttl = Number(opt['token-ttl']);
	tokens.set(token, Date.now() + ttl * 1000);
	rec.issued = true;
	rec.token = token;
	json(res, 200, { token_type: 'Bearer', expires_in: ttl, ext_expires_in: ttl, access_token: token });
}

const server = http.createServer((req, res) => {
	const chunks = [];
	req.on('data', (c) => chunks.push(c));
	req.on('end', () => {
		const raw = Buffer.concat(chunks).toString();
		const url = new URL(req.url, 'http://standin');
		const rec = { method: req.method, target: req.url, headers: { 'api-key': req.headers['api-key'],
			authorization: req.headers.authorization } };
		if (opt.tenant && url.pathname === `/${opt.tenant}/oauth2/v2.0/token`)
			serveToken(req, res, raw, rec);
		else
			serveOpenai(req, res, url, raw, rec);
		rec.status = res.statusCode;
		record(rec);
	});
});

server.listen(0, '127.0.0.1', () => {
	const { port } = server.address();
	console.log(`port ${port}`);
	if (opt['port-file'])
		writeFileSync(opt['port-file'], `${port}\n`);
});
