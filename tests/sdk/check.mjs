// check.mjs: the small harness the SDK tests share. One line per check,
// "N passed, N failed" at the end, exit 1 on any failure.
let passed = 0, failed = 0;

export function check(desc, ok, detail = '') {
	if (ok) {
		passed++;
		console.log(`ok - ${desc}`);
	} else {
		failed++;
		console.log(`FAIL - ${desc}${detail ? ': ' + detail : ''}`);
	}
}

// run NAME FN: an exception fails the check instead of ending the test.
export async function run(name, fn) {
	try {
		await fn();
	} catch (e) {
		check(`${name} threw no error`, false, `${e.constructor.name}: ${e.message}`);
	}
}

export function finish() {
	console.log(`${passed} passed, ${failed} failed`);
	process.exit(failed ? 1 : 0);
}
