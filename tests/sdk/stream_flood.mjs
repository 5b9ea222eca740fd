// A load of concurrent streaming chat completions for
// tests/t_cluster_scale.sh: every request sent at once, each with its own
// bearer token to its own kilovolt host, its SSE read to the end.
// A 503 (a host waiting for its lease: retry-after 1) is sent again after
// a second, up to 5 times, as the OpenAI SDKs do.
// usage: node stream_flood.mjs PLAN TIMEOUT_S, PLAN a file of
// "PORT<TAB>TOKEN<TAB>BODY" lines; stdout: one line a request, in PLAN's
// order: "STATUS<TAB>NODE<TAB>DONE", NODE the x-kilovolt-budget-node
// header ("-" without), DONE 1 when a 200's stream ended with [DONE] and
// a usage chunk, else 0 (a refusal's body is not a stream: 0).
import { readFileSync } from 'node:fs';
import http from 'node:http';

const plan = readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean)
	.map((l) => l.split('\t'));
const timeoutMs = Number(process.argv[3]) * 1000;
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });

function one([port, token, body]) {
	return new Promise((resolve) => {
		const req = http.request({ host: '127.0.0.1', port: Number(port), method: 'POST',
			path: '/v1/chat/completions', agent, timeout: timeoutMs,
			headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json',
				'x-mock-tokens': '20', 'x-mock-delay-ms': '20' } }, (res) => {
			let text = '';
			res.setEncoding('utf8');
			res.on('data', (d) => { text += d; });
			res.on('end', () => {
				const done = res.statusCode === 200 && /data: \[DONE\]/.test(text) &&
					/"usage":\{/.test(text) ? 1 : 0;
				resolve(`${res.statusCode}\t${res.headers['x-kilovolt-budget-node'] ?? '-'}\t${done}`);
			});
			res.on('error', () => resolve(`${res.statusCode}\t-\t0`));
		});
		req.on('timeout', () => req.destroy(new Error('timeout')));
		req.on('error', (e) => resolve(`0\t${e.code ?? e.message}\t0`));
		req.end(body);
	});
}

async function retried(p) {
	let r;
	for (let i = 0; i < 6; i++) {
		r = await one(p);
		if (!r.startsWith('503\t'))
			break;
		await new Promise((ok) => setTimeout(ok, 1000));
	}
	return r;
}

const out = await Promise.all(plan.map(retried));
console.log(out.join('\n'));
