// Tokens for many users, minted by the jose library (not by kilovolt), for
// tests/t_cluster_scale.sh: one Ed25519 key in DIR/jwks.json (kid u1), and
// a token for each of N users u0@x.io .. u(N-1)@x.io whose groups claim
// names team t(i mod TEAMS), valid for an hour.
// usage: node jwt_users.mjs DIR N TEAMS -> DIR/jwks.json; stdout:
// USER<TAB>TEAM<TAB>TOKEN lines.
import { writeFileSync } from 'node:fs';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';

const [dir, n, teams] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const now = Math.floor(Date.now() / 1000);
const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });

writeFileSync(`${dir}/jwks.json`, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)),
	kid: 'u1', alg: 'EdDSA', use: 'sig' }] }));
for (let i = 0; i < n; i++) {
	const user = `u${i}@x.io`, team = `t${i % teams}`;
	const token = await new SignJWT({ sub: user, groups: [team] })
		.setProtectedHeader({ alg: 'EdDSA', typ: 'JWT', kid: 'u1' })
		.setIssuedAt(now).setIssuer('https://idp.example/realms/acme').setAudience('kilovolt')
		.setExpirationTime(now + 3600).sign(privateKey);
	console.log(`${user}\t${team}\t${token}`);
}
