// ws_hostile.mjs: the `ws` package drives the awkward cases of OpenAI's
// Responses WebSocket mode against BASE (ws://host:port, the stand-in or
// kilovolt in front of it), each on its own socket:
//
//   node ws_hostile.mjs BASE KEY MODEL CASE...
//
//   auth        a wrong key: the upgrade is refused with 401
//   fragmented  response.create in three fragments, a ping between two of
//               them: the turn completes
//   chained     a turn chained to an unknown previous_response_id gets an
//               error event, the socket stays open, the next turn works
//   oversized:N a frame of N bytes: the socket is closed (1009 or 1006)
//   subprotocol a Realtime session authenticated as browsers do (the
//               subprotocols realtime and openai-insecure-api-key.KEY, no
//               Authorization header): session.created, "realtime" chosen
//   (masked, cut and drop ask for max_output_tokens 40)
//   masked      a turn whose answer has a masked server frame ([[masked]]):
//               the connection fails (here or in a relay), no usage
//   cut         a turn the server drops mid-way ([[cut]]): closed, no usage
//   drop        the client goes away mid-turn ([[slow=100]], gone after the
//               first delta)
//   budget:N    on one socket: a turn with max_output_tokens 16 completes; a
//               turn with max_output_tokens N (its input "refused-turn")
//               gets an error event (a relay's budget refusal, in-band); the
//               socket stays open and a third turn (16 again) completes
//
// Each turn's response.completed usage is printed as "usage {...}", one
// ok/FAIL line per check, "N passed, N failed" at the end.
import WebSocket from 'ws';
import { check, finish, run } from './check.mjs';

const [base, key, model, ...cases] = process.argv.slice(2);
const url = `${base}/v1/responses`;
const headers = { Authorization: `Bearer ${key}`, 'OpenAI-Beta': 'responses_websockets=2026-02-06' };

function open(k = key) {
	const ws = new WebSocket(url, { headers: { ...headers, Authorization: `Bearer ${k}` } });
	ws.events = [];
	ws.closed = new Promise((r) => ws.on('close', (code) => r(code)));
	ws.on('error', (e) => { ws.failure = e.message; });
	ws.on('message', (d) => {
		try {
			ws.events.push(JSON.parse(d.toString()));
		} catch {
			ws.events.push({ type: 'not-json', bytes: d.length });
		}
	});
	return new Promise((resolve, reject) => {
		ws.on('open', () => resolve(ws));
		ws.on('unexpected-response', (req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode })));
		ws.on('error', reject);
	});
}

const create = (input, extra = {}) => JSON.stringify({ type: 'response.create', model, input, ...extra });

// The next event of a type in TYPES after index FROM, or null at close.
function next(ws, types, from = 0) {
	return new Promise((resolve) => {
		const look = () => ws.events.slice(from).find((e) => types.includes(e.type));
		const t = setInterval(() => {
			const e = look();
			if (e || ws.readyState >= WebSocket.CLOSING) {
				clearInterval(t);
				resolve(e ?? null);
			}
		}, 5);
	});
}

async function turnOn(ws, frame) {
	const from = ws.events.length;
	ws.send(frame);
	const e = await next(ws, ['response.completed', 'error'], from);
	if (e?.type === 'response.completed')
		console.log(`usage ${JSON.stringify(e.response.usage)}`);
	return e;
}

const CASES = {
	async auth() {
		const e = await open('sk-not-the-key').then(() => null, (err) => err);
		check('a wrong key: the upgrade refused with 401', e?.status === 401, e?.message ?? 'opened');
	},
	async fragmented() {
		const ws = await open();
		const text = create('fragmented turn [[out=7]]');
		const from = ws.events.length;
		const third = Math.floor(text.length / 3);
		ws.send(text.slice(0, third), { fin: false });
		ws.ping();
		ws.send(text.slice(third, 2 * third), { fin: false });
		ws.send(text.slice(2 * third), { fin: true });
		const e = await next(ws, ['response.completed', 'error'], from);
		if (e?.type === 'response.completed')
			console.log(`usage ${JSON.stringify(e.response.usage)}`);
		check('fragmented: the turn completed', e?.type === 'response.completed' && e.response.usage.output_tokens === 7,
			JSON.stringify(e));
		ws.close();
	},
	async chained() {
		const ws = await open();
		const e = await turnOn(ws, create('chained to nothing', { previous_response_id: 'resp_unknown' }));
		check('chained: an unknown previous_response_id answered by an error event',
			e?.type === 'error' && e.error?.code === 'previous_response_not_found', JSON.stringify(e));
		const ok = await turnOn(ws, create('after the error [[out=5]]'));
		check('chained: the socket stayed open and the next turn completed', ok?.type === 'response.completed');
		const again = await turnOn(ws, create('chained [[out=3]]', { previous_response_id: ok?.response?.id }));
		check('chained: a turn chained to it is read from the cache',
			again?.response?.usage?.input_tokens_details?.cached_tokens === ok?.response?.usage?.total_tokens);
		ws.close();
	},
	async oversized(n) {
		const ws = await open();
		ws.send(create('x'.repeat(Number(n))));
		const code = await ws.closed;
		// 1009 from an endpoint that says why; a relay may fail the
		// connection without a close frame (1006), RFC 6455 7.1.7
		check(`oversized: a ${n}-byte frame ends the session (1009, or dropped: 1006)`,
			code === 1009 || code === 1006, `closed with ${code}`);
	},
	async masked() {
		const ws = await open();
		const e = await turnOn(ws, create('answer with a masked frame [[masked]]', { max_output_tokens: 40 }));
		const code = await ws.closed;
		// ws fails the connection itself (1002 sent, 1006 seen); a relay
		// that refused the frame closes with its own code.
		check('masked: the connection failed on a masked server frame, no usage',
			e?.type !== 'response.completed' && code !== 1000 && code !== 1005, `closed with ${code}, ${ws.failure}`);
	},
	async cut() {
		const ws = await open();
		const e = await turnOn(ws, create('cut me off [[cut]]', { max_output_tokens: 40 }));
		const code = await ws.closed;
		check('cut: the socket closed mid-turn without usage', e?.type !== 'response.completed' && code !== 1000,
			`closed with ${code}`);
	},
	async drop() {
		const ws = await open();
		const from = ws.events.length;
		ws.send(create('I will leave [[slow=100]] [[out=40]]', { max_output_tokens: 40 }));
		const d = await next(ws, ['response.output_text.delta'], from);
		ws.terminate();
		check('drop: the client went away after the first delta', d !== null);
	},
	async subprotocol() {
		const ws = new WebSocket(`${base}/v1/realtime?model=gpt-realtime`,
			['realtime', `openai-insecure-api-key.${key}`, 'openai-beta.realtime-v1']);
		const first = await new Promise((resolve) => {
			ws.once('message', (d) => resolve(JSON.parse(d.toString())));
			ws.on('error', (e) => resolve({ type: `failed: ${e.message}` }));
		});
		check('subprotocol: the session opened, "realtime" chosen',
			first.type === 'session.created' && ws.protocol === 'realtime', `${first.type} ${ws.protocol}`);
		ws.close();
		await new Promise((r) => ws.once('close', r));
	},
	async budget(n) {
		const ws = await open();
		const a = await turnOn(ws, create('affordable [[out=5]]', { max_output_tokens: 16 }));
		check('budget: an affordable turn completed', a?.type === 'response.completed', JSON.stringify(a));
		const b = await turnOn(ws, create('refused-turn [[out=5]]', { max_output_tokens: Number(n) }));
		check(`budget: a turn that may cost more than the budget left got an error event`,
			b?.type === 'error' && typeof b.error?.message === 'string', JSON.stringify(b));
		console.log(`refusal ${JSON.stringify(b)}`);
		const c = await turnOn(ws, create('affordable again [[out=4]]', { max_output_tokens: 16 }));
		check('budget: the socket stayed open and the next affordable turn completed',
			c?.type === 'response.completed' && ws.readyState === WebSocket.OPEN, JSON.stringify(c));
		ws.close();
	},
};

for (const c of cases) {
	const [name, arg] = c.split(':');
	await run(name, () => CASES[name](arg));
}
finish();
