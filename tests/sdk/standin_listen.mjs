// standin_listen.mjs: how the stand-ins serve (recordingServer, below) and
// start listening: on 127.0.0.1 at PORT (0: the kernel's choice), the port
// printed ("port N") and written to PORT_FILE when given; SIGTERM ends the
// process (their logs are written line by line, synchronously, so nothing
// is lost).
import http from 'node:http';
import { writeFileSync } from 'node:fs';

export function listenOn(server, port, portFile) {
	server.listen(Number(port), '127.0.0.1', () => {
		const p = server.address().port;
		if (portFile)
			writeFileSync(portFile, `${p}\n`);
		console.log(`port ${p}`);
	});
	process.on('SIGTERM', () => process.exit(0));
}

// recordingServer(route, record, fail, extra): the HTTP server the
// provider stand-ins share. Each request's body is read whole, then
// ROUTE(req, res, raw, rec) answers it and returns its outcome; REC (time,
// method, target, headers, and EXTRA(raw)'s fields) gets the status and the
// outcome ('complete' or 'cut' unless ROUTE named one) and goes to
// RECORD(rec) once the response is closed. An exception is the outcome
// "error:MESSAGE": answered FAIL(res, message) before the head, else the
// connection is cut.
export function recordingServer(route, record, fail, extra = () => ({})) {
	const server = http.createServer((req, res) => {
		const chunks = [];
		req.on('data', (c) => chunks.push(c));
		req.on('end', async () => {
			const raw = Buffer.concat(chunks);
			const rec = { t: new Date().toISOString(), method: req.method, target: req.url,
				headers: req.headers, ...extra(raw) };
			res.on('close', () => {
				rec.status = res.statusCode;
				if (!rec.outcome)
					rec.outcome = res.writableFinished ? 'complete' : 'cut';
				record(rec);
			});
			try {
				rec.outcome = await route(req, res, raw, rec);
			} catch (e) {
				rec.outcome = `error:${e.message}`;
				if (!res.headersSent)
					fail(res, String(e.message));
				else
					res.socket?.destroy();
			}
		});
	});
	server.keepAliveTimeout = 65000;
	return server;
}
