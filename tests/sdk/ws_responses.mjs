// ws_responses.mjs: the OpenAI WebSocket stand-in's Responses API turns,
// the same events on a WebSocket (GET /v1/responses upgraded, one
// response.create per turn) and on an HTTP SSE stream (POST /v1/responses,
// the transport Codex falls back to), as OpenAI documents them:
// response.created, response.in_progress, the output items (a message's
// text deltas, or a function call), response.completed with usage.
//
// A turn answers a function call when its input has a user message with
// "[[run=CMD]]" and no function_call_output, and the request offers a shell
// tool (Codex's shell_command, exec_command or shell): the call runs CMD.
// Otherwise it answers text (ws_usage.mjs gives its length and usage).
// "generate": false (Codex's warm-up) answers no output, only the state.
import { randomBytes } from 'node:crypto';
import { answerWords, magicOf, responsesUsage } from './ws_usage.mjs';

const id = (p) => `${p}_${randomBytes(12).toString('hex')}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const SHELL_TOOLS = ['shell_command', 'exec_command', 'shell'];

// The error event OpenAI sends on the socket for a bad response.create.
export function wsError(status, type, code, message, param = null) {
	return { type: 'error', status, error: { type, code, message, param } };
}

function userTexts(input) {
	if (typeof input === 'string')
		return [input];
	return (Array.isArray(input) ? input : []).filter((it) => it.role === 'user').map((it) => JSON.stringify(it.content ?? ''));
}

// The function call a turn answers, or null.
function toolCall(body) {
	const input = Array.isArray(body.input) ? body.input : [];
	if (input.some((it) => it.type === 'function_call_output' || it.type === 'custom_tool_call_output'))
		return null;
	const cmd = userTexts(body.input).map((t) => /\[\[run=([^\]]+)\]\]/.exec(t)?.[1]).find(Boolean);
	const tool = (body.tools ?? []).find((t) => t.type === 'function' && SHELL_TOOLS.includes(t.name));
	if (!cmd || !tool)
		return null;
	const args = tool.name === 'shell' ? { command: ['bash', '-lc', cmd] } :
		tool.name === 'exec_command' ? { cmd } : { command: cmd };
	return { type: 'function_call', id: id('fc'), call_id: id('call'), name: tool.name,
		arguments: JSON.stringify(args), status: 'completed' };
}

function responseObject(rid, body, status, output, usage) {
	return {
		id: rid, object: 'response', created_at: Math.floor(Date.now() / 1000), status, model: body.model,
		output, usage, previous_response_id: body.previous_response_id ?? null, instructions: body.instructions ?? null,
		tools: body.tools ?? [], tool_choice: body.tool_choice ?? 'auto', parallel_tool_calls: body.parallel_tool_calls ?? true,
		max_output_tokens: body.max_output_tokens ?? null, reasoning: body.reasoning ?? null, store: body.store ?? true,
		text: { format: { type: 'text' } }, error: null, incomplete_details: null, metadata: body.metadata ?? {},
	};
}

// The output items' events; returns the finished items.
async function messageEvents(emit, words, slow) {
	const item = { id: id('msg'), type: 'message', status: 'in_progress', role: 'assistant', content: [] };
	const where = { item_id: item.id, output_index: 0, content_index: 0 };
	await emit({ type: 'response.output_item.added', output_index: 0, item });
	await emit({ type: 'response.content_part.added', ...where, part: { type: 'output_text', text: '', annotations: [] } });
	for (const w of words) {
		if (slow)
			await sleep(slow);
		await emit({ type: 'response.output_text.delta', ...where, delta: w, logprobs: [] });
	}
	const part = { type: 'output_text', text: words.join(''), annotations: [], logprobs: [] };
	await emit({ type: 'response.output_text.done', ...where, text: part.text, logprobs: [] });
	await emit({ type: 'response.content_part.done', ...where, part });
	const done = { ...item, status: 'completed', content: [part] };
	await emit({ type: 'response.output_item.done', output_index: 0, item: done });
	return [done];
}

async function callEvents(emit, call) {
	await emit({ type: 'response.output_item.added', output_index: 0, item: { ...call, arguments: '', status: 'in_progress' } });
	await emit({ type: 'response.function_call_arguments.delta', item_id: call.id, output_index: 0, delta: call.arguments });
	await emit({ type: 'response.function_call_arguments.done', item_id: call.id, output_index: 0, arguments: call.arguments });
	await emit({ type: 'response.output_item.done', output_index: 0, item: call });
	return [call];
}

// One turn: BODY the create body, PREV the chained response's usage (or
// null), SEND(event) puts an event on the wire (a promise), HOOKS.midTurn
// (magic) runs before the output's events, for [[cut]] and [[masked]],
// and returns true when the turn must stop there. Returns { id, usage,
// status }.
export async function runTurn(body, prev, send, hooks) {
	const rid = id('resp');
	const usage = responsesUsage(body, prev);
	const magic = magicOf(JSON.stringify(body.input ?? ''));
	let seq = 0;
	const emit = (ev) => send({ ...ev, sequence_number: seq++ });
	await emit({ type: 'response.created', response: responseObject(rid, body, 'in_progress', [], null) });
	await emit({ type: 'response.in_progress', response: responseObject(rid, body, 'in_progress', [], null) });
	let output = [];
	if (body.generate !== false) {
		const call = toolCall(body);
		const text = answerWords(usage.output_tokens - usage.output_tokens_details.reasoning_tokens);
		if (await hooks.midTurn(magic))
			return { id: rid, usage, status: 'stopped' };
		output = call ? await callEvents(emit, call) : await messageEvents(emit, text, magic.slow);
	}
	await emit({ type: 'response.completed', response: responseObject(rid, body, 'completed', output, usage) });
	return { id: rid, usage, status: 'completed', output };
}

// The checks OpenAI makes before a turn runs; an error event or null.
export function invalidCreate(ev, known) {
	if (typeof ev.model !== 'string' || !ev.model)
		return wsError(400, 'invalid_request_error', 'missing_required_parameter', "Missing required parameter: 'model'.", 'model');
	if (ev.background)
		return wsError(400, 'invalid_request_error', 'unsupported_parameter', 'background is not supported over WebSocket.', 'background');
	if (ev.previous_response_id && !known.has(ev.previous_response_id))
		return wsError(400, 'invalid_request_error', 'previous_response_not_found',
			`Previous response with id '${ev.previous_response_id}' not found.`, 'previous_response_id');
	return null;
}
