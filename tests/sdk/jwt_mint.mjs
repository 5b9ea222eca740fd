// Tokens for tests/t_jwt.sh, minted by the jose library (not by kilovolt):
// a key of each algorithm (RS256, ES256, EdDSA) and the JWKS of their public
// halves, then a token for each case with the verdict kilovolt must give.
// usage: node jwt_mint.mjs DIR  -> DIR/jwks.json (kids r1, e1, d1),
// DIR/jwks_one.json (d1 alone); stdout: NAME<TAB>EXPECTED<TAB>TOKEN lines,
// EXPECTED "ok:USER:TEAM,TEAM" or "refused:REASON".
import { writeFileSync } from 'node:fs';
import { SignJWT, UnsecuredJWT, exportJWK, exportSPKI, generateKeyPair } from 'jose';

const dir = process.argv[2];
const ISS = 'https://idp.example/realms/acme', AUD = 'kilovolt';
const now = Math.floor(Date.now() / 1000);

const keys = {
	r1: await generateKeyPair('RS256', { extractable: true }),
	e1: await generateKeyPair('ES256', { extractable: true }),
	d1: await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true }),
};
const other = await generateKeyPair('RS256', { extractable: true });	// never published
const algOf = { r1: 'RS256', e1: 'ES256', d1: 'EdDSA' };

async function jwk(kid) {
	return { ...(await exportJWK(keys[kid].publicKey)), kid, alg: algOf[kid], use: 'sig' };
}
writeFileSync(`${dir}/jwks.json`, JSON.stringify({ keys: [await jwk('r1'), await jwk('e1'),
	await jwk('d1')] }, null, 1));
writeFileSync(`${dir}/jwks_one.json`, JSON.stringify({ keys: [await jwk('d1')] }));

const base = { sub: 'ana@x.io', groups: ['payments', 'search'] };
const okAna = 'ok:ana@x.io:payments,search';

// A token signed with KEY as ALG; HEADER extra header members, CLAIMS the
// payload over base, TIMES { iat, exp, nbf } offsets from now (null: left out).
async function mint(alg, key, { header = {}, claims = {}, iss = ISS, aud = AUD,
	exp = 600, nbf = null } = {}) {
	const j = new SignJWT({ ...base, ...claims }).setProtectedHeader({ alg, typ: 'JWT', ...header })
		.setIssuedAt(now).setIssuer(iss).setAudience(aud);
	if (exp !== null)
		j.setExpirationTime(now + exp);
	if (nbf !== null)
		j.setNotBefore(now + nbf);
	return j.sign(key);
}

const cases = [];
const add = (name, expect, token) => cases.push([name, expect, token]);

for (const kid of ['r1', 'e1', 'd1'])
	add(`good_${algOf[kid]}`, okAna, await mint(algOf[kid], keys[kid].privateKey, { header: { kid } }));
add('aud_array', okAna, await mint('ES256', keys.e1.privateKey, { header: { kid: 'e1' },
	aud: ['other', AUD] }));
add('groups_string', 'ok:bo:ops', await mint('EdDSA', keys.d1.privateKey, { header: { kid: 'd1' },
	claims: { sub: 'bo', groups: 'ops' } }));
add('wrong_key', 'refused:bad signature', await mint('RS256', other.privateKey,
	{ header: { kid: 'r1' } }));
add('rotated_kid', 'refused:unknown kid', await mint('RS256', other.privateKey,
	{ header: { kid: 'r2' } }));
add('kid_missing', 'refused:unknown kid', await mint('RS256', keys.r1.privateKey));
add('alg_none', 'refused:algorithm not accepted',
	new UnsecuredJWT(base).setIssuer(ISS).setAudience(AUD).setExpirationTime(now + 600).encode());
// HS256 keyed with the RSA public key as its secret (the PEM text), kid r1
const pem = new TextEncoder().encode(await exportSPKI(keys.r1.publicKey));
add('hs256_public_key', 'refused:algorithm not accepted', await mint('HS256', pem,
	{ header: { kid: 'r1' } }));
add('alg_not_key', 'refused:algorithm not accepted', await mint('ES256', keys.e1.privateKey,
	{ header: { kid: 'r1' } }));
add('expired', 'refused:expired', await mint('RS256', keys.r1.privateKey, { header: { kid: 'r1' },
	exp: -3600 }));
add('no_exp', 'refused:expired', await mint('RS256', keys.r1.privateKey, { header: { kid: 'r1' },
	exp: null }));
add('nbf_future', 'refused:not yet valid', await mint('EdDSA', keys.d1.privateKey,
	{ header: { kid: 'd1' }, nbf: 3600 }));
add('wrong_aud', 'refused:wrong audience', await mint('RS256', keys.r1.privateKey,
	{ header: { kid: 'r1' }, aud: 'kilovolt-staging' }));
add('wrong_iss', 'refused:wrong issuer', await mint('ES256', keys.e1.privateKey,
	{ header: { kid: 'e1' }, iss: 'https://evil.example/realms/acme' }));
add('no_user', 'refused:no user claim', await mint('EdDSA', keys.d1.privateKey,
	{ header: { kid: 'd1' }, claims: { sub: undefined } }));
const good = await mint('RS256', keys.r1.privateKey, { header: { kid: 'r1' } });
const [h, p, s] = good.split('.');
const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p, 'base64url')),
	sub: 'root' })).toString('base64url');
add('claims_changed', 'refused:bad signature', `${h}.${forged}.${s}`);
add('two_parts', 'refused:malformed', `${h}.${p}`);
// against jwks_one.json: no kid, and a set of one key
add('one_key_no_kid', okAna, await mint('EdDSA', keys.d1.privateKey));

for (const [name, expect, token] of cases)
	console.log(`${name}\t${expect}\t${token}`);
