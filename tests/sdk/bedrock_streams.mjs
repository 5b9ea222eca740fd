// Writes Bedrock response streams made by AWS's own codec
// (@smithy/eventstream-codec) and, beside each, the usage kilovolt must read
// from it, rendered from the inputs (not by decoding):
//   usage: node bedrock_streams.mjs DIR
// DIR/bedrock_invoke.bin     InvokeModelWithResponseStream of an Anthropic
//                            answer with cache reads and writes: chunk events
//                            (base64 Anthropic events, "p" padding), the last
//                            with amazon-bedrock-invocationMetrics
// DIR/bedrock_metrics.bin    the same, but the Anthropic events' counts differ
//                            from the invocation metrics (which must win)
// DIR/bedrock_converse.bin   ConverseStream: messageStart, text and toolUse
//                            deltas, messageStop, metadata with usage and
//                            cache reads and writes
// DIR/bedrock_exception.bin  an InvokeModel stream broken off by a
//                            modelStreamErrorException after its first events
// and DIR/NAME.txt for each: "usage INPUT OUTPUT CACHED WRITE FOUND FINAL
// TEXT_BYTES CUT" as tests/test_aws_stream_filter.c prints kv_usage (input
// with the cache's reads and writes added, as on Anthropic). The checked-in
// copies are tests/data/bedrock_*.{bin,txt}; tests/t_bedrock_stream.sh
// remakes them and compares, and serves them through kilovolt.
import { writeFileSync } from "node:fs";
import { EventStreamCodec } from "@smithy/eventstream-codec";
import { fromUtf8, toUtf8 } from "@smithy/util-utf8";

const codec = new EventStreamCodec(toUtf8, fromUtf8);
const dir = process.argv[2];
const pad = (i) => "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".slice(0, (7 * i) % 61 + 1);
// the bytes of a string value as the JSON carries it (escapes as written)
const textBytes = (s) => Buffer.byteLength(JSON.stringify(s)) - 2;

// one message as Bedrock frames it: KIND "event" (TYPE its :event-type) or
// "exception" (TYPE its :exception-type), a JSON payload
function message(kind, type, payload) {
  return codec.encode({
    headers: {
      [kind === "event" ? ":event-type" : ":exception-type"]: { type: "string", value: type },
      ":content-type": { type: "string", value: "application/json" },
      ":message-type": { type: "string", value: kind },
    },
    body: fromUtf8(JSON.stringify(payload)),
  });
}
const event = (type, payload) => message("event", type, payload);

function chunk(ev, i) {
  const bytes = Buffer.from(JSON.stringify(ev)).toString("base64");
  return event("chunk", i % 2 ? { p: pad(i), bytes } : { bytes, p: pad(i) });
}

const texts = ["Hello", " \"there\" / ünïcode ✓", "\n— the end 😀"];

// An Anthropic answer as Bedrock streams it; u: its counts.
function anthropicEvents(u, metrics) {
  const evs = [
    { type: "message_start", message: { id: "msg_bdrk_01", type: "message", role: "assistant",
      model: "claude-sonnet-4-5-20250929", content: [], stop_reason: null, stop_sequence: null,
      usage: { input_tokens: u.input, cache_creation_input_tokens: u.write,
        cache_read_input_tokens: u.read, output_tokens: 1 } } },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    ...texts.map((text) => ({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } })),
    { type: "content_block_stop", index: 0 },
    { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: u.output } },
    { type: "message_stop", "amazon-bedrock-invocationMetrics": { inputTokenCount: metrics.input,
      outputTokenCount: metrics.output, invocationLatency: 812, firstByteLatency: 301,
      cacheReadInputTokenCount: metrics.read, cacheWriteInputTokenCount: metrics.write } },
  ];
  return evs;
}

const anthropicText = texts.reduce((n, t) => n + textBytes(t), 0);
const line = (u, found, final, text, cut) =>
  `usage ${u.input + u.read + u.write} ${u.output} ${u.read} ${u.write} ${found} ${final} ${text} ${cut}\n`;

function write(name, frames, expect) {
  writeFileSync(`${dir}/${name}.bin`, Buffer.concat(frames.map((f) => Buffer.from(f))));
  writeFileSync(`${dir}/${name}.txt`, expect);
}

// InvokeModelWithResponseStream, the counts consistent
const inv = { input: 25, output: 42, read: 1200, write: 300 };
write("bedrock_invoke", anthropicEvents(inv, inv).map(chunk), line(inv, 1, 1, anthropicText, 0));

// the invocation metrics are AWS's bill: they replace the events' counts
const evc = { input: 20, output: 40, read: 1000, write: 200 };
const met = { input: 26, output: 43, read: 1201, write: 301 };
write("bedrock_metrics", anthropicEvents(evc, met).map(chunk), line(met, 1, 1, anthropicText, 0));

// ConverseStream
const cu = { input: 30, output: 17, read: 2048, write: 512 };
const toolArgs = ["{\"city\":", " \"Zürich\"}"];
const conv = [
  event("messageStart", { p: pad(1), role: "assistant" }),
  ...texts.map((text, i) => event("contentBlockDelta", { contentBlockIndex: 0, delta: { text }, p: pad(i + 2) })),
  event("contentBlockStop", { contentBlockIndex: 0, p: pad(5) }),
  event("contentBlockStart", { contentBlockIndex: 1, p: pad(6),
    start: { toolUse: { toolUseId: "tooluse_kv01", name: "get_weather" } } }),
  ...toolArgs.map((input, i) => event("contentBlockDelta", { contentBlockIndex: 1, delta: { toolUse: { input } }, p: pad(i + 7) })),
  event("contentBlockStop", { contentBlockIndex: 1, p: pad(9) }),
  event("messageStop", { p: pad(10), stopReason: "tool_use" }),
  event("metadata", { metrics: { latencyMs: 1234 }, p: pad(11),
    usage: { inputTokens: cu.input, outputTokens: cu.output, totalTokens: cu.input + cu.output + cu.read + cu.write,
      cacheReadInputTokens: cu.read, cacheWriteInputTokens: cu.write } }),
];
const convText = texts.reduce((n, t) => n + textBytes(t), 0) + toolArgs.reduce((n, t) => n + textBytes(t), 0);
write("bedrock_converse", conv, line(cu, 1, 1, convText, 0));

// broken off: message_start's exact input, the text so far, not final
const evs = anthropicEvents(inv, inv).slice(0, 3).map(chunk);
evs.push(message("exception", "modelStreamErrorException", { message: "The model stream broke off." }));
write("bedrock_exception", evs, line({ ...inv, output: 1 }, 1, 0, textBytes(texts[0]), 1));
