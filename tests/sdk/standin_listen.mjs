// standin_listen.mjs: how the stand-ins start listening: on 127.0.0.1 at
// PORT (0: the kernel's choice), the port printed ("port N") and written to
// PORT_FILE when given; SIGTERM ends the process (their logs are written
// line by line, synchronously, so nothing is lost).
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
