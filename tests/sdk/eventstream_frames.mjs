// Writes an AWS event stream made by AWS's own codec (@smithy/eventstream-codec)
// and, beside it, what decoding it must give, rendered from the inputs (not
// by decoding): usage: node eventstream_frames.mjs OUT.bin OUT.txt [SEED]
// The stream is what Bedrock's InvokeModelWithResponseStream sends for a
// short Anthropic answer (chunk events whose JSON payload carries the
// Anthropic event in base64, with Bedrock's "p" padding), then a message
// with one header of each of the ten value types, an empty message and an
// exception. tests/test_aws_eventstream.c decodes OUT.bin under every cut
// and compares with OUT.txt. The checked-in copies are
// tests/data/eventstream.{bin,txt}; rerun this to remake them. With SEED,
// 60 more messages follow, made at random from it (headers of random types,
// names and values, chunk events of random JSON, payloads up to 20 KB), for
// tests/t_eventstream.sh.
import { writeFileSync } from "node:fs";
import { EventStreamCodec, Int64 } from "@smithy/eventstream-codec";
import { fromUtf8, toUtf8 } from "@smithy/util-utf8";
import { rng } from "./rand.mjs";

const codec = new EventStreamCodec(toUtf8, fromUtf8);
const hex = (u8) => Buffer.from(u8).toString("hex");

const anthropicEvents = [
  { type: "message_start", message: { id: "msg_bdrk_01", type: "message", role: "assistant",
    model: "claude-sonnet-4-5-20250929", content: [], stop_reason: null,
    usage: { input_tokens: 25, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 } } },
  { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
  { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hello \"there\" / ünïcode ✓" } },
  { type: "content_block_stop", index: 0 },
  { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 12 } },
  { type: "message_stop", "amazon-bedrock-invocationMetrics": { inputTokenCount: 25, outputTokenCount: 12,
    invocationLatency: 612, firstByteLatency: 301, cacheReadInputTokenCount: 0, cacheWriteInputTokenCount: 0 } },
];

const messages = [];
anthropicEvents.forEach((ev, i) => {
  const inner = JSON.stringify(ev);
  // Bedrock pads with a "p" member of varying length; one chunk has "p" first
  const b64 = Buffer.from(inner).toString("base64");
  const p = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".slice(0, 7 * i + 1);
  const payload = i === 2 ? JSON.stringify({ p, bytes: b64 }) : JSON.stringify({ bytes: b64, p });
  messages.push({
    headers: {
      ":event-type": { type: "string", value: "chunk" },
      ":content-type": { type: "string", value: "application/json" },
      ":message-type": { type: "string", value: "event" },
    },
    body: fromUtf8(payload),
    inner,
  });
});
messages.push({
  headers: {
    "t": { type: "boolean", value: true },
    "f": { type: "boolean", value: false },
    "byte": { type: "byte", value: -5 },
    "short": { type: "short", value: -300 },
    "int": { type: "integer", value: 2147483647 },
    "long": { type: "long", value: Int64.fromNumber(-1234567890123) },
    "bin": { type: "binary", value: Uint8Array.from([0, 1, 254, 255]) },
    "str": { type: "string", value: "naïve" },
    "ts": { type: "timestamp", value: new Date(1765152000123) },
    "id": { type: "uuid", value: "0123abcd-4567-89ef-0123-456789abcdef" },
  },
  body: new Uint8Array(0),
});
messages.push({ headers: {}, body: new Uint8Array(0) });
messages.push({
  headers: {
    ":exception-type": { type: "string", value: "throttlingException" },
    ":content-type": { type: "string", value: "application/json" },
    ":message-type": { type: "string", value: "exception" },
  },
  body: fromUtf8(JSON.stringify({ message: "Too many requests, please wait before trying again." })),
});

const { int, pick } = rng(process.argv[4] ?? 0);
const text = (n) => Array.from({ length: n }, () => pick(Array.from("abcXYZ019 \"\\/{}:,éü€😀\n"))).join("");

function randomHeader() {
  switch (int(9)) {
  case 0: return { type: "boolean", value: int(2) === 1 };
  case 1: return { type: "byte", value: int(256) - 128 };
  case 2: return { type: "short", value: int(65536) - 32768 };
  case 3: return { type: "integer", value: int(4294967296) - 2147483648 };
  case 4: return { type: "long", value: Int64.fromNumber((int(2) ? -1 : 1) * int(2 ** 52)) };
  case 5: return { type: "binary", value: Uint8Array.from({ length: int(40) }, () => int(256)) };
  case 6: return { type: "string", value: text(int(30)) };
  case 7: return { type: "timestamp", value: new Date(int(4102444800000)) };
  default: return { type: "uuid", value: Array.from({ length: 32 }, () => "0123456789abcdef"[int(16)]).join("")
    .replace(/^(.{8})(.{4})(.{4})(.{4})/, "$1-$2-$3-$4-") };
  }
}

if (process.argv[4] !== undefined) {
  for (let m = 0; m < 60; m++) {
    if (int(2)) {
      const inner = JSON.stringify({ type: "content_block_delta", index: int(4),
        delta: { type: "text_delta", text: text(int(3000)) } });
      messages.push({
        headers: {
          ":event-type": { type: "string", value: "chunk" },
          ":content-type": { type: "string", value: "application/json" },
          ":message-type": { type: "string", value: "event" },
        },
        body: fromUtf8(JSON.stringify({ bytes: Buffer.from(inner).toString("base64"), p: text(int(40)) })),
        inner,
      });
      continue;
    }
    const headers = {};
    for (let n = int(8); n > 0; n--) headers[`h${int(1000)}-${text(int(6)).replace(/\n/g, "")}`] = randomHeader();
    messages.push({ headers, body: Uint8Array.from({ length: int(3) ? int(500) : int(20000) }, () => int(256)) });
  }
}

// value: how the C test prints a header's value
function value(h) {
  switch (h.type) {
  case "boolean": return `bool ${h.value ? 1 : 0}`;
  case "byte": return `byte ${h.value}`;
  case "short": return `short ${h.value}`;
  case "integer": return `int ${h.value}`;
  case "long": return `long ${h.value.valueOf()}`;
  case "binary": return `bytes ${hex(h.value)}`;
  case "string": return `string ${hex(fromUtf8(h.value))}`;
  case "timestamp": return `timestamp ${h.value.getTime()}`;
  case "uuid": return `uuid ${h.value.replace(/-/g, "")}`;
  }
  throw new Error(`type ${h.type}`);
}

const frames = [];
const lines = [];
for (const m of messages) {
  const frame = codec.encode({ headers: m.headers, body: m.body });
  // the codec must read back what it wrote
  const back = codec.decode(frame);
  if (hex(back.body) !== hex(m.body)) throw new Error("codec round trip");
  frames.push(frame);
  const headerBytes = codec.formatHeaders(m.headers).byteLength;
  lines.push(`message ${frame.byteLength} ${headerBytes} ${m.body.byteLength}`);
  for (const [name, h] of Object.entries(m.headers))
    lines.push(`header ${hex(fromUtf8(name))} ${value(h)}`);
  lines.push(`payload ${hex(m.body)}`);
  if (m.inner !== undefined) lines.push(`chunk ${hex(fromUtf8(m.inner))}`);
}
writeFileSync(process.argv[2], Buffer.concat(frames.map((f) => Buffer.from(f))));
writeFileSync(process.argv[3], lines.join("\n") + "\n");
