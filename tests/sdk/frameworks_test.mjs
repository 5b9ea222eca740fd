// frameworks_test.mjs BASE KEYPREFIX: the Vercel AI SDK (ai + @ai-sdk/openai
// + @ai-sdk/anthropic) and LangChain JS (@langchain/openai,
// @langchain/anthropic) through kilovolt at BASE (http://HOST:PORT), with the
// base URLs the README gives: .../v1 for @ai-sdk/* and LangChain's OpenAI,
// the bare origin for LangChain's Anthropic (it wraps @anthropic-ai/sdk).
// Chat, streams and embeddings. Each family uses its own key
// KEYPREFIX-<family>; every call prints "usage FAMILY MODEL IN OUT" with the
// SDK's OWN usage figures, which t_frameworks.sh compares with the ledger.
import { generateText, streamText, embed } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { ChatAnthropic } from '@langchain/anthropic';

import { check, finish, run } from './check.mjs';

const [base, prefix] = process.argv.slice(2);
if (!base || !prefix) {
	console.error('usage: node frameworks_test.mjs BASE KEYPREFIX');
	process.exit(2);
}
const origin = base.replace(/\/+$/, '');
const v1 = origin + '/v1';
const prompt = 'Say hello.';

function usage(family, model, input, output) {
	console.log(`usage ${family} ${model} ${input} ${output}`);
}
function counts(name, input, output) {
	check(`${name}: the SDK reports usage`, Number.isInteger(input) && input > 0 &&
	    Number.isInteger(output) && output >= 0, `${input}/${output}`);
}

const aiOpenAI = createOpenAI({ baseURL: v1, apiKey: `${prefix}-ai-openai` });
const aiAnthropic = createAnthropic({ baseURL: v1, apiKey: `${prefix}-ai-anthropic` });

await run('ai chat', async () => {
	const r = await generateText({ model: aiOpenAI.chat('gpt-4o-mini'), prompt,
	    maxOutputTokens: 50, maxRetries: 0 });
	check('ai chat: text', r.text.length > 0);
	counts('ai chat', r.usage.inputTokens, r.usage.outputTokens);
	usage('ai-openai', 'gpt-4o-mini', r.usage.inputTokens, r.usage.outputTokens);
});
await run('ai chat stream', async () => {
	const s = streamText({ model: aiOpenAI.chat('gpt-4o-mini'), prompt, maxOutputTokens: 50,
	    maxRetries: 0 });
	let text = '';
	for await (const t of s.textStream)
		text += t;
	const u = await s.usage;
	check('ai chat stream: text', text.length > 0);
	counts('ai chat stream', u.inputTokens, u.outputTokens);
	usage('ai-openai', 'gpt-4o-mini', u.inputTokens, u.outputTokens);
});
await run('ai responses stream', async () => {
	const s = streamText({ model: aiOpenAI.responses('gpt-4o-mini'), prompt, maxOutputTokens: 50,
	    maxRetries: 0 });
	let text = '';
	for await (const t of s.textStream)
		text += t;
	const u = await s.usage;
	check('ai responses stream: text', text.length > 0);
	counts('ai responses stream', u.inputTokens, u.outputTokens);
	usage('ai-openai', 'gpt-4o-mini', u.inputTokens, u.outputTokens);
});
await run('ai embed', async () => {
	const r = await embed({ model: aiOpenAI.embedding('text-embedding-3-small'),
	    value: 'kilovolt counts this', maxRetries: 0 });
	check('ai embed: a vector', r.embedding.length > 0);
	counts('ai embed', r.usage.tokens, 0);
	usage('ai-openai', 'text-embedding-3-small', r.usage.tokens, 0);
});
await run('ai anthropic', async () => {
	const r = await generateText({ model: aiAnthropic('claude-sonnet-4'), prompt,
	    maxOutputTokens: 50, maxRetries: 0 });
	check('ai anthropic: text', r.text.length > 0);
	counts('ai anthropic', r.usage.inputTokens, r.usage.outputTokens);
	usage('ai-anthropic', 'claude-sonnet-4', r.usage.inputTokens, r.usage.outputTokens);
});
await run('ai anthropic stream', async () => {
	const s = streamText({ model: aiAnthropic('claude-sonnet-4'), prompt, maxOutputTokens: 50,
	    maxRetries: 0 });
	let text = '';
	for await (const t of s.textStream)
		text += t;
	const u = await s.usage;
	check('ai anthropic stream: text', text.length > 0);
	counts('ai anthropic stream', u.inputTokens, u.outputTokens);
	usage('ai-anthropic', 'claude-sonnet-4', u.inputTokens, u.outputTokens);
});

const lcOpenAI = new ChatOpenAI({ model: 'gpt-4o-mini', apiKey: `${prefix}-lc-openai`,
    configuration: { baseURL: v1 }, maxTokens: 50, maxRetries: 0 });
const lcAnthropic = new ChatAnthropic({ model: 'claude-sonnet-4', apiKey: `${prefix}-lc-anthropic`,
    anthropicApiUrl: origin, maxTokens: 50, maxRetries: 0 });

async function lcStream(model) {
	let agg;
	for await (const chunk of await model.stream(prompt))
		agg = agg === undefined ? chunk : agg.concat(chunk);
	return agg;
}
await run('langchain openai', async () => {
	const m = await lcOpenAI.invoke(prompt);
	const u = m.usage_metadata ?? {};
	check('langchain openai: content', String(m.content).length > 0);
	counts('langchain openai', u.input_tokens, u.output_tokens);
	usage('lc-openai', 'gpt-4o-mini', u.input_tokens, u.output_tokens);
});
await run('langchain openai stream', async () => {
	const m = await lcStream(lcOpenAI);
	const u = m.usage_metadata ?? {};
	check('langchain openai stream: content', String(m.content).length > 0);
	counts('langchain openai stream', u.input_tokens, u.output_tokens);
	usage('lc-openai', 'gpt-4o-mini', u.input_tokens, u.output_tokens);
});
await run('langchain openai embeddings', async () => {
	const e = new OpenAIEmbeddings({ model: 'text-embedding-3-small',
	    apiKey: `${prefix}-lc-embed`, configuration: { baseURL: v1 }, maxRetries: 0 });
	const v = await e.embedQuery('kilovolt counts this');
	// LangChain does not hand the usage to its caller: the test reads the
	// provider's figure from the mock for this key.
	check('langchain embeddings: a vector', Array.isArray(v) && v.length > 0);
});
await run('langchain anthropic', async () => {
	const m = await lcAnthropic.invoke(prompt);
	const u = m.usage_metadata ?? {};
	check('langchain anthropic: content', String(m.content).length > 0);
	counts('langchain anthropic', u.input_tokens, u.output_tokens);
	usage('lc-anthropic', 'claude-sonnet-4', u.input_tokens, u.output_tokens);
});
// Its own key: LangChain's aggregated stream usage adds message_start's
// output_tokens (1) to message_delta's final cumulative count, which is
// what Anthropic bills (and kilovolt charges); t_frameworks.sh says so.
const lcAnthropicStream = new ChatAnthropic({ model: 'claude-sonnet-4',
    apiKey: `${prefix}-lc-anthropic-stream`, anthropicApiUrl: origin, maxTokens: 50, maxRetries: 0 });
await run('langchain anthropic stream', async () => {
	const m = await lcStream(lcAnthropicStream);
	const u = m.usage_metadata ?? {};
	check('langchain anthropic stream: content', String(m.content).length > 0);
	counts('langchain anthropic stream', u.input_tokens, u.output_tokens);
	usage('lc-anthropic-stream', 'claude-sonnet-4', u.input_tokens, u.output_tokens);
});
finish();
