#!/usr/bin/env node
// Writes the seed corpora of fuzz_jwt and fuzz_jwks (tests/fuzz/corpus/jwt/, jwks/) and
// tests/fuzz/fuzz_jwt_keys.h, the key set the targets verify against, from keys made here: the
// seeds' signatures verify with that set, so the fuzzer starts from tokens that pass. Run it
// again only to change the seeds (it makes new keys): node tests/fuzz/gen_jwt_corpus.mjs
import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const NOW = 1800000000;
const ISS = 'https://idp.example';
const b64 = (b) => Buffer.from(b).toString('base64url');

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const ed = generateKeyPairSync('ed25519');
const pub = (k, extra) => ({ ...k.publicKey.export({ format: 'jwk' }), ...extra });
const jwks = { keys: [pub(rsa, { kid: 'r1', use: 'sig' }), pub(ec, { kid: 'e1' }), pub(ed, { kid: 'd1', alg: 'EdDSA' })] };

const signers = {
  RS256: (d) => sign('sha256', d, rsa.privateKey),
  PS256: (d) => sign('sha256', d, { key: rsa.privateKey, padding: 6, saltLength: 32 }),
  ES256: (d) => sign('sha256', d, { key: ec.privateKey, dsaEncoding: 'ieee-p1363' }),
  EdDSA: (d) => sign(null, d, ed.privateKey),
  'ES256-der': (d) => sign('sha256', d, ec.privateKey),
};
const claims = { iss: ISS, aud: 'hermes', sub: 'alice', exp: NOW + 600, iat: NOW - 5, nbf: NOW - 5 };
function token(header, body = claims, how = header.alg) {
  const input = `${b64(JSON.stringify(header))}.${b64(JSON.stringify(body))}`;
  const sig = signers[how] ? signers[how](Buffer.from(input)) : Buffer.from('sig');
  return `${input}.${b64(sig)}`;
}

const jwt = {
  rs256: token({ alg: 'RS256', kid: 'r1', typ: 'at+jwt' }),
  ps256: token({ alg: 'PS256', kid: 'r1' }),
  es256: token({ alg: 'ES256', kid: 'e1' }),
  eddsa: token({ alg: 'EdDSA', kid: 'd1' }),
  nokid: token({ alg: 'RS256' }),
  aud_array: token({ alg: 'ES256', kid: 'e1' }, { ...claims, aud: ['x', 'hermes'] }),
  expired: token({ alg: 'EdDSA', kid: 'd1' }, { ...claims, exp: NOW - 3600 }),
  real_times: token({ alg: 'EdDSA', kid: 'd1' }, { ...claims, exp: NOW + 0.5, nbf: 1e300 }),
  wrong_alg: token({ alg: 'PS256', kid: 'r1' }, claims, 'RS256'),
  es256_der: token({ alg: 'ES256', kid: 'e1' }, claims, 'ES256-der'),
  unknown_kid: token({ alg: 'RS256', kid: '../../jwks' }),
  none: `${b64('{"alg":"none"}')}.${b64(JSON.stringify(claims))}.`,
  crit: token({ alg: 'EdDSA', kid: 'd1', crit: ['exp'] }),
  jku: token({ alg: 'RS256', kid: 'r1', jku: 'https://evil.example/jwks' }),
  dup: `${b64('{"alg":"RS256","alg":"none"}')}.${b64('{}')}.c2ln`,
  opaque: 'hm_4f9c1a7e2b8d3c6f0a5e9b1d7c3f8a2e',
  padded: 'e30=.e30.c2ln',
};
{
  const input = `${b64('{"alg":"HS256","kid":"r1"}')}.${b64(JSON.stringify(claims))}`;
  const pem = rsa.publicKey.export({ type: 'spki', format: 'pem' });
  jwt.hs256 = `${input}.${b64(createHmac('sha256', pem).update(input).digest())}`;
}

const small = generateKeyPairSync('rsa', { modulusLength: 1024 });
const keys = jwks.keys;
const jwksSeeds = {
  set: JSON.stringify(jwks),
  empty: '{"keys":[]}',
  rsa: JSON.stringify({ keys: [keys[0]] }),
  ec: JSON.stringify({ keys: [keys[1]] }),
  okp: JSON.stringify({ keys: [keys[2]] }),
  skipped: JSON.stringify({
    keys: [
      { kty: 'oct', k: 'c2VjcmV0' },
      { ...keys[0], use: 'enc' },
      pub(small, { kid: 'small' }),
      { ...keys[1], crv: 'P-384' },
      { ...keys[2], alg: 'ES256' },
      { ...keys[1], key_ops: ['verify'], kid: 'ops' },
    ],
  }),
  dup: '{"keys":[],"keys":[]}',
  nokeys: '{"kty":"RSA"}',
  notjson: '{"keys":[',
};

for (const [dir, seeds] of [['jwt', jwt], ['jwks', jwksSeeds]]) {
  const d = join(here, 'corpus', dir);
  rmSync(d, { recursive: true, force: true });
  mkdirSync(d, { recursive: true });
  for (const [name, text] of Object.entries(seeds)) writeFileSync(join(d, name), text);
}

const cstr = (s) => JSON.stringify(s); // a JSON string literal is a valid C string literal here
writeFileSync(
  join(here, 'fuzz_jwt_keys.h'),
  `/* fuzz_jwt_keys.h — written by tests/fuzz/gen_jwt_corpus.mjs with the seed corpora: the key set
 * the seeds of fuzz_jwt are signed for, and tokens of each alg that fuzz_jwks verifies against
 * the sets it makes. Test keys, made for this and thrown away. */
#ifndef HM_FUZZ_JWT_KEYS_H
#define HM_FUZZ_JWT_KEYS_H

#define FUZZ_JWT_NOW ${NOW}
#define FUZZ_JWT_ISS ${cstr(ISS)}
#define FUZZ_JWT_AUD "hermes"
#define FUZZ_JWKS ${cstr(JSON.stringify(jwks))}

static const char *const fuzz_jwt_tokens[] = {
${[jwt.rs256, jwt.ps256, jwt.es256, jwt.eddsa, jwt.nokid].map((t) => `    ${cstr(t)},`).join('\n')}
};

#endif
`,
);
console.log(`wrote ${Object.keys(jwt).length} jwt and ${Object.keys(jwksSeeds).length} jwks seeds`);
