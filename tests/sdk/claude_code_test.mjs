// claude_code_test.mjs: Claude Code (@anthropic-ai/claude-code, its native
// binary) in its Bedrock mode against BASEURL (kilovolt, or the Bedrock
// stand-in directly), one non-interactive prompt:
//
//   node claude_code_test.mjs BASEURL KEY HOME [PROMPT] [--skip-bedrock-auth | --vertex]
//
// Its environment is only what Bedrock mode needs (nothing of ours leaks
// in, no AWS credentials):
//   CLAUDE_CODE_USE_BEDROCK=1           Bedrock mode
//   ANTHROPIC_BEDROCK_BASE_URL=BASEURL  the runtime (and control plane) URL
//   AWS_BEARER_TOKEN_BEDROCK=KEY        sent as "Authorization: Bearer KEY"
//   AWS_REGION=us-east-1
//   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, DISABLE_AUTOUPDATER=1
//   CLAUDE_CODE_MAX_RETRIES=0, API_TIMEOUT_MS=60000: an error shows at once
//   ANTHROPIC_MODEL, ANTHROPIC_SMALL_FAST_MODEL: the model (KV_BEDROCK_MODEL,
//     default us.anthropic.claude-sonnet-4-5-20250929-v1:0), so its price is known
// and HOME (a fresh directory). With --skip-bedrock-auth, the other way:
//   CLAUDE_CODE_SKIP_BEDROCK_AUTH=1 ANTHROPIC_AUTH_TOKEN=KEY
// (then it sends the control-plane read without credentials, and the
// inference with "Authorization: Bearer KEY"). With --vertex, its Vertex AI
// mode instead (issue 38), KEY sent as "Authorization: Bearer KEY":
//   CLAUDE_CODE_USE_VERTEX=1 ANTHROPIC_VERTEX_BASE_URL=BASEURL/v1
//   CLAUDE_CODE_SKIP_VERTEX_AUTH=1 ANTHROPIC_AUTH_TOKEN=KEY
//   ANTHROPIC_VERTEX_PROJECT_ID=kv-client-project CLOUD_ML_REGION=us-east5
//   the model KV_VERTEX_MODEL, default claude-sonnet-4-5@20250929. It runs `claude -p PROMPT --output-format
// json`; Claude Code first lists the inference profiles, probes models with
// max_tokens 1 and then streams the answer from invoke-with-response-stream.
// Prints "ok"/"FAIL" lines, one "usage {json}" line with the usage Claude
// Code reports (summed over its modelUsage), "N passed, N failed".
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { check, finish } from './check.mjs';

const args = process.argv.slice(2);
const skipAuth = args.includes('--skip-bedrock-auth'), vertex = args.includes('--vertex');
const [base, key, home, prompt = 'Greet the kilovolt test. [[out=9]]'] = args.filter((a) => !a.startsWith('--'));
if (!base || !key || !home) {
	console.error('usage: node claude_code_test.mjs BASEURL KEY HOME [PROMPT] [--skip-bedrock-auth | --vertex]');
	process.exit(2);
}
const MODEL = vertex ? process.env.KV_VERTEX_MODEL ?? 'claude-sonnet-4-5@20250929' :
	process.env.KV_BEDROCK_MODEL ?? 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';

// The native binary of this platform's package, else the package's launcher.
function claude() {
	const require = createRequire(import.meta.url);
	try {
		const dir = dirname(require.resolve(`@anthropic-ai/claude-code-${process.platform}-${process.arch}/package.json`));
		if (existsSync(join(dir, 'claude')))
			return [join(dir, 'claude')];
	} catch { /* not installed for this platform: the launcher finds one */ }
	return [process.execPath, require.resolve('@anthropic-ai/claude-code/cli-wrapper.cjs')];
}

mkdirSync(home, { recursive: true });
const env = {
	PATH: process.env.PATH, HOME: home, TMPDIR: home,
	...(vertex ? { CLAUDE_CODE_USE_VERTEX: '1', ANTHROPIC_VERTEX_BASE_URL: `${base}/v1`,
		CLAUDE_CODE_SKIP_VERTEX_AUTH: '1', ANTHROPIC_AUTH_TOKEN: key,
		ANTHROPIC_VERTEX_PROJECT_ID: 'kv-client-project', CLOUD_ML_REGION: 'us-east5' } :
		{ CLAUDE_CODE_USE_BEDROCK: '1', ANTHROPIC_BEDROCK_BASE_URL: base, AWS_REGION: 'us-east-1',
			...(skipAuth ? { CLAUDE_CODE_SKIP_BEDROCK_AUTH: '1', ANTHROPIC_AUTH_TOKEN: key } :
				{ AWS_BEARER_TOKEN_BEDROCK: key }) }),
	CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1',
	ANTHROPIC_MODEL: MODEL, ANTHROPIC_SMALL_FAST_MODEL: MODEL,
	CLAUDE_CODE_MAX_RETRIES: '0', API_TIMEOUT_MS: '60000',
};
const [cmd, ...pre] = claude();
const r = spawnSync(cmd, [...pre, '-p', prompt, '--output-format', 'json'],
	{ env, cwd: home, encoding: 'utf8', timeout: 180000, stdio: ['ignore', 'pipe', 'pipe'] });
check('claude -p exits 0', r.status === 0, `status ${r.status} ${r.error ?? ''} ${r.stderr?.slice(0, 2000)}`);
let out;
try {
	out = JSON.parse(r.stdout);
} catch {
	out = undefined;
}
check('claude -p printed its JSON result', out?.type === 'result', (r.stdout ?? '').slice(0, 2000));
check('the result is a success with text', out?.subtype === 'success' && !out.is_error && out.result?.length > 0,
	JSON.stringify(out)?.slice(0, 2000));
const u = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
for (const m of Object.values(out?.modelUsage ?? {})) {
	u.input += m.inputTokens;
	u.output += m.outputTokens;
	u.cacheRead += m.cacheReadInputTokens;
	u.cacheWrite += m.cacheCreationInputTokens;
}
check('Claude Code reports usage', u.input + u.cacheRead + u.cacheWrite > 0 && u.output > 0, JSON.stringify(out?.modelUsage));
console.log(`usage ${JSON.stringify({ call: 'claude-code', ...u, models: Object.keys(out?.modelUsage ?? {}),
	costUSD: out?.total_cost_usd })}`);
finish();
