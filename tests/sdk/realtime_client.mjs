// realtime_client.mjs: @openai/agents-realtime's RealtimeSession over its
// WebSocket transport (the `ws` package, the key as a bearer header) runs
// a text-and-audio session of five turns against BASE (ws://host:port):
//
//   node realtime_client.mjs BASE KEY [MODEL]
//
// The turns, each started by response.create after the previous one's
// response.done: a text message answered in audio; 400 ms of pcm16 audio
// (appended, committed) answered in audio; a text message answered in
// text; 250 ms of audio answered in text with the response's own
// instructions; a text message answered in audio with max_output_tokens 6.
// Turn detection is off (the client asks for every response). Prints
// "usage {...}" (response.done's usage, as sent) per turn and one ok/FAIL
// line per check.
import { OpenAIRealtimeWebSocket, RealtimeAgent, RealtimeSession } from '@openai/agents-realtime';
import { check, finish, run } from './check.mjs';

const [base, key, model = 'gpt-realtime'] = process.argv.slice(2);
const pcm = (ms) => new Uint8Array(ms * 48).buffer;	// silence, pcm16 at 24 kHz

const agent = new RealtimeAgent({ name: 'kv', instructions: 'Answer briefly. [[out=16]]' });
const transport = new OpenAIRealtimeWebSocket({ url: `${base}/v1/realtime?model=${model}` });
const session = new RealtimeSession(agent, {
	transport, model,
	config: { outputModalities: ['audio'], audio: { input: { turnDetection: null } } },
});

const dones = [];
let audioBytes = 0, errors = 0;
transport.on('*', (ev) => {
	if (ev.type === 'response.done')
		dones.push(ev.response);
	if (ev.type === 'response.output_audio.delta')
		audioBytes += Buffer.from(ev.delta, 'base64').length;
	if (ev.type === 'error')
		errors++;
});

// Send with SEND(), resolve on the next response.done.
function turn(send) {
	const n = dones.length;
	return new Promise((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`turn ${n + 1}: no response.done in 30 s`)), 30000);
		const poll = setInterval(() => {
			if (dones.length > n) {
				clearTimeout(timer);
				clearInterval(poll);
				resolve(dones[n]);
			}
		}, 5);
		send();
	});
}

const text = (t, response) => () => {
	transport.sendMessage(t, {}, { triggerResponse: false });
	transport.requestResponse(response);
};
const audio = (ms, response) => () => {
	session.sendAudio(pcm(ms), { commit: true });
	transport.requestResponse(response);
};

await run('the session', async () => {
	await session.connect({ apiKey: key });
	check('connected over the WebSocket transport', transport.status === 'connected');
	const turns = [
		await turn(text('Hello there.')),
		await turn(audio(400)),
		await turn(text('And in text?', { output_modalities: ['text'] })),
		await turn(audio(250, { output_modalities: ['text'], instructions: 'Short. [[out=9]]' })),
		await turn(text('Last one.', { max_output_tokens: 6 })),
	];
	check('five turns, each ended by response.done with usage', turns.length === 5 && turns.every((r) => r.usage?.input_token_details));
	const spoken = turns.reduce((a, r) => a + (r.usage.output_token_details.audio_tokens ?? 0), 0);
	check('the audio received is 50 ms a spoken output token', audioBytes === spoken * 2400, `${audioBytes} vs ${spoken * 2400}`);
	check('the audio turns read audio input tokens', turns[1].usage.input_token_details.audio_tokens >= 4 &&
		turns[3].usage.input_token_details.audio_tokens >= turns[1].usage.input_token_details.audio_tokens + 3);
	check('the text turns answered in text only', turns[2].usage.output_token_details.audio_tokens === 0 &&
		turns[3].usage.output_token_details.audio_tokens === 0);
	check('max_output_tokens bounds the last turn', turns[4].usage.output_tokens === 6);
	check('a later turn reads the earlier ones from the cache, one with its own instructions does not',
		turns[2].usage.input_token_details.cached_tokens === turns[1].usage.input_tokens &&
		turns[3].usage.input_token_details.cached_tokens === 0);
	check('no error event', errors === 0);
	for (const r of turns)
		console.log(`usage ${JSON.stringify(r.usage)}`);
	session.close();
});
finish();
