// bedrock_standin.mjs: a stand-in for AWS Bedrock on 127.0.0.1 (HTTP/1.1),
// for kilovolt's Bedrock tests and for proving the real clients' wire:
//
//   node bedrock_standin.mjs [--port N] [--port-file F] [--log F.jsonl]
//       [--region us-east-1] [--access-key AK --secret-key SK [--session-token T]]
//       [--api-key K]... [--cred-ttl SECS] [--web-identity-token TOK]
//
// Every request is authenticated as Bedrock does (standin_auth.mjs: SigV4
// recomputed with AWS's own signer, or a Bedrock API key as a bearer token)
// and then served: POST /model/{modelId}/invoke, /invoke-with-response-stream,
// /converse, /converse-stream (the model id may be a percent-encoded ARN),
// POST /openai/v1/chat/completions, GET /inference-profiles and
// /foundation-models (the control plane). Usage is deterministic
// (standin_usage.mjs). It also plays IMDSv2 (/latest/...) and STS
// AssumeRoleWithWebIdentity (POST / with the form) (standin_creds.mjs).
//
// Each request is one JSON line in the log: method, target, headers, the
// body's SHA-256 and length, who authenticated, status, model, op, usage,
// outcome (complete, cut, malformed, throttled, refused, imds, sts, control)
// and, for IMDS and STS, the credentials vended ({via, accessKeyId,
// expiration}). The port is printed
// on stdout ("port N") and written to --port-file.
import { appendFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { listenOn, recordingServer } from './standin_listen.mjs';
import { authenticate, splitTarget } from './standin_auth.mjs';
import { usageOf } from './standin_usage.mjs';
import { invoke, converse, openaiChat } from './standin_wire.mjs';
import { imds, sts } from './standin_creds.mjs';
import { control } from './standin_control.mjs';

const { values: opt } = parseArgs({ options: {
	port: { type: 'string', default: '0' }, 'port-file': { type: 'string' }, log: { type: 'string' },
	region: { type: 'string', default: 'us-east-1' },
	'access-key': { type: 'string', default: 'AKIAKVSTANDIN0000001' },
	'secret-key': { type: 'string', default: 'kvStandinSecretKey/0000000000000000000001' },
	'session-token': { type: 'string' },
	'api-key': { type: 'string', multiple: true, default: [] },
	'cred-ttl': { type: 'string', default: '3600' },
	'web-identity-token': { type: 'string' },
} });

const st = {
	region: opt.region, apiKeys: new Set(opt['api-key']), credentials: new Map(), imdsTokens: new Set(),
	vended: [], credTtl: Number(opt['cred-ttl']), webIdentityToken: opt['web-identity-token'],
	seenPrefixes: new Set(), now: () => Date.now(),
};
st.credentials.set(opt['access-key'], { secretAccessKey: opt['secret-key'], sessionToken: opt['session-token'] });

const ERR_NS = {
	InvalidSignatureException: 'com.amazon.coral.service', IncompleteSignatureException: 'com.amazon.coral.service',
	MissingAuthenticationTokenException: 'com.amazon.coral.service', UnrecognizedClientException: 'com.amazon.coral.service',
	ExpiredTokenException: 'com.amazon.coral.service',
};

function awsError(res, status, type, message) {
	res.writeHead(status, { 'content-type': 'application/json',
		'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/${ERR_NS[type] ?? 'com.amazon.bedrock'}/` });
	res.end(JSON.stringify({ message }));
	return 'refused';
}

function record(rec) {
	if (opt.log)
		appendFileSync(opt.log, JSON.stringify(rec) + '\n');
}

const MODEL_PATH = /^\/model\/([^/]+)\/(invoke|invoke-with-response-stream|converse|converse-stream)$/;

// The body's checks Bedrock makes before the model runs.
function invalid(op, modelId, body) {
	if (body === undefined)
		return 'Malformed input request, please reformat your input and try again.';
	if (op.startsWith('invoke')) {
		if (!/(^|[./])anthropic\./.test(modelId))
			return 'The provided model identifier is invalid.';
		if ('model' in body)
			return 'Malformed input request: #: extraneous key [model] is not permitted, please reformat your input and try again.';
		// Bedrock's documented version, or an Anthropic API version (what
		// @anthropic-ai/bedrock-sdk 1.x sends: its anthropic-version header)
		if (!/^(bedrock-2023-05-31|\d{4}-\d{2}-\d{2})$/.test(body.anthropic_version ?? ''))
			return 'Malformed input request: #/anthropic_version: bedrock-2023-05-31 is required, please reformat your input and try again.';
		if (!Number.isInteger(body.max_tokens) || !Array.isArray(body.messages))
			return 'Malformed input request: #: required key [max_tokens] not found, please reformat your input and try again.';
	} else if (!Array.isArray(body.messages) && !Array.isArray(body.system)) {
		return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.';
	}
	return null;
}

async function serveModel(req, res, m, body, rec) {
	const modelId = decodeURIComponent(m[1]), op = m[2];
	rec.model = modelId;
	rec.op = op;
	const bad = invalid(op, modelId, body);
	if (bad)
		return awsError(res, 400, 'ValidationException', bad);
	const u = usageOf(body, req.headers, st.seenPrefixes, op.startsWith('converse') ? 4096 : body.max_tokens);
	rec.usage = { input: u.input, output: u.output, cacheRead: u.cacheRead, cacheWrite: u.cacheWrite };
	const stream = op.endsWith('stream');
	if (u.magic.throttle && !stream)
		return awsError(res, 429, 'ThrottlingException', 'Too many requests, please wait before trying again.');
	return op.startsWith('invoke') ? invoke(res, modelId, u, stream) : converse(res, u, stream);
}

async function route(req, res, raw, rec) {
	const [path, query] = splitTarget(req.url);
	const vends = st.vended.length;
	const vended = (outcome) => {
		if (st.vended.length > vends)
			rec.vended = st.vended.at(-1);	// {via, accessKeyId, expiration}
		return outcome;
	};
	if (imds(req, res, st))
		return vended('imds');
	if (path === '/' && (req.method === 'POST' || query)) {
		sts(res, new URLSearchParams(req.method === 'POST' ? raw.toString() : query), st);
		return vended('sts');
	}
	const a = await authenticate(req, raw, { region: st.region, apiKeys: st.apiKeys, credentials: st.credentials, now: st.now });
	rec.auth = a.ok ? a.who : `refused:${a.type}`;
	if (!a.ok)
		return awsError(res, a.status, a.type, a.message);
	let body;
	try {
		body = raw.length ? JSON.parse(raw) : undefined;
	} catch {
		body = undefined;
	}
	const m = MODEL_PATH.exec(path);
	if (req.method === 'POST' && m)
		return serveModel(req, res, m, body, rec);
	if (req.method === 'POST' && path === '/openai/v1/chat/completions') {
		if (!body || !Array.isArray(body.messages))
			return awsError(res, 400, 'ValidationException', 'messages is required');
		const u = usageOf(body, req.headers, st.seenPrefixes, 4096);
		rec.model = body.model;
		rec.op = 'chat';
		rec.usage = { input: u.input, output: u.output, cacheRead: 0, cacheWrite: 0 };
		return openaiChat(res, body, u);
	}
	const c = req.method === 'GET' && control(path, new URLSearchParams(query), st.region);
	if (c) {
		res.writeHead(c[0], { 'content-type': 'application/json' });
		res.end(JSON.stringify(c[1]));
		return 'control';
	}
	return awsError(res, 404, 'UnknownOperationException', 'Unknown operation');
}

const server = recordingServer(route, record, (res, m) => awsError(res, 500, 'InternalServerException', m),
	(raw) => ({ body_sha256: createHash('sha256').update(raw).digest('hex'), body_bytes: raw.length }));
listenOn(server, opt.port, opt['port-file']);
