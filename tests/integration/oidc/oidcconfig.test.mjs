// The OIDC_* settings refused with a clear reason (exit 2, the key named, no secret quoted):
// an issuer that is not https (http only on loopback) or has a query, no audience, claim names
// that are not names, an introspection endpoint without its client, a client without the
// endpoint, and an env file holding OIDC_CLIENT_SECRET readable by others.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERMES } from '../../lib/lib.mjs';

const SECRET = 'introspection-secret-0123456789abcdef';

function serve(lines, mode = 0o600) {
  const dir = mkdtempSync(join(tmpdir(), 'hm-oidcconf-'));
  try {
    const env = join(dir, 'env');
    writeFileSync(env, ['MCP_PORT=0', ...lines].join('\n') + '\n', { mode });
    const r = spawnSync(HERMES, ['serve', '--env-file', env], { encoding: 'utf8', timeout: 10000 });
    return { status: r.status, err: r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const cases = [
  [['OIDC_ISSUER_URL=http://idp.example', 'OIDC_AUDIENCE=a'], /OIDC_ISSUER_URL must list 1-8 issuers \(https:\/\/HOST/],
  [['OIDC_ISSUER_URL=https://idp.example/?x=1', 'OIDC_AUDIENCE=a'], /OIDC_ISSUER_URL must list/],
  [['OIDC_ISSUER_URL=https://idp.example'], /OIDC_ISSUER_URL needs OIDC_AUDIENCE/],
  [['OIDC_ISSUER_URL=https://idp.example', 'OIDC_AUDIENCE=a', 'OIDC_PRINCIPAL_CLAIM=a b'], /OIDC_PRINCIPAL_CLAIM must be a claim name/],
  [['OIDC_ISSUER_URL=https://idp.example', 'OIDC_AUDIENCE=a', 'OIDC_SCOPES_CLAIM=a b c d e'], /OIDC_SCOPES_CLAIM 1-4 of them/],
  [['OIDC_ISSUER_URL=https://idp.example', 'OIDC_AUDIENCE=a', 'OIDC_INTROSPECTION_URL=https://idp.example/introspect'],
    /OIDC_INTROSPECTION_URL needs OIDC_CLIENT_ID and OIDC_CLIENT_SECRET/],
  [['OIDC_ISSUER_URL=https://idp.example', 'OIDC_AUDIENCE=a', 'OIDC_CLIENT_ID=me', `OIDC_CLIENT_SECRET=${SECRET}`],
    /OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are for OIDC_INTROSPECTION_URL/],
];

for (const [lines, want] of cases) {
  test(`refused: ${lines.slice(1).join(' ') || lines[0]}`, () => {
    const r = serve(lines);
    assert.equal(r.status, 2, r.err);
    assert.match(r.err, want);
    assert.ok(!r.err.includes(SECRET), 'the secret is not quoted');
  });
}

test('an env file with OIDC_CLIENT_SECRET must be mode 600', () => {
  const r = serve(['OIDC_ISSUER_URL=https://idp.example', 'OIDC_AUDIENCE=a',
    'OIDC_INTROSPECTION_URL=https://idp.example/introspect', 'OIDC_CLIENT_ID=me', `OIDC_CLIENT_SECRET=${SECRET}`], 0o644);
  assert.equal(r.status, 2, r.err);
  assert.match(r.err, /holds a secret but is readable by others/);
  assert.ok(!r.err.includes(SECRET));
});
