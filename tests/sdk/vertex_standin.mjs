// vertex_standin.mjs: a stand-in for Google Cloud's Vertex AI on 127.0.0.1
// (HTTP/1.1), for kilovolt's Vertex tests:
//
//   node vertex_standin.mjs --public-key F.pem --client-email E [--port N]
//       [--port-file F] [--log F.jsonl] [--project P] [--location L]
//       [--token-ttl SECS]
//
// It plays three services on one port:
// - Google's OAuth token endpoint, POST /token: the grant
//   urn:ietf:params:oauth:grant-type:jwt-bearer whose assertion it VERIFIES
//   with jose against the service account's public key (RS256, iss the
//   client email, aud this endpoint's URL, the cloud-platform scope, iat/exp
//   now and at most an hour apart), then vends an access token living
//   --token-ttl seconds (an OAuth error answer otherwise);
// - the metadata server, GET /computeMetadata/v1/instance/service-accounts/
//   default/token with Metadata-Flavor: Google (refused without it);
// - Vertex AI's Gemini endpoints, POST .../publishers/google/models/M:
//   generateContent, :streamGenerateContent (SSE with alt=sse, else one JSON
//   array), :countTokens, with the same token check;
// - Vertex AI's Claude endpoints, POST /v1/projects/P/locations/L/publishers/
//   anthropic/models/M:rawPredict, :streamRawPredict (Anthropic's SSE) and
//   count-tokens:rawPredict, each only with a live vended token as
//   Authorization: Bearer (401 in Google's error shape otherwise), the body
//   checked as Vertex does (anthropic_version vertex-2023-10-16, no model).
// Usage is deterministic (standin_usage.mjs, Anthropic's cache rule).
//
// Each request is one JSON line in the log: method, target, headers, status,
// auth (the token it carried, or the assertion's verdict), model, op, usage,
// outcome, and for a vended token {via, token, expires_in} (and the
// assertion's kid). The port is
// printed ("port N") and written to --port-file.
import { appendFileSync, readFileSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { importSPKI, jwtVerify } from 'jose';
import { usageOf, answerWords } from './standin_usage.mjs';
import { anthropicEvents } from './standin_wire.mjs';
import { listenOn, recordingServer } from './standin_listen.mjs';

const { values: opt } = parseArgs({ options: {
	port: { type: 'string', default: '0' }, 'port-file': { type: 'string' }, log: { type: 'string' },
	'public-key': { type: 'string' }, 'client-email': { type: 'string' },
	project: { type: 'string', default: 'kv-project' }, location: { type: 'string', default: 'us-east5' },
	'token-ttl': { type: 'string', default: '3600' },
} });
const publicKey = await importSPKI(readFileSync(opt['public-key'], 'utf8'), 'RS256');
const tokens = new Map();	// access token -> expiry (ms)
const seenPrefixes = new Set();
const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let port = 0;

function record(rec) {
	if (opt.log)
		appendFileSync(opt.log, JSON.stringify(rec) + '\n');
}

function json(res, status, body) {
	res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
	res.end(JSON.stringify(body));
}

function vend(res, rec, via) {
	const token = `ya29.standin-${randomBytes(12).toString('hex')}`, ttl = Number(opt['token-ttl']);
	tokens.set(token, Date.now() + ttl * 1000);
	rec.vended = { via, token, expires_in: ttl };
	json(res, 200, { access_token: token, expires_in: ttl, token_type: 'Bearer' });
	return 'vended';
}

// The token endpoint: the assertion verified as Google does.
async function tokenEndpoint(req, res, raw, rec) {
	const form = new URLSearchParams(raw.toString());
	const oauthError = (error, why) => {
		rec.auth = `refused:${why}`;
		json(res, 400, { error, error_description: why });
		return 'refused';
	};
	if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer')
		return oauthError('unsupported_grant_type', 'Invalid grant_type');
	let claims, head;
	try {
		({ payload: claims, protectedHeader: head } = await jwtVerify(form.get('assertion') ?? '', publicKey, {
			algorithms: ['RS256'], issuer: opt['client-email'], audience: `http://127.0.0.1:${port}/token`,
			maxTokenAge: '3601s', clockTolerance: 60, requiredClaims: ['iat', 'exp'] }));
	} catch (e) {
		return oauthError('invalid_grant', `Invalid JWT Signature or claims (${e.code ?? e.message})`);
	}
	if (claims.scope !== SCOPE || claims.exp - claims.iat > 3600)
		return oauthError('invalid_scope', 'the scope or the lifetime is not the one asked for');
	rec.auth = `assertion:${claims.iss}`;
	rec.kid = head.kid;
	return vend(res, rec, 'token endpoint');
}

function googleError(res, status, message, reason) {
	json(res, status, { error: { code: status, message, status: reason } });
	return 'refused';
}

// The bearer token a model call carries, live; else why not.
function bearer(req, rec) {
	const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
	const exp = m && tokens.get(m[1]);
	rec.auth = !m ? 'none' : !exp ? `unknown:${m[1]}` : exp <= Date.now() ? `expired:${m[1]}` : `token:${m[1]}`;
	return rec.auth.startsWith('token:');
}

// Gemini's usage, deterministic: the prompt is every text of contents and
// systemInstruction (tokens as standin_usage.mjs counts them), the answer
// min(maxOutputTokens, [[out=N]] or 12) tokens, thoughts [[think=N]] (0).
function geminiUsage(body) {
	const texts = [];
	const walk = (n) => {
		if (Array.isArray(n))
			n.forEach(walk);
		else if (n && typeof n === 'object')
			for (const [k, v] of Object.entries(n))
				k === 'text' && typeof v === 'string' ? texts.push(v) : walk(v);
	};
	walk([body.systemInstruction, body.contents]);
	const all = texts.join('');
	const prompt = Math.max(1, Math.ceil(Buffer.byteLength(all) / 4));
	const asked = Number(/\[\[out=(\d+)\]\]/.exec(all)?.[1] ?? 12);
	const candidates = Math.min(body.generationConfig?.maxOutputTokens ?? 8192, asked);
	const thoughts = Number(/\[\[think=(\d+)\]\]/.exec(all)?.[1] ?? 0);
	return { prompt, candidates, thoughts, cut: all.includes('[[cut]]') };
}

const metadata = (u, n) => ({ promptTokenCount: u.prompt, candidatesTokenCount: n,
	...(u.thoughts ? { thoughtsTokenCount: u.thoughts } : {}), totalTokenCount: u.prompt + n + u.thoughts });

// generateContent, or streamGenerateContent as SSE (alt=sse) or one JSON
// array; each chunk carries the usage so far, the last finishReason STOP.
async function gemini(res, m, query, body, rec) {
	const [, project, location, model, op] = m;
	rec.model = model;
	rec.op = op;
	if (project !== opt.project || location !== opt.location)
		return googleError(res, 403, `Permission denied on resource project ${project}`, 'PERMISSION_DENIED');
	if (op === 'countTokens') {
		json(res, 200, { totalTokens: geminiUsage(body ?? {}).prompt });
		return 'counted';
	}
	if (!Array.isArray(body?.contents) || 'model' in body)
		return googleError(res, 400, 'contents is required', 'INVALID_ARGUMENT');
	const u = geminiUsage(body);
	rec.usage = { prompt: u.prompt, candidates: u.candidates, thoughts: u.thoughts };
	const words = answerWords(u.candidates);
	const chunk = (text, n, last) => ({ candidates: [{ content: { role: 'model', parts: [{ text }] }, index: 0,
		...(last ? { finishReason: 'STOP' } : {}) }], usageMetadata: metadata(u, n), modelVersion: model,
		responseId: rec.t });
	if (op === 'generateContent') {
		json(res, 200, chunk(words.join(''), u.candidates, true));
		return 'complete';
	}
	const chunks = [];
	for (let i = 0; i < words.length; i += 4)
		chunks.push(chunk(words.slice(i, i + 4).join(''), Math.min(i + 4, words.length), i + 4 >= words.length));
	const sse = new URLSearchParams(query).get('alt') === 'sse';
	res.writeHead(200, { 'content-type': sse ? 'text/event-stream' : 'application/json; charset=UTF-8' });
	for (let i = 0; i < chunks.length; i++) {
		if (u.cut && i === chunks.length >> 1) {
			await sleep(50);
			res.socket.destroy();
			return 'cut';
		}
		res.write(sse ? `data: ${JSON.stringify(chunks[i])}\r\n\r\n` :
			`${i ? ',\r\n' : '['}${JSON.stringify(chunks[i])}`);
	}
	res.end(sse ? '' : ']');
	return 'complete';
}

const GEMINI_PATH = /^\/v1(?:beta1)?\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/google\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/;
const MODEL_PATH = /^\/v1(?:beta1)?\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/anthropic\/models\/([^/:]+):(rawPredict|streamRawPredict)$/;

function invalid(body) {
	if (body === undefined)
		return 'Invalid JSON payload received.';
	// Vertex's documented version, or an Anthropic API version (what
	// @anthropic-ai/vertex-sdk 1.x copies from its anthropic-version header)
	if (!/^(vertex-2023-10-16|\d{4}-\d{2}-\d{2})$/.test(body.anthropic_version ?? ''))
		return 'anthropic_version: vertex-2023-10-16 is required';
	if ('model' in body)
		return 'model: Extra inputs are not permitted';
	if (!Number.isInteger(body.max_tokens) || !Array.isArray(body.messages))
		return 'max_tokens and messages are required';
	return null;
}

async function sse(res, events, u) {
	res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
	const half = Math.max(1, events.length >> 1);
	for (let i = 0; i < events.length; i++) {
		if (i === half && u.magic.cut) {
			await sleep(50);
			res.socket.destroy();
			return 'cut';
		}
		res.write(`event: ${events[i].type}\ndata: ${JSON.stringify(events[i])}\n\n`);
		if (u.magic.slow)
			await sleep(u.magic.slow);
	}
	res.end();
	return 'complete';
}

async function claude(res, m, body, rec) {
	const [, project, location, model, op] = m;
	rec.model = model;
	rec.op = op;
	if (project !== opt.project || location !== opt.location)
		return googleError(res, 403, `Permission denied on resource project ${project} location ${location}`, 'PERMISSION_DENIED');
	if (model === 'count-tokens') {
		json(res, 200, { input_tokens: usageOf(body ?? {}, {}, new Set(), 1).input });
		return 'counted';
	}
	const bad = invalid(body);
	if (bad)
		return googleError(res, 400, bad, 'INVALID_ARGUMENT');
	const u = usageOf(body, {}, seenPrefixes, body.max_tokens);
	rec.version = body.anthropic_version;
	rec.usage = { input: u.input, output: u.output, cacheRead: u.cacheRead, cacheWrite: u.cacheWrite };
	const id = `msg_vrtx_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
	const name = model.replace(/@.*$/, '');
	if (op === 'streamRawPredict' && body.stream) {
		const ev = anthropicEvents(id, name, u);
		delete ev.at(-1)['amazon-bedrock-invocationMetrics'];
		return sse(res, ev, u);
	}
	json(res, 200, { id, type: 'message', role: 'assistant', model: name,
		content: [{ type: 'text', text: answerWords(u.output).join('') }], stop_reason: u.stop, stop_sequence: null,
		usage: { input_tokens: u.input, cache_creation_input_tokens: u.cacheWrite,
			cache_read_input_tokens: u.cacheRead, output_tokens: u.output } });
	return 'complete';
}

async function route(req, res, raw, rec) {
	const path = req.url.split('?')[0];
	if (req.method === 'POST' && path === '/token')
		return tokenEndpoint(req, res, raw, rec);
	if (req.method === 'GET' && path === '/computeMetadata/v1/instance/service-accounts/default/token') {
		if (req.headers['metadata-flavor'] !== 'Google')
			return googleError(res, 403, 'Missing Metadata-Flavor:Google header.', 'FORBIDDEN');
		return vend(res, rec, 'metadata server');
	}
	if (!bearer(req, rec))
		return googleError(res, 401, 'Request had invalid authentication credentials. Expected OAuth 2 access token.', 'UNAUTHENTICATED');
	let body;
	try {
		body = raw.length ? JSON.parse(raw) : undefined;
	} catch {
		body = undefined;
	}
	const m = MODEL_PATH.exec(path);
	if (req.method === 'POST' && m)
		return claude(res, m, body, rec);
	const g = GEMINI_PATH.exec(path);
	if (req.method === 'POST' && g)
		return gemini(res, g, req.url.split('?')[1] ?? '', body, rec);
	return googleError(res, 404, `The requested URL ${path} was not found on this server.`, 'NOT_FOUND');
}

const server = recordingServer(route, record, (res, m) => googleError(res, 500, m, 'INTERNAL'));
listenOn(server, opt.port, opt['port-file']);
server.on('listening', () => { port = server.address().port; });
