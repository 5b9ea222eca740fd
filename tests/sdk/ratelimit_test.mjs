// ratelimit_test.mjs BASEURL KEY: the official OpenAI Node SDK, with its
// default retries, against a kilovolt key that is out of requests: the
// gateway answers 429 with retry-after, the SDK waits and retries by
// itself, and the call succeeds. Prints one line per check.
import OpenAI from 'openai';

import { check, finish, run } from './check.mjs';

const [base, key] = process.argv.slice(2);
if (!base || !key) {
	console.error('usage: node ratelimit_test.mjs BASEURL KEY');
	process.exit(2);
}
const client = new OpenAI({
	baseURL: base.replace(/\/+$/, '').replace(/(\/v1)?$/, '/v1'),
	apiKey: key,
	maxRetries: 2,		// the SDK's default
	timeout: 30000,
});

await run('chat after a 429', async () => {
	const t0 = Date.now();
	const { data, response } = await client.chat.completions
	    .create({ model: 'gpt-4o-mini', max_tokens: 10,
		messages: [{ role: 'user', content: 'rate' }] }).withResponse();
	const waited = Date.now() - t0;
	check('chat: the call succeeds', (data.choices[0]?.message?.content ?? '').length > 0);
	check('chat: the SDK waited for retry-after (>= 900 ms)', waited >= 900, `${waited} ms`);
	check('chat: the answer carries x-ratelimit-limit-requests',
	    response.headers.get('x-ratelimit-limit-requests') === '6',
	    response.headers.get('x-ratelimit-limit-requests'));
});

finish();
