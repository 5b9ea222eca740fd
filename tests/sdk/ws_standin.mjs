// ws_standin.mjs: a stand-in for OpenAI's WebSocket APIs on 127.0.0.1, for
// kilovolt's WebSocket tests and for proving the real clients' wire:
//
//   node ws_standin.mjs [--port N] [--port-file F] [--log F.jsonl]
//       [--api-key K]... [--deflate on|off] [--max-payload BYTES]
//
// GET /v1/responses upgraded: the Responses API's WebSocket mode (Codex's
// default; ws_responses.mjs), one response.create per turn, chained by
// previous_response_id on the socket (or to a stored response).
// GET /v1/realtime?model=M upgraded: the Realtime API (ws_realtime.mjs).
// POST /v1/responses: the same turns as an SSE stream (what Codex falls
// back to, logged as transport "http" so a test can tell). GET /v1/models.
// A client authenticates with a bearer key (Authorization) or, on an
// upgrade, the browser form: the subprotocol "openai-insecure-api-key.KEY"
// (the "realtime" subprotocol is then chosen). permessage-deflate is
// accepted when offered unless --deflate off. A frame over --max-payload
// (default 16 MiB) closes the socket with 1009, as ws does.
//
// Each line of the log is one JSON record: {kind: "upgrade", conn, path,
// headers, auth, status, protocol, extensions}; {kind: "event", conn, type,
// bytes, event} for every client message (audio replaced by its length);
// {kind: "turn", conn, api, transport, model, response_id,
// previous_response_id, generate, by, status, usage, usage_sent} for every
// turn (status completed, stopped (by magic), dropped (the client went
// mid-turn); usage_sent: the usage reached the wire in response.completed
// or response.done); {kind: "cut", conn} when [[cut]] drops a connection;
// {kind: "close", conn, code, reason}; {kind: "http", ...}.
// Magic text in a turn (ws_usage.mjs): [[out=N]], [[slow=MS]], [[cut]] (the
// TCP connection dropped mid-turn), [[masked]] (a masked server frame
// mid-turn, then nothing until the peer fails the connection).
// The port is printed on stdout ("port N") and written to --port-file.
import http from 'node:http';
import { appendFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { listenOn } from './standin_listen.mjs';
import { randomBytes } from 'node:crypto';
import { WebSocketServer } from 'ws';
import { invalidCreate, runTurn, wsError } from './ws_responses.mjs';
import { RealtimeSession, rtError } from './ws_realtime.mjs';

const { values: opt } = parseArgs({ options: {
	port: { type: 'string', default: '0' }, 'port-file': { type: 'string' }, log: { type: 'string' },
	'api-key': { type: 'string', multiple: true, default: [] }, deflate: { type: 'string', default: 'on' },
	'max-payload': { type: 'string', default: String(16 << 20) },
} });
const keys = new Set(opt['api-key']);
const stored = new Map();	// response id -> usage, for store: true responses
let nconn = 0;

function record(rec) {
	if (opt.log)
		appendFileSync(opt.log, JSON.stringify({ t: new Date().toISOString(), ...rec }) + '\n');
}

// The key by which REQ authenticates: a bearer header, or on an upgrade
// the browser form OpenAI takes, the subprotocol openai-insecure-api-key.KEY.
function authorized(req) {
	const ok = (k) => k && (keys.size === 0 || keys.has(k));
	const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
	if (ok(m?.[1]))
		return 'bearer';
	const sub = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((x) => x.trim())
		.find((x) => x.startsWith('openai-insecure-api-key.'));
	return ok(sub?.slice('openai-insecure-api-key.'.length)) ? 'subprotocol' : null;
}

// A copy of a client event fit for the log: audio replaced by its length.
function loggable(ev) {
	if (typeof ev?.audio === 'string')
		return { ...ev, audio: `<${Buffer.from(ev.audio, 'base64').length} bytes>` };
	return ev;
}

// A client message DATA parsed and logged; undefined when not JSON.
function received(conn, data, binary) {
	let ev;
	try {
		ev = JSON.parse(data.toString());
	} catch {
		record({ kind: 'event', conn, type: null, bytes: data.length, binary });
		return undefined;
	}
	record({ kind: 'event', conn, type: ev?.type, bytes: data.length, binary, event: loggable(ev) });
	return ev;
}

// A text frame with the mask bit set, sent by a server: a protocol error
// (RFC 6455 5.1) a client must fail the connection on.
function maskedFrame(text) {
	const payload = Buffer.from(text), key = randomBytes(4);
	if (payload.length > 125)
		throw new Error('masked frame: short payloads only');
	const head = Buffer.from([0x81, 0x80 | payload.length]);
	return Buffer.concat([head, key, payload.map((b, i) => b ^ key[i % 4])]);
}

// What a turn does at its magic's point: true when it must stop there.
function midTurnOf(ws, conn) {
	return async (magic) => {
		if (magic.cut) {
			record({ kind: 'cut', conn });
			ws._socket.destroy();
			return true;
		}
		if (magic.masked) {
			await new Promise((r) => ws.ping('', false, r));	// what is queued is on the socket
			ws._socket.write(maskedFrame(JSON.stringify({ type: 'standin.masked' })));
			// nothing more: the peer must fail the connection
			await new Promise((r) => (ws.readyState === ws.CLOSED ? r() : ws.once('close', r)));
			return true;
		}
		return false;
	};
}

const sendOn = (ws) => (ev) => new Promise((resolve) => {
	if (ws.readyState !== ws.OPEN)
		return resolve();
	ws.send(JSON.stringify(ev), () => resolve());
});

function responsesSocket(ws, conn) {
	const mine = new Map();	// response id -> usage, this socket's
	const send = sendOn(ws);
	let busy = Promise.resolve();
	ws.on('message', (data, binary) => {
		busy = busy.then(async () => {
			const ev = received(conn, data, binary);
			if (ev === undefined)
				return send(wsError(400, 'invalid_request_error', 'invalid_json', 'The message is not valid JSON.'));
			if (ev?.type !== 'response.create')
				return send(wsError(400, 'invalid_request_error', 'invalid_value',
					`Invalid value: '${ev?.type}'. Supported values are: 'response.create'.`, 'type'));
			const { type, ...body } = ev;
			const known = new Map([...stored, ...mine]);
			const bad = invalidCreate(body, known);
			if (bad)
				return send(bad);
			const prev = body.previous_response_id ? known.get(body.previous_response_id) : null;
			const t = await runTurn(body, prev, send, { midTurn: midTurnOf(ws, conn) });
			const gone = ws.readyState !== ws.OPEN;
			record({ kind: 'turn', conn, api: 'responses', transport: 'ws', model: body.model, response_id: t.id,
				previous_response_id: body.previous_response_id ?? null, generate: body.generate !== false,
				status: gone && t.status === 'completed' ? 'dropped' : t.status, usage: t.usage,
				usage_sent: t.status === 'completed' && !gone, output: t.output?.map((o) => o.type) });
			mine.set(t.id, t.usage);
			if (body.store !== false)
				stored.set(t.id, t.usage);
		}).catch((e) => record({ kind: 'error', conn, message: e.message }));
	});
}

function realtimeSocket(ws, conn, model) {
	const rt = new RealtimeSession(model, sendOn(ws), (rec) => record({ ...rec, conn, transport: 'ws', model }),
		midTurnOf(ws, conn));
	let busy = rt.start();
	ws.on('message', (data, binary) => {
		busy = busy.then(async () => {
			const ev = received(conn, data, binary);
			if (ev === undefined)
				return rt.send(rtError('invalid_request_error', 'invalid_json', 'The message is not valid JSON.'));
			// A turn streams while later events (a cancel) are read.
			if (ev?.type === 'response.cancel' || ev?.type === 'input_audio_buffer.append')
				return void rt.handle(ev);
			if (ev?.type === 'response.create') {
				rt.handle(ev).catch((e) => record({ kind: 'error', conn, message: e.message }));
				return undefined;
			}
			return rt.handle(ev);
		}).catch((e) => record({ kind: 'error', conn, message: e.message }));
	});
}

const wss = new WebSocketServer({
	noServer: true, maxPayload: Number(opt['max-payload']),
	perMessageDeflate: opt.deflate === 'on' ? { threshold: 0 } : false,
	handleProtocols: (protocols) => (protocols.has('realtime') ? 'realtime' : false),
});

function refuse(socket, status, body) {
	const text = JSON.stringify(body);
	socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: application/json\r\n` +
		`content-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`);
}

function upgrade(req, socket, head) {
	const url = new URL(req.url, 'http://standin');
	const conn = ++nconn;
	const rec = { kind: 'upgrade', conn, path: url.pathname, query: url.search, headers: req.headers };
	const api = url.pathname === '/v1/responses' ? 'responses' : url.pathname === '/v1/realtime' ? 'realtime' : null;
	rec.auth = authorized(req);
	const model = url.searchParams.get('model');
	const no = !api ? [404, { error: { message: `Invalid URL (GET ${url.pathname})`, type: 'invalid_request_error', code: null } }] :
		!rec.auth ? [401, { error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' } }] :
		api === 'realtime' && !model ? [400, { error: { message: 'Missing required parameter: model.', type: 'invalid_request_error', code: 'missing_model' } }] :
		null;
	if (no) {
		record({ ...rec, status: no[0] });
		return refuse(socket, no[0], no[1]);
	}
	wss.handleUpgrade(req, socket, head, (ws) => {
		record({ ...rec, status: 101, protocol: ws.protocol, extensions: ws.extensions });
		ws.on('close', (code, reason) => record({ kind: 'close', conn, code, reason: reason.toString() }));
		ws.on('error', (e) => record({ kind: 'error', conn, message: e.message }));
		if (api === 'responses')
			responsesSocket(ws, conn);
		else
			realtimeSocket(ws, conn, model);
	});
}

// POST /v1/responses: the same turn as an SSE stream.
async function httpResponses(req, res, raw, rec) {
	let body;
	try {
		body = JSON.parse(raw);
	} catch {
		body = {};
	}
	const bad = invalidCreate(body, stored);
	if (bad) {
		res.writeHead(bad.status, { 'content-type': 'application/json' });
		return res.end(JSON.stringify({ error: bad.error }));
	}
	res.writeHead(200, { 'content-type': 'text/event-stream' });
	const send = (ev) => new Promise((r) => res.write(`event: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n`, r));
	const midTurn = async (magic) => {
		if (magic.cut)
			res.socket.destroy();
		return magic.cut;
	};
	const t = await runTurn(body, body.previous_response_id ? stored.get(body.previous_response_id) : null, send, { midTurn });
	res.end();
	Object.assign(rec, { kind: 'turn', api: 'responses', transport: 'http', model: body.model, response_id: t.id,
		previous_response_id: body.previous_response_id ?? null, generate: body.generate !== false, status: t.status,
		usage: t.usage, usage_sent: t.status === 'completed', event: body });
	if (body.store !== false)
		stored.set(t.id, t.usage);
}

const server = http.createServer((req, res) => {
	const chunks = [];
	req.on('data', (c) => chunks.push(c));
	req.on('end', async () => {
		const raw = Buffer.concat(chunks).toString();
		const rec = { kind: 'http', method: req.method, target: req.url, headers: req.headers };
		try {
			if (!authorized(req)) {
				res.writeHead(401, { 'content-type': 'application/json' });
				res.end(JSON.stringify({ error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' } }));
			} else if (req.method === 'POST' && req.url.split('?')[0] === '/v1/responses') {
				await httpResponses(req, res, raw, rec);
			} else if (req.method === 'GET' && req.url.split('?')[0] === '/v1/models') {
				res.writeHead(200, { 'content-type': 'application/json' });
				res.end(JSON.stringify({ object: 'list', data: [] }));
			} else {
				res.writeHead(404, { 'content-type': 'application/json' });
				res.end(JSON.stringify({ error: { message: `Invalid URL (${req.method} ${req.url})`, type: 'invalid_request_error' } }));
			}
		} catch (e) {
			rec.error = e.message;
			res.destroy();
		}
		record({ ...rec, status: res.statusCode });
	});
});
server.on('upgrade', upgrade);
listenOn(server, opt.port, opt['port-file']);
