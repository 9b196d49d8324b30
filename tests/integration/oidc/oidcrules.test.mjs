// A rule of the tokens file's oidc: section may name the issuer whose tokens it applies to: with
// two providers, the same group claim means something at one and nothing at the other. A rule
// naming an issuer the server does not accept is refused at start, not left to never apply; an
// introspection answer must say whose token it is when that is not plain.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:http';
import { startHermes, startFake, freePort } from '../../lib/lib.mjs';
import { handProvider, signJwt, claimsFor, startOidcHermes, whoami, rpc } from '../../lib/oidc.mjs';

function file(dir, name, text) {
  const f = join(dir, name);
  writeFileSync(f, text);
  chmodSync(f, 0o600);
  return f;
}

test('a rule with an issuer applies to that issuer\'s tokens only', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-oidcrules-'));
  const fake = await startFake();
  const keyFile = file(dir, 'key', `${fake.key}\n`);
  const agents = file(dir, 'agents.yaml', 'default: alpha\nagents:\n' + ['alpha', 'beta'].map((n) =>
    `  - name: ${n}\n    base_url: http://127.0.0.1:${fake.port}\n    key_file: ${keyFile}\n`).join(''));
  const corp = await handProvider('/corp');
  const partner = await handProvider('/partner');
  const tokens = file(dir, 'tokens.yaml', [
    'oidc:',
    '  rules:',
    `    - issuer: ${partner.issuer}`,
    '      claim: groups',
    '      value: staff',
    '      agents: [beta]',
    '      limits: {calls_per_min: 50}',
    '',
  ].join('\n'));
  const srv = await startOidcHermes([corp, partner], { TOKENS_FILE: tokens, AGENTS_FILE: agents });
  try {
    const token = (op, sub) => signJwt(claimsFor(op, { resource: srv.audience, sub, groups: ['staff'] }), op.key);
    const atCorp = await whoami(srv, await token(corp, 'ann'));
    assert.equal(atCorp.principal, 'oidc:ann');
    assert.deepEqual(atCorp.agents, ['*'], 'the partner\'s rule does not touch the corporate issuer\'s staff');
    const atPartner = await whoami(srv, await token(partner, 'bob'));
    assert.equal(atPartner.principal, 'oidc2:bob');
    assert.deepEqual(atPartner.agents, ['beta']);
  } finally {
    await srv.stop();
    corp.close();
    partner.close();
    await fake.stop();
  }
});

test('a rule naming an issuer not in OIDC_ISSUER_URL stops the start with a clear error', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-oidcrules-'));
  const op = await handProvider('/only');
  const tokens = file(dir, 'tokens.yaml',
    'oidc:\n  rules:\n    - issuer: https://typo.example/\n      claim: groups\n      value: staff\n      agents: [beta]\n');
  try {
    await assert.rejects(startHermes({ OIDC_ISSUER_URL: op.issuer, OIDC_AUDIENCE: 'hermes', TOKENS_FILE: tokens }),
      (e) => /names the issuer https:\/\/typo\.example\/, which OIDC_ISSUER_URL does not list/.test(String(e.message) + (e.stderr ?? '')));
  } finally {
    op.close();
  }
});

// An introspection endpoint whose answers name no iss (RFC 7662 makes it optional).
async function issuerlessIntrospection(audience) {
  const srv = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ active: true, sub: 'opaque-user', aud: audience, scope: 'hermes:read',
        exp: Math.floor(Date.now() / 1000) + 600 }));
    });
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${srv.address().port}/introspect`, close: () => srv.close() };
}

test('an introspection answer without iss: whose it is is known with one issuer, refused with two', async () => {
  const opaque = 'opaque-token-of-some-provider-0123456789';
  for (const count of [1, 2]) {
    const ops = [await handProvider('/a'), ...(count > 1 ? [await handProvider('/b')] : [])];
    const port = await freePort();
    const intro = await issuerlessIntrospection(`http://127.0.0.1:${port}/mcp`);
    const srv = await startOidcHermes(ops, { OIDC_INTROSPECTION_URL: intro.url, OIDC_CLIENT_ID: 'rs',
      OIDC_CLIENT_SECRET: 'introspection-secret-0123456789' }, { port });
    try {
      if (count === 1) {
        assert.equal((await whoami(srv, opaque)).principal, 'oidc:opaque-user');
      } else {
        const r = await rpc(srv, opaque, 'tools/call', { name: 'whoami', arguments: {} });
        assert.equal(r.status, 401, 'two issuers: an answer that does not say whose is no answer');
      }
    } finally {
      await srv.stop();
      intro.close();
      for (const op of ops) op.close();
    }
  }
});
