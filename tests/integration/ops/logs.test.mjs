// Logs: stderr, one line per event with its level, journald priorities under systemd, and never
// a secret, a task text or a body, even at LOG_LEVEL=debug.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startHermes, startFake, agentEnv, post } from '../../lib/lib.mjs';
import { waitEvent } from '../../lib/events.mjs';

async function exercise(opts) {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), LOG_LEVEL: 'debug' }, opts);
  const marker = `secret-task-${randomBytes(6).toString('hex')}`;
  const bodyMarker = `body-only-${randomBytes(6).toString('hex')}`;
  try {
    const call = (args, id = 1) => post(srv, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hermes_task', arguments: args } });
    let r = await call({ task: `${marker} please`, mode: 'sync', id: 'log-1', context: marker, constraints: [marker] });
    assert.equal(r.json.result.isError, false);
    r = await call({ task: `${marker} [fail]`, mode: 'sync', id: 'log-2' });
    assert.equal(r.json.result.structuredContent.status, 'failed');
    r = await call({ task: `${marker} [delay=2000]`, mode: 'async', id: 'log-3' });
    assert.equal(r.json.result.structuredContent.status, 'accepted');
    r = await post(srv, `{"jsonrpc":"2.0","id":1,"method":"${bodyMarker}"`); // malformed
    assert.equal(r.status, 400);
    r = await post({ ...srv, auth: { Authorization: `Bearer ${'e'.repeat(64)}` } }, { jsonrpc: '2.0', id: 1, method: bodyMarker });
    assert.equal(r.status, 401);
    srv.proc.kill('SIGHUP');
    await waitEvent(srv, 'reload_applied', { config: 'env' });
  } finally {
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
  return { text: srv.proc.stderrText, marker, bodyMarker, token: srv.token, key: fake.key };
}

function checkLines({ text, marker, bodyMarker, token, key }, lineRe) {
  const lines = text.split('\n').filter(Boolean);
  assert.ok(lines.length >= 5, `some events were logged:\n${text}`);
  for (const l of lines) assert.match(l, lineRe, 'one event per line, with its level');
  assert.ok(lines.some((l) => /debug/.test(l)), 'debug lines are on');
  for (const [what, s] of [['task text', marker], ['request body', bodyMarker], ['token', token], ['agent key', key]])
    assert.ok(!text.includes(s), `no ${what} in the log`);
}

test('stderr lines: "hermes-mcp: LEVEL: text", no secret, task text or body', async () => {
  checkLines(await exercise({}), /^hermes-mcp: (error|warn|info|debug): \S/);
});

test('under systemd (JOURNAL_STREAM set): journald priority prefixes instead', async () => {
  const run = await exercise({ env: { JOURNAL_STREAM: '8:12345' } });
  checkLines(run, /^<[3467]>(error|warn|info|debug): \S/);
  assert.match(run.text, /^<6>info: /m, 'info is priority 6');
  assert.match(run.text, /^<7>debug: /m, 'debug is priority 7');
});
