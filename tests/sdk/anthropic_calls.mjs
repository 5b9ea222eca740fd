// anthropic_calls.mjs: the Messages calls the Anthropic cloud clients' tests
// share (anthropic_bedrock_test.mjs, vertex_sdk_test.mjs): a raw stream and
// the stream helper, each checked and its usage printed with USAGE(call, u).
import { check } from './check.mjs';

// A raw stream of BODY: events in order, text deltas; its usage summed.
export async function rawStream(client, body, usage) {
	const stream = await client.messages.create({ ...body, stream: true });
	const types = [];
	let u = {}, text = '';
	for await (const ev of stream) {
		types.push(ev.type);
		if (ev.type === 'message_start')
			u = { ...ev.message.usage };
		if (ev.type === 'message_delta')
			u.output_tokens = ev.usage.output_tokens;
		if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta')
			text += ev.delta.text;
	}
	check('stream: message_start first, message_stop last',
		types[0] === 'message_start' && types.at(-1) === 'message_stop', types.join(','));
	check('stream: text deltas', text.length > 0);
	usage('stream', u);
}

// The stream helper on BODY: its final message.
export async function helperStream(client, body, usage) {
	const m = await client.messages.stream(body).finalMessage();
	check('stream helper: final text', m.content[0]?.text?.length > 0);
	check('stream helper: usage input/output', m.usage?.input_tokens > 0 && m.usage?.output_tokens > 0,
		JSON.stringify(m.usage));
	usage('stream-helper', m.usage);
}
