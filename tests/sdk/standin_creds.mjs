// standin_creds.mjs: where the Bedrock stand-in's temporary credentials come
// from, played as AWS plays them, for kilovolt's credential-chain tests:
// IMDSv2 (PUT /latest/api/token, then GET
// /latest/meta-data/iam/security-credentials/ and .../ROLE with the token)
// and STS AssumeRoleWithWebIdentity (POST / with the form, or GET with the
// query; the XML answer STS gives). Each answer vends fresh credentials that
// expire after `ttl` seconds; the stand-in's signature check accepts them
// until then.
import { randomBytes, randomUUID } from 'node:crypto';

export const ROLE = 'kv-standin-role';
const ROLE_ARN = `arn:aws:iam::123456789012:role/${ROLE}`;

// vend(store, ttl): new credentials remembered in the store (a Map).
function vend(store, ttl, now) {
	const accessKeyId = 'ASIA' + randomBytes(8).toString('hex').toUpperCase();
	const cred = { secretAccessKey: randomBytes(20).toString('base64'),
		sessionToken: 'IQoJb3JpZ2luX2VjE' + randomBytes(48).toString('base64'), expires: now + ttl * 1000 };
	store.set(accessKeyId, cred);
	return { accessKeyId, ...cred, expiration: new Date(cred.expires).toISOString().replace(/\.\d+Z$/, 'Z') };
}

function text(res, status, body, type = 'text/plain') {
	res.writeHead(status, { 'content-type': type });
	res.end(body);
}

// IMDSv2; answers true when the path was IMDS's.
export function imds(req, res, st) {
	const path = req.url.split('?')[0];
	if (!path.startsWith('/latest/'))
		return false;
	if (req.method === 'PUT' && path === '/latest/api/token') {
		const ttl = Number(req.headers['x-aws-ec2-metadata-token-ttl-seconds']);
		if (!(ttl >= 1 && ttl <= 21600))
			return text(res, 400, ''), true;
		const token = randomBytes(32).toString('base64');
		st.imdsTokens.add(token);
		res.writeHead(200, { 'content-type': 'text/plain', 'x-aws-ec2-metadata-token-ttl-seconds': String(ttl) });
		res.end(token);
		return true;
	}
	if (req.method !== 'GET')
		return text(res, 405, ''), true;
	if (!st.imdsTokens.has(req.headers['x-aws-ec2-metadata-token']))
		return text(res, 401, ''), true;
	const base = '/latest/meta-data/iam/security-credentials/';
	if (path === base)
		return text(res, 200, ROLE), true;
	if (path === base + ROLE) {
		const c = vend(st.credentials, st.credTtl, st.now());
		st.vended.push({ via: 'imds', accessKeyId: c.accessKeyId, expiration: c.expiration });
		text(res, 200, JSON.stringify({ Code: 'Success', LastUpdated: new Date(st.now()).toISOString().replace(/\.\d+Z$/, 'Z'),
			Type: 'AWS-HMAC', AccessKeyId: c.accessKeyId, SecretAccessKey: c.secretAccessKey,
			Token: c.sessionToken, Expiration: c.expiration }, null, 2), 'text/plain');
		return true;
	}
	return text(res, 404, ''), true;
}

function stsError(res, code, message) {
	text(res, 400, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error>
    <Type>Sender</Type>
    <Code>${code}</Code>
    <Message>${message}</Message>
  </Error>
  <RequestId>${randomUUID()}</RequestId>
</ErrorResponse>
`, 'text/xml');
}

// STS AssumeRoleWithWebIdentity; `form` is the request's parameters.
export function sts(res, form, st) {
	if (form.get('Action') !== 'AssumeRoleWithWebIdentity')
		return stsError(res, 'InvalidAction', `Could not find operation ${form.get('Action')} for version ${form.get('Version')}`);
	const token = form.get('WebIdentityToken'), session = form.get('RoleSessionName') ?? 'session';
	if (!token || (st.webIdentityToken && token !== st.webIdentityToken))
		return stsError(res, 'InvalidIdentityToken', 'Couldn\'t retrieve verification key from your identity provider,  please reference AssumeRoleWithWebIdentity documentation for requirements');
	if (form.get('RoleArn') !== ROLE_ARN && !st.anyRole)
		return stsError(res, 'AccessDenied', 'Not authorized to perform sts:AssumeRoleWithWebIdentity');
	const c = vend(st.credentials, st.credTtl, st.now());
	st.vended.push({ via: 'sts', accessKeyId: c.accessKeyId, expiration: c.expiration, role: form.get('RoleArn'), session });
	text(res, 200, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>system:serviceaccount:default:kilovolt</SubjectFromWebIdentityToken>
    <Audience>sts.amazonaws.com</Audience>
    <AssumedRoleUser>
      <Arn>arn:aws:sts::123456789012:assumed-role/${ROLE}/${session}</Arn>
      <AssumedRoleId>AROAKVSTANDIN000000001:${session}</AssumedRoleId>
    </AssumedRoleUser>
    <Credentials>
      <SessionToken>${c.sessionToken}</SessionToken>
      <SecretAccessKey>${c.secretAccessKey}</SecretAccessKey>
      <Expiration>${c.expiration}</Expiration>
      <AccessKeyId>${c.accessKeyId}</AccessKeyId>
    </Credentials>
    <Provider>arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/KVSTANDIN</Provider>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata>
    <RequestId>${randomUUID()}</RequestId>
  </ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>
`, 'text/xml');
}

export { ROLE_ARN };
