// Per-role limits (TOKENS_FILE limits:): a role over its calls_per_min or calls_in_flight gets
// the tool error busy with retry_after, never a queued call, while another role calls on;
// /metrics counts the refusals per principal and limit, and the log says so once a minute. A
// bad limit stops the server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, chmodSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { startHermes, startFake, agentEnv, HERMES, toolCall, tokensFile } from '../../lib/lib.mjs';
import { events, waitEvent } from '../../lib/events.mjs';

test('a role over its calls_per_min gets busy with retry_after; another role is unaffected', async () => {
  const tok = { slow: randomBytes(32).toString('hex'), free: randomBytes(32).toString('hex') };
  const dir = mkdtempSync(join(tmpdir(), 'hm-limits-'));
  const file = tokensFile(dir, { free: [tok.free, 'hermes:read'] },
    `  - name: slow\n    sha256: ${createHash('sha256').update(tok.slow).digest('hex')}\n` +
    '    scopes: [hermes:read]\n    limits: {calls_per_min: 2}\n');
  const srv = await startHermes({ TOKENS_FILE: file });
  try {
    for (let i = 0; i < 2; i++)
      assert.equal((await toolCall(srv, tok.slow, 'whoami')).isError, false);
    const busy = await toolCall(srv, tok.slow, 'whoami');
    assert.equal(busy.isError, true);
    assert.equal(busy.structuredContent.error, 'busy');
    assert.ok(busy.structuredContent.retry_after >= 1 && busy.structuredContent.retry_after <= 30,
      JSON.stringify(busy.structuredContent));
    assert.equal((await toolCall(srv, tok.slow, 'whoami')).structuredContent.error, 'busy');
    // The other role, at the same moment: no limit of its own, not touched by slow's.
    for (let i = 0; i < 5; i++)
      assert.equal((await toolCall(srv, tok.free, 'whoami')).isError, false);

    const m = await (await fetch(`${srv.base}/metrics`, { headers: srv.auth })).text();
    assert.match(m, /^hermes_mcp_principal_limited_total\{principal="slow",limit="calls_per_min"\} 2$/m);
    assert.doesNotMatch(m, /principal_limited_total\{principal="free"/);
    // Logged once for the minute, though refused twice.
    await waitEvent(srv, 'principal_limited', { principal: 'slow', limit: 'calls_per_min', value: '2' });
    assert.equal(events(srv, 'principal_limited').length, 1);
  } finally {
    await srv.stop();
  }
});

test('a role at its calls_in_flight gets busy while its slow call runs; another role is unaffected', async () => {
  const fake = await startFake();
  const dir = mkdtempSync(join(tmpdir(), 'hm-limits-'));
  const tok = { one: randomBytes(32).toString('hex'), free: randomBytes(32).toString('hex') };
  const file = tokensFile(dir, { free: [tok.free, 'hermes:read, hermes:task'] },
    `  - name: one\n    sha256: ${createHash('sha256').update(tok.one).digest('hex')}\n` +
    '    scopes: [hermes:read, hermes:task]\n    limits: {calls_in_flight: 1}\n');
  const srv = await startHermes({ TOKENS_FILE: file, HERMES_ENV_PATH: agentEnv(fake) });
  try {
    const slow = toolCall(srv, tok.one, 'hermes_task', { task: 'slowly [delay=1500]', mode: 'sync', id: 'lim-slow' });
    // Wait until the slow call is in flight (the fake agent has it), then try a second one.
    let busy;
    for (let i = 0; i < 50 && !busy; i++) {
      const r = await toolCall(srv, tok.one, 'whoami');
      if (r.isError) busy = r;
      else await new Promise((res) => setTimeout(res, 20));
    }
    assert.ok(busy, 'a second call while the first runs was let through');
    assert.equal(busy.structuredContent.error, 'busy');
    assert.equal(busy.structuredContent.retry_after, 1);
    // Another role with the same rights calls on, even a slow call of its own.
    assert.equal((await toolCall(srv, tok.free, 'whoami')).isError, false);
    const done = await slow;
    assert.equal(done.isError, false, JSON.stringify(done));
    // The slot is free again once the call is answered.
    assert.equal((await toolCall(srv, tok.one, 'whoami')).isError, false);
    assert.equal((await toolCall(srv, tok.one, 'whoami')).isError, false);

    const m = await (await fetch(`${srv.base}/metrics`, { headers: srv.auth })).text();
    assert.match(m, /^hermes_mcp_principal_limited_total\{principal="one",limit="calls_in_flight"\} [1-9]\d*$/m);
    await waitEvent(srv, 'principal_limited', { principal: 'one', limit: 'calls_in_flight', value: '1' });
    assert.equal(events(srv, 'principal_limited').length, 1);
  } finally {
    await srv.stop();
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a limit out of range or of an unknown kind stops the server with a clear reason', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-limits-'));
  try {
    for (const [limits, why] of [['{calls_per_min: 1000001}', "'limits.calls_per_min' must be a whole number 0-1000000"],
      ['{calls: 1}', "unknown key 'limits.calls'"]]) {
      const file = tokensFile(dir, { a: [randomBytes(32).toString('hex'), 'hermes:read'] }, `    limits: ${limits}\n`);
      const env = join(dir, 'env');
      writeFileSync(env, `MCP_PORT=0\nMCP_AUTH_TOKEN=${randomBytes(32).toString('hex')}\nTOKENS_FILE=${file}\nAGENTS_FILE=${join(dir, 'agents.yaml')}\n`);
      chmodSync(env, 0o600);
      const r = spawnSync(HERMES, ['serve', '--env-file', env], { encoding: 'utf8', timeout: 10000 });
      assert.notEqual(r.status, 0);
      assert.ok(r.stderr.includes(why), r.stderr);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
