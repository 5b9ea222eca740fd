// realtime_vad.mjs: the server's automatic responses on the Realtime API
// (turn detection with create_response, no response.create on the wire)
// through a metering relay, driven with the `ws` package:
//
//   node realtime_vad.mjs BASE KEY [MODEL]
//
// A session.update turning server VAD on with no output bound is refused
// in-band (an error event; the socket stays open); one with
// max_output_tokens 20 is accepted (session.updated); 300 ms of audio then
// commit: the server answers by itself (response.created ... response.done)
// bounded at 20 output tokens; twice. Prints "usage {...}" per response.done
// and one ok/FAIL line per check.
import WebSocket from 'ws';
import { check, finish, run } from './check.mjs';

const [base, key, model = 'gpt-realtime'] = process.argv.slice(2);
const events = [];

function next(ws, types, from) {
	return new Promise((resolve) => {
		const t = setInterval(() => {
			const e = events.slice(from).find((x) => types.includes(x.type));
			if (e || ws.readyState >= WebSocket.CLOSING) {
				clearInterval(t);
				resolve(e ?? null);
			}
		}, 5);
	});
}

async function send(ws, ev, types) {
	const from = events.length;
	ws.send(JSON.stringify(ev));
	return next(ws, types, from);
}

const vad = (extra) => ({ type: 'session.update', session: { type: 'realtime', instructions: 'Talk. [[out=30]]',
	audio: { input: { turn_detection: { type: 'server_vad', create_response: true } } }, ...extra } });

await run('the session', async () => {
	const ws = new WebSocket(`${base}/v1/realtime?model=${model}`, { headers: { Authorization: `Bearer ${key}` } });
	ws.on('message', (d) => events.push(JSON.parse(d.toString())));
	await new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('error', reject); });
	await next(ws, ['session.created'], 0);
	const refused = await send(ws, vad({}), ['session.updated', 'error']);
	check('server VAD with no output bound refused in-band', refused?.type === 'error', JSON.stringify(refused));
	const ok = await send(ws, vad({ max_output_tokens: 20 }), ['session.updated', 'error']);
	check('server VAD with max_output_tokens 20 accepted', ok?.type === 'session.updated', JSON.stringify(ok));
	for (const round of [1, 2]) {
		ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: Buffer.alloc(300 * 48).toString('base64') }));
		const done = await send(ws, { type: 'input_audio_buffer.commit' }, ['response.done', 'error']);
		check(`round ${round}: the server's own response ended with usage, bounded at 20 output tokens`,
			done?.type === 'response.done' && done.response.usage?.output_tokens === 20, JSON.stringify(done));
		if (done?.response?.usage)
			console.log(`usage ${JSON.stringify(done.response.usage)}`);
	}
	ws.close();
});
finish();
