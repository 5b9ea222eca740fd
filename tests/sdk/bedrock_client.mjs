// bedrock_client.mjs: what the Bedrock client scripts (aws_bedrock_test.mjs,
// anthropic_bedrock_test.mjs) share: their command line
// "BASEURL KEY [--sigv4 AK SK] [--refused]", the model they call (an
// inference profile id, KV_BEDROCK_MODEL to change it) and its ARN, the
// "usage {json}" line, and running the calls, each either served or, with
// --refused, refused with a 401 or 403.
import { check, run } from './check.mjs';

export function clientArgs(script) {
	const args = process.argv.slice(2);
	const [base, key] = args;
	if (!base || !key) {
		console.error(`usage: node ${script} BASEURL KEY [--sigv4 AK SK] [--refused]`);
		process.exit(2);
	}
	const sig = args.indexOf('--sigv4');
	const model = process.env.KV_BEDROCK_MODEL ?? 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
	return {
		base, key, refused: args.includes('--refused'),
		sigv4: sig >= 0 ? { accessKeyId: args[sig + 1], secretAccessKey: args[sig + 2] } : null,
		model, arn: `arn:aws:bedrock:us-east-1:123456789012:inference-profile/${model}`,
	};
}

// usage CALL {input, output, cacheRead, cacheWrite}: the line the tests sum.
export const usage = (call, u) => console.log(`usage ${JSON.stringify({ call, ...u })}`);

// runCalls([[name, fn]], refused, statusOf): each call run; with refused,
// each must throw an error whose statusOf(e) is 401 or 403.
export async function runCalls(calls, refused, statusOf) {
	for (const [name, fn] of calls) {
		if (!refused) {
			await run(name, fn);
			continue;
		}
		try {
			await fn();
			check(`${name}: refused`, false, 'it succeeded');
		} catch (e) {
			const status = statusOf(e);
			check(`${name}: refused with 401 or 403`, status === 401 || status === 403, `${status} ${e.name}: ${e.message}`);
			console.log(`refusal ${JSON.stringify({ call: name, status, name: e.name, message: e.message })}`);
		}
	}
}
