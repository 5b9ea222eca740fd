// realtime_vad_refused.mjs: the server's automatic response on the
// Realtime API when the key's budget refuses it, driven with `ws`:
//
//   node realtime_vad_refused.mjs BASE KEY [MODEL]
//
// server VAD with max_output_tokens 20 (accepted), 300 ms of audio, commit:
// the server starts a response by itself; the relay refuses it (an error
// event in-band, a response.cancel upstream) yet relays the server's
// response.done, whose usage the provider bills. Prints "usage {...}" for
// that response.done and one ok/FAIL line per check.
import WebSocket from 'ws';
import { check, finish, run } from './check.mjs';

const [base, key, model = 'gpt-realtime'] = process.argv.slice(2);
const events = [];

function next(ws, type, from) {
	return new Promise((resolve) => {
		const t = setInterval(() => {
			const e = events.slice(from).find((x) => x.type === type);
			if (e || ws.readyState >= WebSocket.CLOSING) {
				clearInterval(t);
				resolve(e ?? null);
			}
		}, 5);
	});
}

await run('the session', async () => {
	const ws = new WebSocket(`${base}/v1/realtime?model=${model}`, { headers: { Authorization: `Bearer ${key}` } });
	ws.on('message', (d) => events.push(JSON.parse(d.toString())));
	await new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('error', reject); });
	await next(ws, 'session.created', 0);
	ws.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', instructions: 'Talk. [[out=30]]',
		max_output_tokens: 20, audio: { input: { turn_detection: { type: 'server_vad', create_response: true } } } } }));
	const ok = await next(ws, 'session.updated', 0);
	check('server VAD with max_output_tokens 20 accepted', ok !== null, JSON.stringify(events.at(-1)));
	const from = events.length;
	ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: Buffer.alloc(300 * 48).toString('base64') }));
	ws.send(JSON.stringify({ type: 'input_audio_buffer.commit' }));
	const done = await next(ws, 'response.done', from);
	const err = events.slice(from).find((x) => x.type === 'error');
	check('the automatic response was refused in-band for its budget',
		err?.error?.code === 'insufficient_quota', JSON.stringify(err));
	check('the server\'s response.done came through with usage', (done?.response?.usage?.input_tokens ?? 0) > 0,
		JSON.stringify(done));
	if (done?.response?.usage)
		console.log(`usage ${JSON.stringify(done.response.usage)}`);
	ws.close();
});
finish();
