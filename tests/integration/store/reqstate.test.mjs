// With STORE_URL the key that seals a 2026-07-28 requestState is every replica's (the store's
// secret reqstate:1, made by the first replica, read by the others at start): a state sealed by
// replica A opens on replica B, and one altered is refused on both. A 2026-07-28 upstream's
// input round handed out by A is answered through B, once across replicas (its nonce in
// hm_nonce), for tools/call and prompts/get. Real PostgreSQL 15, two real servers on one
// database, raw 2026-07-28 requests (hermes_reset's confirmation round; our conformance server
// as the upstream that asks for input).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { HERMES, startHermes, restartHermes, startConformance, gatewayFile, modernMeta, modernHeaders, parseSse, sleep, until }
  from '../../lib/lib.mjs';
import { startPostgres } from '../../lib/pg.mjs';

let pg, dir, conf, a, b;

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
  conf = await startConformance();
  const gw = gatewayFile(dir, 'upstreams:\n' +
    `  conf:\n    url: ${conf.url}\n    tools: {include: ["test_input_required_result_*"], prompts: true}\n`);
  a = await startHermes({ STORE_URL: pg.url, GATEWAY_FILE: gw });
  // One owner token for both: a state is bound to its caller, and the caller is the same.
  b = await startHermes({ STORE_URL: pg.url, GATEWAY_FILE: gw, MCP_AUTH_TOKEN: a.token });
  b.auth = a.auth;
});
after(async () => {
  await a?.stop();
  await b?.stop();
  await conf?.stop();
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
  assert.doesNotMatch(a.proc.stderrText, /AddressSanitizer|LeakSanitizer|runtime error:/);
  a = await restartHermes(a);
  const ok = await reset(a, 7, { inputResponses: YES, requestState: ask.requestState });
  assert.equal(ok.result?.resultType, 'complete', JSON.stringify(ok));
});

// One raw 2026-07-28 request (tools/call or prompts/get) to srv: its JSON-RPC answer.
async function raw(srv, method, name, params) {
  const id = randomBytes(4).readUInt32BE();
  const r = await fetch(srv.url, { method: 'POST', headers: { ...modernHeaders(method, name), ...srv.auth },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: modernMeta({ elicitation: { form: {} } }) } }) });
  const text = await r.text();
  try { return JSON.parse(text); } catch { return parseSse(text).map((e) => e.json).find((m) => m?.id === id); }
}
const TOOL = 'conf__test_input_required_result_elicitation';
const PROMPT = 'conf__test_input_required_result_prompt';

test('an upstream\'s input round handed out by A is answered through B, once across replicas', async () => {
  const first = await raw(a, 'tools/call', TOOL, { name: TOOL, arguments: {} });
  assert.equal(first.result?.resultType, 'input_required', JSON.stringify(first));
  const retry = { name: TOOL, arguments: {}, requestState: first.result.requestState,
    inputResponses: { user_name: { action: 'accept', content: { name: 'Ada' } } } };
  const done = await raw(b, 'tools/call', TOOL, retry);
  assert.equal(done.result?.content?.[0]?.text, 'Hello, Ada!', JSON.stringify(done));
  assert.equal(await pg.psql('SELECT count(*) FROM hm_nonce'), '1', 'its nonce is kept, used');
  for (const srv of [a, b]) {
    const again = await raw(srv, 'tools/call', TOOL, retry);
    assert.equal(again.result?.isError, true, JSON.stringify(again));
    assert.equal(again.result.structuredContent.error, 'not_found');
    assert.match(again.result.structuredContent.message, /already answered/);
  }
});

test('two retries of one round at once, one on each replica: exactly one reaches the upstream', async () => {
  const first = await raw(b, 'tools/call', TOOL, { name: TOOL, arguments: {} });
  const retry = { name: TOOL, arguments: {}, requestState: first.result.requestState,
    inputResponses: { user_name: { action: 'accept', content: { name: 'Grace' } } } };
  const both = await Promise.all([raw(a, 'tools/call', TOOL, retry), raw(b, 'tools/call', TOOL, retry)]);
  const answered = both.filter((r) => r.result?.content?.[0]?.text === 'Hello, Grace!');
  const refused = both.filter((r) => r.result?.structuredContent?.error === 'not_found');
  assert.deepEqual([answered.length, refused.length], [1, 1], JSON.stringify(both));
});

test('prompts/get: a round of A answered through B, then refused on A', async () => {
  const first = await raw(a, 'prompts/get', PROMPT, { name: PROMPT });
  assert.equal(first.result?.resultType, 'input_required', JSON.stringify(first));
  const retry = { name: PROMPT, requestState: first.result.requestState,
    inputResponses: { user_context: { action: 'accept', content: { context: "ctx'); DROP TABLE hm_nonce; --" } } } };
  const done = await raw(b, 'prompts/get', PROMPT, retry);
  assert.equal(done.result?.messages?.[0]?.content?.text, "Prompt with context: ctx'); DROP TABLE hm_nonce; --", JSON.stringify(done));
  const again = await raw(a, 'prompts/get', PROMPT, retry);
  assert.equal(again.error?.code, -32602, JSON.stringify(again));
  assert.match(again.error.message, /already answered/);
});

test('the database away: a retry is refused as retryable, nothing crashes; back, the same retry goes through', async () => {
  const first = await raw(a, 'tools/call', TOOL, { name: TOOL, arguments: {} });
  const retry = { name: TOOL, arguments: {}, requestState: first.result.requestState,
    inputResponses: { user_name: { action: 'accept', content: { name: 'Lin' } } } };
  await pg.kill();
  const down = await raw(b, 'tools/call', TOOL, retry);
  assert.equal(down.result?.isError, true, JSON.stringify(down));
  assert.equal(down.result.structuredContent.error, 'busy');
  assert.match(down.result.structuredContent.message, /store .* unavailable; retry shortly/);
  await pg.restart();
  let done;
  for (let i = 0; i < 100; i++) { // until B is connected again (its backoff)
    done = await raw(b, 'tools/call', TOOL, retry);
    if (done.result?.structuredContent?.error !== 'busy') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(done.result?.content?.[0]?.text, 'Hello, Lin!', JSON.stringify(done));
  assert.equal(a.proc.exitCode, null);
  assert.equal(b.proc.exitCode, null);
});

// srv's answer to a raw request once it is not busy (a connection to the store being made again).
async function settled(srv, method, name, params) {
  let r;
  for (let i = 0; i < 100; i++) {
    r = await raw(srv, method, name, params);
    if (r.result?.structuredContent?.error !== 'busy') break;
    await sleep(100);
  }
  return r;
}

// The calls srv sent its upstream that ended well (from its /metrics).
async function upstreamOk(srv) {
  const text = await (await fetch(`${srv.base}/metrics`, { headers: srv.auth })).text();
  const line = text.split('\n').find((l) => l.startsWith('hermes_mcp_gateway_calls_total{upstream="conf",outcome="ok"} '));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}
const upstreamOkBoth = async () => (await upstreamOk(a)) + (await upstreamOk(b));

test('a claim that committed but whose answer was lost: the round is spent, the caller is told to call the tool again', async () => {
  const first = await raw(a, 'tools/call', TOOL, { name: TOOL, arguments: {} });
  assert.equal(first.result?.resultType, 'input_required', JSON.stringify(first));
  const retry = { name: TOOL, arguments: {}, requestState: first.result.requestState,
    inputResponses: { user_name: { action: 'accept', content: { name: 'Kay' } } } };
  // B's claim stalls in the database past the store's request timeout (10 s): B gives its
  // connection up and tells the caller to retry; the transaction commits all the same.
  await psql('CREATE TABLE stall_once (n int); INSERT INTO stall_once VALUES (1);' +
    ' CREATE FUNCTION stall() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN' +
    ' IF EXISTS (SELECT 1 FROM stall_once) THEN DELETE FROM stall_once; PERFORM pg_sleep(12); END IF;' +
    ' RETURN NULL; END $$;' +
    ' CREATE TRIGGER stall AFTER INSERT ON hm_nonce FOR EACH STATEMENT EXECUTE FUNCTION stall()');
  const rows = async () => Number(await psql('SELECT count(*) FROM hm_nonce'));
  const before = await rows();
  const calls = await upstreamOkBoth();
  try {
    const lost = await raw(b, 'tools/call', TOOL, retry);
    assert.equal(lost.result?.structuredContent?.error, 'busy', JSON.stringify(lost));
    assert.match(lost.result.structuredContent.message, /retry shortly/);
    await until(async () => await rows() === before + 1, 'the lost claim committed', 10000);
  } finally {
    await psql('DROP TRIGGER stall ON hm_nonce; DROP FUNCTION stall(); DROP TABLE stall_once');
  }
  // The caller sends the same retry again, as it was told, then other answers: the round was
  // claimed once already, so each is refused and told to call the tool again.
  const other = { ...retry, inputResponses: { user_name: { action: 'accept', content: { name: "Eve'); --" } } } };
  for (const [srv, params] of [[a, retry], [b, retry], [b, other]]) {
    const again = await settled(srv, 'tools/call', TOOL, params);
    assert.equal(again.result?.structuredContent?.error, 'not_found', JSON.stringify(again));
    assert.match(again.result.structuredContent.message, /already answered; call the tool again/);
  }
  assert.equal(await rows(), before + 1, 'one row for the round');
  assert.equal(await upstreamOkBoth(), calls, 'nothing reached the upstream');
});

test('an answered round stays answered: the same retry much later, or other answers, are refused; its row is its bare nonce', async () => {
  const first = await raw(b, 'tools/call', TOOL, { name: TOOL, arguments: {} });
  const answer = (name) => ({ name: TOOL, arguments: {}, requestState: first.result.requestState,
    inputResponses: { user_name: { action: 'accept', content: { name } } } });
  const done = await raw(a, 'tools/call', TOOL, answer('Ann'));
  assert.equal(done.result?.content?.[0]?.text, 'Hello, Ann!', JSON.stringify(done));
  const calls = await upstreamOkBoth();
  // Long after the claim (as a retry of a lost answer would come), the very same retry...
  await psql("UPDATE hm_nonce SET expires_at = expires_at - interval '30 seconds'");
  for (const srv of [a, b]) {
    const same = await raw(srv, 'tools/call', TOOL, answer('Ann'));
    assert.equal(same.result?.structuredContent?.error, 'not_found', JSON.stringify(same));
  }
  // ... and other answers are refused.
  const other = await raw(b, 'tools/call', TOOL, answer('Bob'));
  assert.equal(other.result?.structuredContent?.error, 'not_found', JSON.stringify(other));
  assert.equal(await upstreamOkBoth(), calls, 'the upstream heard it once');
  const keys = (await psql('SELECT nonce FROM hm_nonce')).split('\n');
  assert.ok(keys.every((k) => /^[0-9a-f]{32}$/.test(k)), keys.join(' '));
});

for (const isolation of ['read committed', 'repeatable read']) {
  test(`claims of one round with different answers at once on both replicas (${isolation}): exactly one reaches the upstream`, async () => {
    // Every replica's store connection made again under that isolation level.
    const db = await psql('SELECT current_database()');
    await psql(`ALTER DATABASE ${db} SET default_transaction_isolation = '${isolation}'`);
    await psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()");
    // Each claim's insert waits a while first: the claims are in the database together.
    await psql('CREATE FUNCTION stall() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN' +
      ' PERFORM pg_sleep(0.5); RETURN NEW; END $$;' +
      ' CREATE TRIGGER stall BEFORE INSERT ON hm_nonce FOR EACH ROW EXECUTE FUNCTION stall()');
    try {
      for (let round = 0; round < 3; round++) {
        const first = await settled(a, 'tools/call', TOOL, { name: TOOL, arguments: {} });
        assert.equal(first.result?.resultType, 'input_required', JSON.stringify(first));
        const answer = (name) => ({ name: TOOL, arguments: {}, requestState: first.result.requestState,
          inputResponses: { user_name: { action: 'accept', content: { name } } } });
        // Both replicas' store connections up again: a round answered through each.
        for (const [from, to] of [[a, b], [b, a]]) {
          const warm = await settled(from, 'tools/call', TOOL, { name: TOOL, arguments: {} });
          const ok = await settled(to, 'tools/call', TOOL, { name: TOOL, arguments: {}, requestState: warm.result.requestState,
            inputResponses: { user_name: { action: 'accept', content: { name: 'Warm' } } } });
          assert.equal(ok.result?.content?.[0]?.text, 'Hello, Warm!', JSON.stringify(ok));
        }
        const calls = await upstreamOkBoth();
        const sent = [];
        for (let i = 0; i < 4; i++) sent.push(raw(i % 2 ? b : a, 'tools/call', TOOL, answer(`P${i}`)));
        const all = await Promise.all(sent);
        const answered = all.filter((r) => /^Hello, P\d!$/.test(r.result?.content?.[0]?.text ?? ''));
        const refused = all.filter((r) => r.result?.structuredContent?.error === 'not_found' ||
          r.result?.structuredContent?.error === 'busy');
        assert.equal(answered.length, 1, JSON.stringify(all));
        assert.equal(refused.length, 3, JSON.stringify(all));
        assert.equal(await upstreamOkBoth(), calls + 1, 'one call upstream');
      }
    } finally {
      await psql('DROP TRIGGER stall ON hm_nonce; DROP FUNCTION stall();' +
        ` ALTER DATABASE ${db} RESET default_transaction_isolation`);
    }
  });
}
