// The oidc: section of TOKENS_FILE, for providers that cannot issue our scope names: scopes
// maps a provider's names (Entra ID app roles, say) onto ours, and rules give the principals a
// claim value names an agents allowlist and limits. Tried with a real provider's tokens set up
// as Entra ID issues them: app roles in roles (no scope claim of ours), aud the application's
// id URI rather than a URL, the calling application in azp.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFake } from '../../lib/lib.mjs';
import { startOidc, startOidcHermes, rpc, whoami, toolNames } from '../../lib/oidc.mjs';

const APP_ID_URI = 'api://hermes-mcp';

function file(dir, name, text) {
  const f = join(dir, name);
  writeFileSync(f, text);
  chmodSync(f, 0o600);
  return f;
}

test('Entra-style tokens: app roles mapped onto our scopes, a group rule limits agents and calls', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-oidcmap-'));
  const fake = await startFake();
  const keyFile = file(dir, 'key', `${fake.key}\n`);
  const agents = file(dir, 'agents.yaml', 'default: alpha\nagents:\n' + ['alpha', 'beta'].map((n) =>
    `  - name: ${n}\n    base_url: http://127.0.0.1:${fake.port}\n    key_file: ${keyFile}\n`).join(''));
  const tokens = file(dir, 'tokens.yaml', [
    'oidc:',
    '  scopes:',
    '    Hermes.Reader: [hermes:read]',
    '    Hermes.Worker: [hermes:read, hermes:task]',
    '  rules:',
    '    - claim: groups',
    '      value: team-beta',
    '      agents: [beta]',
    '      limits: {calls_per_min: 4}',
    '',
  ].join('\n'));
  // Two applications of one tenant: a worker in group team-beta, a reader in no group.
  const op = await startOidc({
    clients: [
      { client_id: 'worker-app', client_secret: 'worker-secret-0123456789', grant_types: ['client_credentials'],
        response_types: [], claims: { azp: 'worker-app', roles: ['Hermes.Worker', 'Other.Role'], groups: ['team-beta'] } },
      { client_id: 'reader-app', client_secret: 'reader-secret-0123456789', grant_types: ['client_credentials'],
        response_types: [], claims: { azp: 'reader-app', roles: ['Hermes.Reader'] } },
    ],
  });
  const srv = await startOidcHermes(op, { OIDC_AUDIENCE: APP_ID_URI, OIDC_SCOPES_CLAIM: 'roles',
    OIDC_PRINCIPAL_CLAIM: 'azp', TOKENS_FILE: tokens, AGENTS_FILE: agents });
  const cc = async (id, secret) => (await op.clientCredentials({ resource: APP_ID_URI, client: { id, secret } })).access_token;
  try {
    const worker = await cc('worker-app', 'worker-secret-0123456789');
    const me = await whoami(srv, worker);
    assert.equal(me.principal, 'oidc:worker-app');
    assert.deepEqual([...me.scopes].sort(), ['hermes:read', 'hermes:task'], 'Other.Role maps to nothing');
    assert.deepEqual(me.agents, ['beta']);
    const names = await toolNames(srv, worker);
    assert.ok(names.includes('hermes_task') && !names.includes('hermes_reset'), names.join());
    const la = await rpc(srv, worker, 'tools/call', { name: 'list_agents', arguments: {} });
    assert.deepEqual(la.json.result.structuredContent.agents.map((a) => a.name), ['beta']);
    const toAlpha = await rpc(srv, worker, 'tools/call', { name: 'hermes_task',
      arguments: { task: 'hi', mode: 'sync', agent: 'alpha' } });
    assert.equal(toAlpha.json.result.structuredContent.error, 'unknown_agent');
    // calls_per_min 4: whoami, list_agents and the refused task were three; one more, then busy.
    assert.equal((await rpc(srv, worker, 'tools/call', { name: 'whoami', arguments: {} })).json.result.isError, false);
    const busy = await rpc(srv, worker, 'tools/call', { name: 'whoami', arguments: {} });
    assert.equal(busy.json.result.isError, true, busy.text);
    assert.equal(busy.json.result.structuredContent.error, 'busy');

    // The reader: its one role, every agent, no limit.
    const reader = await cc('reader-app', 'reader-secret-0123456789');
    const r = await whoami(srv, reader);
    assert.equal(r.principal, 'oidc:reader-app');
    assert.deepEqual(r.scopes, ['hermes:read']);
    assert.deepEqual(r.agents, ['*']);
    for (let i = 0; i < 6; i++) assert.equal((await whoami(srv, reader)).principal, 'oidc:reader-app');
    const task = await rpc(srv, reader, 'tools/call', { name: 'hermes_task', arguments: { task: 'x', mode: 'sync' } });
    assert.equal(task.status, 403);

    // A token for a URL audience is not for this application.
    const wrongAud = (await op.clientCredentials({ resource: 'http://127.0.0.1:9/mcp',
      client: { id: 'reader-app', secret: 'reader-secret-0123456789' } })).access_token;
    assert.equal((await rpc(srv, wrongAud, 'tools/call', { name: 'whoami', arguments: {} })).status, 401);
  } finally {
    await srv.stop();
    await op.stop();
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
