// The Python hermes-mcp's env keys work unchanged: HERMES_API_KEY is the key the default agent is
// called with (the Python server sent it to the Hermes gateway), so an env file that has it and a
// Hermes .env without API_SERVER_KEY still reaches the agent; doctor says where the key came from;
// BIND_HOST is MCP_HOST under its old name. (OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET, OAUTH_ISSUER_URL
// and OAUTH_ALLOWED_REDIRECT_SCHEMES: oauthstatic.test.mjs.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, chmodSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startHermes, startFake, HERMES } from '../../lib/lib.mjs';

// A Hermes .env naming the fake's address and no key.
function keylessAgentEnv(fake) {
  const dir = mkdtempSync(join(tmpdir(), 'hm-pyenv-'));
  const f = join(dir, 'agent.env');
  writeFileSync(f, `API_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT=${fake.port}\n`);
  chmodSync(f, 0o600);
  return { f, dir };
}

test('HERMES_API_KEY is the default agent\'s key: a task reaches the agent; doctor names it', async () => {
  const fake = await startFake();
  const env = keylessAgentEnv(fake);
  const srv = await startHermes({ HERMES_ENV_PATH: env.f, HERMES_API_KEY: fake.key, BIND_HOST: '127.0.0.1' });
  try {
    const client = new Client({ name: 'pyenv-it', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: srv.auth } }));
    assert.ok((await client.listTools()).tools.some((t) => t.name === 'hermes_task'));
    const r = await client.callTool({ name: 'hermes_task', arguments: { task: 'hello with the older env keys', mode: 'sync' } });
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.equal(r.structuredContent.status, 'completed');
    await client.close();
    assert.ok(fake.received().some((q) => JSON.stringify(q).includes('hello with the older env keys')), 'the agent got the task');
    const doc = spawnSync(HERMES, ['doctor', '--env-file', srv.envFile], { encoding: 'utf8' });
    assert.match(doc.stdout, /agent hermes \(default\): key from HERMES_API_KEY in /, doc.stdout);
    assert.ok(!doc.stdout.includes(fake.key) && !doc.stderr.includes(fake.key), 'the key is not printed');
    assert.ok(!srv.proc.stderrText.includes(fake.key), 'the key is not logged');
  } finally {
    assert.equal(await srv.stop(), 0);
    await fake.stop();
    rmSync(env.dir, { recursive: true, force: true });
  }
});

test('without HERMES_API_KEY nor API_SERVER_KEY the agent is refused its call, as before', async () => {
  const fake = await startFake();
  const env = keylessAgentEnv(fake);
  const srv = await startHermes({ HERMES_ENV_PATH: env.f });
  try {
    const client = new Client({ name: 'pyenv-it', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: srv.auth } }));
    const r = await client.callTool({ name: 'hermes_task', arguments: { task: 'no key', mode: 'sync' } });
    assert.equal(r.isError, true, JSON.stringify(r));
    await client.close();
  } finally {
    assert.equal(await srv.stop(), 0);
    await fake.stop();
    rmSync(env.dir, { recursive: true, force: true });
  }
});

test('BIND_HOST: a non-loopback one is refused by name, one differing from MCP_HOST too', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-pyenv-'));
  try {
    const start = (lines) => {
      const f = join(dir, 'env');
      writeFileSync(f, Object.entries({ MCP_PORT: '0', MCP_AUTH_TOKEN: 'a'.repeat(64), ...lines })
        .map(([k, v]) => `${k}=${v}`).join('\n') + '\n');
      chmodSync(f, 0o600);
      return spawnSync(HERMES, ['serve', '--env-file', f], { encoding: 'utf8', timeout: 10000 });
    };
    let r = start({ BIND_HOST: '0.0.0.0' });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /BIND_HOST=0\.0\.0\.0 is not a loopback address/);
    r = start({ BIND_HOST: '127.0.0.2', MCP_HOST: '127.0.0.1' });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /MCP_HOST and BIND_HOST/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
