// standin_auth.mjs: how the Bedrock stand-in (bedrock_standin.mjs) decides
// whether a request is authenticated, as Bedrock does: a SigV4 signature
// recomputed from the request as received with AWS's own signer
// (@smithy/signature-v4) for credentials the stand-in knows (static ones and
// those its IMDS and STS played out), or a Bedrock API key as a bearer token.
// Answers { ok, who } or { ok: false, status, type, message } in Bedrock's
// error vocabulary.
import { createHash } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { Hash } from '@smithy/hash-node';

const Sha256 = Hash.bind(null, 'sha256');
const SIG_MISMATCH = 'The request signature we calculated does not match the signature you provided. ' +
	'Check your AWS Secret Access Key and signing method. Consult the service documentation for details.';
const SKEW_MS = 5 * 60 * 1000;

const deny = (status, type, message) => ({ ok: false, status, type, message });

// Authorization: AWS4-HMAC-SHA256 Credential=AK/DAY/REGION/SERVICE/aws4_request,
// SignedHeaders=a;b, Signature=hex -> its parts, or null.
export function parseSigV4(auth) {
	const m = /^AWS4-HMAC-SHA256\s+Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]{64})\s*$/
		.exec(auth ?? '');
	if (!m)
		return null;
	const scope = m[1].split('/');
	if (scope.length !== 5 || scope[4] !== 'aws4_request')
		return null;
	const [accessKeyId, day, region, service] = scope;
	return { accessKeyId, day, region, service, signedHeaders: m[2].split(';'), signature: m[3] };
}

// "20261207T193000Z" -> Date, or null.
function amzDate(s) {
	const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s ?? '');
	return m ? new Date(Date.UTC(+m[1], m[2] - 1, +m[3], +m[4], +m[5], +m[6])) : null;
}

// The query as the signer wants it: decoded names to a value or a list.
function queryOf(raw) {
	const q = {};
	for (const part of raw ? raw.split('&') : []) {
		if (part === '')
			continue;
		const eq = part.indexOf('=');
		const k = decodeURIComponent(eq < 0 ? part : part.slice(0, eq));
		const v = eq < 0 ? '' : decodeURIComponent(part.slice(eq + 1));
		q[k] = k in q ? [].concat(q[k], v) : v;
	}
	return q;
}

// The signature the request must carry, recomputed by AWS's signer from what
// was received: the raw target, the headers the client listed, the body.
async function expectedSignature(req, body, sig, cred, region) {
	const [path, rawQuery] = splitTarget(req.url);
	const headers = {};
	for (const name of sig.signedHeaders) {
		if (name === 'x-amz-date' || name === 'x-amz-security-token')
			continue;	// the signer writes these two itself
		if (req.headers[name] !== undefined)
			headers[name] = String(req.headers[name]);
	}
	const signer = new SignatureV4({
		credentials: { accessKeyId: cred.accessKeyId, secretAccessKey: cred.secretAccessKey,
			sessionToken: cred.sessionToken },
		region, service: 'bedrock', sha256: Sha256, uriEscapePath: true,
		applyChecksum: sig.signedHeaders.includes('x-amz-content-sha256'),
	});
	const signed = await signer.sign({
		method: req.method, protocol: 'http:', hostname: '127.0.0.1', path,
		query: queryOf(rawQuery), headers, body,
	}, { signingDate: amzDate(req.headers['x-amz-date']), signableHeaders: new Set(sig.signedHeaders) });
	return parseSigV4(signed.headers.authorization);
}

export function splitTarget(url) {
	const q = url.indexOf('?');
	return q < 0 ? [url, ''] : [url.slice(0, q), url.slice(q + 1)];
}

// authenticate(req, body, opts): opts.region, opts.apiKeys (Set of accepted
// bearer keys), opts.credentials (Map access key id -> {secretAccessKey,
// sessionToken, expires (ms or undefined)}), opts.now().
export async function authenticate(req, body, opts) {
	const auth = req.headers.authorization;
	if (!auth)
		return deny(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
	if (/^Bearer\s/i.test(auth)) {
		const key = auth.replace(/^Bearer\s+/i, '');
		if (opts.apiKeys.has(key))
			return { ok: true, who: 'bearer' };
		return deny(403, 'UnrecognizedClientException', 'Invalid API Key format: Must start with pre-defined prefix');
	}
	const sig = parseSigV4(auth);
	if (!sig)
		return deny(403, 'IncompleteSignatureException', `Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters.`);
	const cred = opts.credentials.get(sig.accessKeyId);
	if (!cred)
		return deny(403, 'UnrecognizedClientException', 'The security token included in the request is invalid.');
	if (cred.expires !== undefined && opts.now() >= cred.expires)
		return deny(403, 'ExpiredTokenException', 'The security token included in the request is expired');
	const date = amzDate(req.headers['x-amz-date']);
	if (!date)
		return deny(403, 'IncompleteSignatureException', 'Authorization header requires existence of either a \'X-Amz-Date\' or a \'Date\' header.');
	if (Math.abs(opts.now() - date.getTime()) > SKEW_MS)
		return deny(403, 'InvalidSignatureException', 'Signature expired: the request time is more than 5 minutes from the server time.');
	if (sig.region !== opts.region || sig.service !== 'bedrock')
		return deny(403, 'InvalidSignatureException', `Credential should be scoped to a valid region and service 'bedrock'.`);
	const declared = req.headers['x-amz-content-sha256'];
	if (declared !== undefined && declared !== createHash('sha256').update(body).digest('hex'))
		return deny(400, 'XAmzContentSHA256Mismatch', 'The provided \'x-amz-content-sha256\' header does not match what was computed.');
	const want = await expectedSignature(req, body, sig, { accessKeyId: sig.accessKeyId, ...cred }, opts.region);
	if (!want || want.signature !== sig.signature || want.signedHeaders.join(';') !== sig.signedHeaders.join(';'))
		return deny(403, 'InvalidSignatureException', SIG_MISMATCH);
	return { ok: true, who: `sigv4:${sig.accessKeyId}` };
}
