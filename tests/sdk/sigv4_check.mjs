// Signs generated requests with AWS's own SigV4 signer (@smithy/signature-v4,
// what the AWS SDK for JavaScript signs with) and with kilovolt's
// (common/sigv4.c, through the driver tests/sigv4_sign), and compares the
// X-Amz-Date and Authorization headers: usage:
//   node sigv4_check.mjs DRIVER COUNT SEED
// The requests mix what Bedrock traffic holds (model ids, inference-profile
// ARNs percent-encoded by the SDK, so escaped once more in the canonical URI,
// the control plane's query) with the edges of canonicalisation: dot and
// empty path segments, reserved and UTF-8 bytes in path and query, repeated
// and unsorted query parameters, header names in any case, blank runs in
// header values, headers AWS never signs, session tokens, x-amz-content-sha256
// on and off, dates from 1970 to 2099. Prints "ok - ..."/"FAIL - ..." lines
// and ends "N passed, N failed".
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { SignatureV4 } from "@smithy/signature-v4";
import { Hash } from "@smithy/hash-node";
import { rng } from "./rand.mjs";

const [driver, countArg, seedArg] = process.argv.slice(2);
const count = Number(countArg ?? 2000);
const { int, pick } = rng(seedArg ?? 1);
const hex = (s) => Buffer.from(s, "utf8").toString("hex");

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const PATH_CHARS = ALNUM + "-_.~!$&'()*+,;=:@";
const TEXT_CHARS = ALNUM + "-_.~!$'()*+,;:@/? =&%#\"ü€😀";
function str(chars, max, min = 0) {
  const a = Array.from(chars);
  let s = "";
  for (let n = min + int(max - min + 1); n > 0; n--) s += pick(a);
  return s;
}

const MODELS = [
  "anthropic.claude-3-5-sonnet-20240620-v1:0",
  "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
  "global.anthropic.claude-opus-4-1-20250805-v1:0",
  "amazon.nova-pro-v1:0",
];
const ARN = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0";

function segment() {
  switch (int(9)) {
  case 0: return pick(MODELS);                          // raw ':' in the path
  case 1: return encodeURIComponent(pick(MODELS));      // as the SDK sends it
  case 2: return encodeURIComponent(ARN);               // %3A and %2F escaped once more
  case 3: return pick([".", "..", ""]);
  case 4: return encodeURIComponent(str(TEXT_CHARS, 6, 1)); // UTF-8 and reserved, escaped
  case 5: return pick(["invoke", "invoke-with-response-stream", "converse", "converse-stream"]);
  case 6: return "%2f%3a" + str(ALNUM, 3);              // lowercase escapes
  default: return str(PATH_CHARS, 8, 1);
  }
}

function request() {
  const path = "/" + Array.from({ length: int(6) }, segment).join("/") + (int(4) === 0 ? "/" : "");
  // query: names may repeat; values encoded as a client would send them
  const pairs = [];
  for (let n = int(5); n > 0; n--) {
    const name = pairs.length && int(4) === 0 ? pick(pairs)[0] : pick(["type", "maxResults", "nextToken",
      "Param2", "Param1", "param1", "a", "b-c", "", str(TEXT_CHARS, 5, 1)]);
    const value = int(5) === 0 ? "" : pick(["SYSTEM_DEFINED", "10", str(TEXT_CHARS, 12)]);
    pairs.push([name, value]);
  }
  const wireQuery = pairs.map(([k, v]) => {
    // a client may leave some characters raw: both forms must sign alike
    const enc = int(2) ? encodeURIComponent : (s) => encodeURIComponent(s).replace(/%3A/g, ":").replace(/%40/g, "@");
    return `${enc(k)}=${enc(v)}`;
  }).join("&");
  const query = {};
  for (const [k, v] of pairs) {
    if (!(k in query)) query[k] = v;
    else if (Array.isArray(query[k])) query[k].push(v);
    else query[k] = [query[k], v];
  }
  const headers = {};
  const used = new Set();
  for (let n = int(6); n > 0; n--) {
    const name = pick(["Content-Type", "accept", "X-Amzn-Bedrock-Trace", "x-amzn-bedrock-guardrailidentifier",
      "X-Amzn-Bedrock-PerformanceConfig-Latency", "user-agent", "Connection", "proxy-authorization", "sec-fetch-mode",
      "x-amzn-trace-id", "X-Custom-" + str(ALNUM, 4, 1), "content-length", "anthropic-beta"]);
    if (used.has(name.toLowerCase())) continue;
    used.add(name.toLowerCase());
    headers[name] = pick(["application/json", " spaced   out\t value ", "a\t\tb", "", "  ",
      str(ALNUM + " \t,;=", 20)]);
  }
  const body = int(3) === 0 ? "" : JSON.stringify({ anthropic_version: "bedrock-2023-05-31", max_tokens: int(4096),
    messages: [{ role: "user", content: str(TEXT_CHARS, 40) }] });
  const creds = {
    accessKeyId: pick(["AKIA", "ASIA"]) + str("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16, 16),
    secretAccessKey: str(ALNUM + "+/", 40, 40),
  };
  if (int(2)) creds.sessionToken = str(ALNUM + "+/=", 400, 100);
  return {
    method: pick(["GET", "POST", "POST", "PUT", "DELETE", "HEAD"]),
    host: pick(["bedrock-runtime.us-east-1.amazonaws.com", "bedrock.eu-west-3.amazonaws.com",
      "127.0.0.1:8443", "bedrock-runtime-fips.us-gov-west-1.amazonaws.com"]),
    path, wireQuery, query, headers, body, creds,
    contentSha256: int(2) === 1,
    region: pick(["us-east-1", "eu-west-3", "ap-northeast-1", "us-gov-west-1"]),
    service: pick(["bedrock", "bedrock", "execute-api", "sts"]),
    time: int(2) === 0 ? 1440938160 + int(86400 * 3) : int(4102444800),
  };
}

async function awsSign(r) {
  const signer = new SignatureV4({
    credentials: r.creds, region: r.region, service: r.service,
    sha256: Hash.bind(null, "sha256"), applyChecksum: r.contentSha256,
  });
  const signed = await signer.sign({
    method: r.method, protocol: "https:", hostname: r.host.replace(/:.*/, ""), path: r.path,
    query: r.query, headers: { host: r.host, ...r.headers }, body: r.body,
  }, { signingDate: new Date(r.time * 1000) });
  return `${signed.headers["x-amz-date"]}\t${signed.headers.authorization}`;
}

function driverLine(r) {
  const target = r.path + (r.wireQuery ? "?" + r.wireQuery : "");
  const headers = Object.entries(r.headers).map(([k, v]) => `${hex(k)}=${hex(v)}`).join(",");
  const bodyHash = createHash("sha256").update(r.body).digest("hex");
  return [hex(r.method), hex(target), hex(r.host), headers, hex(bodyHash), hex(r.contentSha256 ? "1" : "0"),
    hex(r.creds.accessKeyId), hex(r.creds.secretAccessKey), hex(r.creds.sessionToken ?? ""),
    hex(r.region), hex(r.service), String(r.time)].join("\t");
}

const reqs = Array.from({ length: count }, request);
const run = spawnSync(driver, { input: reqs.map(driverLine).join("\n") + "\n", maxBuffer: 1 << 28 });
if (run.status !== 0) {
  console.log(`FAIL - the driver exits ${run.status}: ${run.stderr}`);
  console.log("0 passed, 1 failed");
  process.exit(1);
}
const got = run.stdout.toString().split("\n");
let passed = 0, failed = 0, arns = 0, tokens = 0;
for (let i = 0; i < reqs.length; i++) {
  const want = await awsSign(reqs[i]);
  if (got[i] === want) {
    passed++;
    if (reqs[i].path.includes("arn%3Aaws")) arns++;
    if (reqs[i].creds.sessionToken) tokens++;
  } else if (++failed <= 10) {
    console.log(`FAIL - request ${i}: ${reqs[i].method} ${reqs[i].path}?${reqs[i].wireQuery}\n  aws:       ${want}\n  kilovolt:  ${got[i]}`);
  }
}
if (failed === 0)
  console.log(`ok - ${passed} requests sign alike (${arns} with an encoded ARN, ${tokens} with a session token)`);
else
  console.log(`FAIL - ${failed} of ${reqs.length} requests sign differently`);
// the suite's closing line counts requests, not lines
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
