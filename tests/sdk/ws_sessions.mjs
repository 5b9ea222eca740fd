// ws_sessions.mjs: many Responses WebSocket sessions at once, for
// bench/ws_sessions.sh (memory of idle and active sessions, latency a turn):
//
//   node ws_sessions.mjs BASE KEY MODEL idle N HOLD_S
//       N sessions, each opened and given one short turn, then all idle
//       HOLD_S seconds ("ready N" printed when all are idle, the shell
//       measures meanwhile; "wake" when they end), then one more turn
//       each; prints
//       "idle opened=N first=N last=N"
//   node ws_sessions.mjs BASE KEY MODEL active N SECONDS
//       N sessions each running slow turns back to back (an output token
//       every 20 ms) for SECONDS; "ready N" once all are streaming; prints
//       "active sessions=N turns=T errors=E"
//   node ws_sessions.mjs BASE KEY MODEL latency N DBASE DKEY
//       two sessions, one at BASE (kilovolt) and one at DBASE (the
//       provider direct), N one-token turns on each, alternately, after 20
//       unmeasured; prints "through n=N p50=MS p90=MS p99=MS max=MS" and
//       "direct ..." (send to response.completed)
// Exit 1 when a session failed to open or a turn did not complete.
import WebSocket from 'ws';

const [base, key, model, mode, a, b, c] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${key}`, 'OpenAI-Beta': 'responses_websockets=2026-02-06' };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function open(at = base, k = key) {
	return new Promise((resolve, reject) => {
		const ws = new WebSocket(`${at}/v1/responses`,
			{ headers: { ...headers, Authorization: `Bearer ${k}` }, perMessageDeflate: false });
		ws.on('open', () => resolve(ws));
		ws.on('error', reject);
		ws.on('unexpected-response', (req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
	});
}

// One turn on WS: resolves true on response.completed, false on an error
// event or a close.
function turn(ws, input, max = 64) {
	return new Promise((resolve) => {
		const done = (ok) => {
			ws.off('message', onMsg);
			ws.off('close', onClose);
			resolve(ok);
		};
		const onMsg = (d) => {
			const t = /"type":"([^"]+)"/.exec(d.toString().slice(0, 64))?.[1];
			if (t === 'response.completed')
				done(true);
			else if (t === 'error')
				done(false);
		};
		const onClose = () => done(false);
		ws.on('message', onMsg);
		ws.on('close', onClose);
		ws.send(JSON.stringify({ type: 'response.create', model, input, max_output_tokens: max, store: false }));
	});
}

// N sessions opened 50 at a time.
async function openMany(n) {
	const all = [];
	for (let i = 0; i < n; i += 50)
		all.push(...await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => open())));
	return all;
}

async function idle(n, hold) {
	const all = await openMany(n);
	const first = (await Promise.all(all.map((ws) => turn(ws, 'hello [[out=2]]')))).filter(Boolean).length;
	console.log(`ready ${all.length}`);
	await sleep(hold * 1000);
	console.log('wake');
	const last = (await Promise.all(all.map((ws) => turn(ws, 'again [[out=2]]')))).filter(Boolean).length;
	console.log(`idle opened=${all.length} first=${first} last=${last}`);
	all.forEach((ws) => ws.close());
	return first === n && last === n;
}

async function active(n, seconds) {
	const all = await openMany(n);
	const end = Date.now() + seconds * 1000;
	let turns = 0, errors = 0, started = 0;
	await Promise.all(all.map(async (ws) => {
		if (++started === n)
			console.log(`ready ${n}`);
		while (Date.now() < end) {
			if (await turn(ws, 'stream [[slow=20]] [[out=50]]'))
				turns++;
			else
				errors++;
		}
	}));
	console.log(`active sessions=${n} turns=${turns} errors=${errors}`);
	all.forEach((ws) => ws.close());
	return errors === 0 && turns >= n;
}

// One-token turns on two sockets, alternately: THROUGH (BASE, KEY) and
// DIRECT (DBASE, DKEY), so both see the same load; the first 20 of each
// unmeasured.
async function latency(n, dbase, dkey) {
	const through = await open();
	const direct = await open(dbase, dkey);
	const ms = { through: [], direct: [] };
	let bad = 0;
	const timed = async (ws) => {
		const t0 = process.hrtime.bigint();
		if (!await turn(ws, 'quick [[out=1]]', 1))
			bad++;
		return Number(process.hrtime.bigint() - t0) / 1e6;
	};
	for (let i = 0; i < n + 20; i++) {
		const [first, second] = i % 2 ? ['direct', 'through'] : ['through', 'direct'];
		const a = await timed(first === 'through' ? through : direct);
		const b = await timed(second === 'through' ? through : direct);
		if (i >= 20) {
			ms[first].push(a);
			ms[second].push(b);
		}
	}
	const q = (list, p) => list[Math.min(list.length - 1, Math.floor(p * list.length))];
	for (const k of ['direct', 'through']) {
		ms[k].sort((x, y) => x - y);
		console.log(`${k} n=${n} p50=${q(ms[k], 0.5).toFixed(3)} p90=${q(ms[k], 0.9).toFixed(3)} ` +
			`p99=${q(ms[k], 0.99).toFixed(3)} max=${ms[k].at(-1).toFixed(3)}`);
	}
	through.close();
	direct.close();
	return bad === 0;
}

const ok = mode === 'idle' ? await idle(Number(a), Number(b)) :
	mode === 'active' ? await active(Number(a), Number(b)) :
	mode === 'latency' ? await latency(Number(a), b, c) : false;
process.exit(ok ? 0 : 1);
