// azure_test.mjs: openai's AzureOpenAI client, unchanged, with kilovolt's
// listener as its Azure endpoint and a kilovolt key as its credential:
//
//   node azure_test.mjs KV_URL KEY api-key|bearer CHAT_DEPLOYMENT EMBED_DEPLOYMENT
//
// api-key: the key as the client's apiKey (sent in Azure's api-key
// header); bearer: the key from an azureADTokenProvider (sent as
// Authorization: Bearer). Calls chat, a streamed chat with include_usage,
// embeddings (the SDK's default base64) and Responses, each checked; prints
// "usage {"deployment", "prompt", "completion"}" per call, as the client
// reports it, for the test to price.
import { AzureOpenAI } from 'openai';
import { check, run, finish } from './check.mjs';

const [url, key, mode, chatDep, embedDep] = process.argv.slice(2);
const apiVersion = '2024-10-21';
const auth = mode === 'bearer' ? { azureADTokenProvider: async () => key } : { apiKey: key };
const client = new AzureOpenAI({ endpoint: url, apiVersion, ...auth, maxRetries: 0 });
const usage = (deployment, prompt, completion) =>
	console.log(`usage ${JSON.stringify({ deployment, prompt, completion })}`);
const messages = [{ role: 'user', content: `hello from the AzureOpenAI client (${mode})` }];

await run('chat', async () => {
	const r = await client.chat.completions.create({ model: chatDep, messages, max_tokens: 5 });
	check('chat: an answer with its usage', r.choices[0].message.content.startsWith('tok0') &&
		r.usage.completion_tokens === 5, JSON.stringify(r.usage));
	check('chat: Azure\'s content filter results came through', r.choices[0].content_filter_results?.hate?.filtered === false &&
		r.prompt_filter_results?.length === 1);
	usage(chatDep, r.usage.prompt_tokens, r.usage.completion_tokens);
});

await run('stream', async () => {
	const s = await client.chat.completions.create({ model: chatDep, messages, stream: true,
		stream_options: { include_usage: true } });
	let text = '', u = null, first = null;
	for await (const ch of s) {
		first ??= ch;
		text += ch.choices[0]?.delta?.content ?? '';
		if (ch.usage)
			u = ch.usage;
	}
	check('stream: Azure\'s first chunk (no choices, the prompt\'s filter results) came first',
		first?.choices?.length === 0 && first?.prompt_filter_results?.length === 1);
	check('stream: the text and the usage chunk', text.startsWith('tok0') && u?.completion_tokens === 7,
		JSON.stringify(u));
	if (u)
		usage(chatDep, u.prompt_tokens, u.completion_tokens);
});

await run('embeddings', async () => {
	const r = await client.embeddings.create({ model: embedDep, input: ['one', 'two'] });
	check('embeddings: two vectors decoded from base64', r.data.length === 2 &&
		Math.abs(r.data[1].embedding[1] + 0.5) < 1e-9, JSON.stringify(r.data[1]?.embedding));
	usage(embedDep, r.usage.prompt_tokens, 0);
});

await run('responses', async () => {
	const r = await client.responses.create({ model: chatDep, input: 'hello Responses', max_output_tokens: 6 });
	check('responses: the output text and usage', r.output_text.startsWith('tok0') &&
		r.usage.output_tokens === 6, JSON.stringify(r.usage));
	usage(chatDep, r.usage.input_tokens, r.usage.output_tokens);
});

finish();
