// A real OpenID provider (oidc-provider, a certified implementation) for
// tests/t_jwt.sh: it listens on 127.0.0.1, a client gets access tokens in
// JWT form by the client_credentials grant (no browser), one per algorithm
// (a resource indicator each: RS256, ES256, EdDSA, all for the audience
// "kilovolt"), and the provider's own JWKS is fetched from the jwks_uri its
// discovery document names.
// usage: node jwt_oidc.mjs DIR [serve] -> DIR/oidc_jwks.json; stdout:
// "issuer<TAB>URL", "jwks_uri<TAB>URL", then NAME<TAB>EXPECTED<TAB>TOKEN
// lines as jwt_mint.mjs prints them, then "ready". With serve, the provider
// keeps answering (its JWKS for kilovolt's master) until SIGTERM.
import { writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

const dir = process.argv[2];
const algs = { 'urn:kilovolt:rs': 'RS256', 'urn:kilovolt:es': 'ES256', 'urn:kilovolt:ed': 'EdDSA' };

async function signingKey(alg, kid) {
	const { privateKey } = await generateKeyPair(alg, { extractable: true,
		...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}) });
	return { ...(await exportJWK(privateKey)), kid, alg, use: 'sig' };
}

// The issuer's port is known only once a server listens: take one, then
// hand the provider's callback to it.
const server = (await import('node:http')).createServer();
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
	clients: [{ client_id: 'claude-code-ci', client_secret: 'a-secret-for-the-test-only',
		grant_types: ['client_credentials'], redirect_uris: [], response_types: [] }],
	jwks: { keys: [await signingKey('RS256', 'op-rs'), await signingKey('ES256', 'op-es'),
		await signingKey('EdDSA', 'op-ed')] },
	features: {
		devInteractions: { enabled: false },
		clientCredentials: { enabled: true },
		resourceIndicators: {
			enabled: true,
			defaultResource: () => 'urn:kilovolt:rs',
			getResourceServerInfo: (ctx, resource) => ({
				scope: 'api', audience: 'kilovolt', accessTokenFormat: 'jwt',
				jwt: { sign: { alg: algs[resource] } },
			}),
		},
	},
	// the team claim, as a provider maps an IdP group into its tokens
	extraTokenClaims: () => ({ groups: ['platform'] }),
});
server.on('request', provider.callback());

const disc = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
const jwks = await (await fetch(disc.jwks_uri)).json();
writeFileSync(`${dir}/oidc_jwks.json`, JSON.stringify(jwks));
console.log(`issuer\t${disc.issuer}`);
console.log(`jwks_uri\t${disc.jwks_uri}`);
for (const [resource, alg] of Object.entries(algs)) {
	const r = await fetch(disc.token_endpoint, {
		method: 'POST',
		headers: { authorization: 'Basic ' + Buffer.from('claude-code-ci:a-secret-for-the-test-only')
			.toString('base64'), 'content-type': 'application/x-www-form-urlencoded' },
		body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'api', resource }),
	});
	const body = await r.json();
	if (!r.ok || typeof body.access_token !== 'string')
		throw new Error(`token for ${resource}: ${r.status} ${JSON.stringify(body)}`);
	console.log(`oidc_${alg}\tok:claude-code-ci:platform\t${body.access_token}`);
}
console.log('ready');
if (process.argv[3] === 'serve')
	process.on('SIGTERM', () => process.exit(0));
else
	server.close();
