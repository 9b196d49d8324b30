// With STORE_URL the key that seals a 2026-07-28 requestState is every replica's (the store's
// secret reqstate:1, made by the first replica, read by the others at start): a state sealed by
// replica A opens on replica B, and one altered is refused on both. Real PostgreSQL 15, two
// real servers on one database, raw 2026-07-28 requests (hermes_reset's confirmation round).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERMES, startHermes, restartHermes, modernMeta, modernHeaders } from '../../lib/lib.mjs';
import { startPostgres } from '../../lib/pg.mjs';

let pg, dir, a, b;

function store(...args) {
  const env = join(dir, 'init.env');
  writeFileSync(env, `STORE_URL=${pg.url}\n`, { mode: 0o600 });
  return spawnSync(HERMES, ['store', ...args, '--env-file', env], { encoding: 'utf8' });
}
const psql = (sql) => pg.psql(sql);

// hermes_reset as a 2026-07-28 caller with form elicitation; params: the round's own.
async function reset(srv, id, params = {}) {
  const r = await fetch(srv.url, { method: 'POST',
    headers: { ...srv.auth, ...modernHeaders('tools/call', 'hermes_reset') },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call',
      params: { name: 'hermes_reset', arguments: {}, ...params, _meta: modernMeta({ elicitation: {} }, 'reset-it') } }) });
  return r.json();
}
const YES = { confirm: { action: 'accept', content: { confirm: true } } };

before(async () => {
  pg = await startPostgres();
  dir = mkdtempSync(join(tmpdir(), 'hm-storereqstate-'));
  const init = store('init');
  assert.equal(init.status, 0, init.stderr);
  a = await startHermes({ STORE_URL: pg.url });
  // One owner token for both: a state is bound to its caller, and the caller is the same.
  b = await startHermes({ STORE_URL: pg.url, MCP_AUTH_TOKEN: a.token });
  b.auth = a.auth;
});
after(async () => {
  await a?.stop();
  await b?.stop();
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('one key in the store, made once: 32 bytes in hex', async () => {
  const rows = await psql("SELECT name, length(value) FROM hm_secret WHERE name LIKE 'reqstate:%'");
  assert.equal(rows.trim(), 'reqstate:1|64');
});

test('a state sealed by A opens on B; altered, it is refused on B', async () => {
  const ask = (await reset(a, 1)).result;
  assert.equal(ask.resultType, 'input_required');
  assert.equal(typeof ask.requestState, 'string');
  const tampered = await reset(b, 2, { inputResponses: YES, requestState: `${ask.requestState.slice(0, -2)}AA` });
  assert.equal(tampered.error?.code, -32602, JSON.stringify(tampered));
  const ok = await reset(b, 3, { inputResponses: YES, requestState: ask.requestState });
  assert.equal(ok.result?.resultType, 'complete', JSON.stringify(ok));
  assert.equal(ok.result.isError, false, JSON.stringify(ok));
  assert.equal(typeof ok.result.structuredContent.cleared, 'number');
  // And the other way round.
  const back = (await reset(b, 4)).result;
  const onA = await reset(a, 5, { inputResponses: YES, requestState: back.requestState });
  assert.equal(onA.result?.resultType, 'complete', JSON.stringify(onA));
});

test('the key outlives a restart: a state sealed before it opens after it', async () => {
  const ask = (await reset(a, 6)).result;
  await new Promise((res) => { a.proc.on('close', res); a.proc.kill('SIGTERM'); });
  a = await restartHermes(a);
  const ok = await reset(a, 7, { inputResponses: YES, requestState: ask.requestState });
  assert.equal(ok.result?.resultType, 'complete', JSON.stringify(ok));
});
