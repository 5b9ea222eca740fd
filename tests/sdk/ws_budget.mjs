// ws_budget.mjs: a Responses WebSocket session whose second turn is over
// its key's budget, through kilovolt (t_ws_relay.sh):
//
//   node ws_budget.mjs BASE KEY
//
// The first turn completes; the next two are answered in-band with an
// error event and the socket stays open. Prints "extensions [...]" (what
// the 101 agreed), "event TYPE [CODE]" per server event, "open true|false".
import WebSocket from 'ws';

const [base, key] = process.argv.slice(2);
const ws = new WebSocket(`${base}/v1/responses`, { headers: { Authorization: `Bearer ${key}` } });
const got = [];
ws.on('message', (d) => {
	const e = JSON.parse(d.toString());
	got.push(e);
	console.log(`event ${e.type}${e.error ? ' ' + e.error.code : ''}`);
});
const until = (type, n = 1) => new Promise((resolve) => {
	const t = setInterval(() => {
		if (got.filter((e) => e.type === type).length >= n) {
			clearInterval(t);
			resolve();
		}
	}, 10);
});
await new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('error', reject); });
console.log(`extensions [${ws.extensions}]`);
// gpt-5-codex's context window at its input price and 100 output tokens:
// $0.006 of the key's $0.01; the next turns may cost $0.015
ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-5-codex', max_output_tokens: 100,
	input: 'a [[out=5]]' }));
await until('response.completed');
ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-5-codex', max_output_tokens: 1000,
	input: 'b' }));
ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-5-codex', input: 'c' }));
await until('error', 2);
console.log(`open ${ws.readyState === WebSocket.OPEN}`);
ws.close(1000);
await new Promise((resolve) => ws.on('close', resolve));
