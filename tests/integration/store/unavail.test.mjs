// PostgreSQL stopped under load, through the nginx block of docs/guides/replicas.md in front of
// three replicas on one real PostgreSQL 15: several clients keep calling hermes_result and
// hermes_status (raw requests of both eras, to see the HTTP status and headers) while the
// database is killed and started again:
// - every answer is a success or HTTP 503 with Retry-After and the JSON-RPC error -32004 whose
//   data.retryAfter is the header's seconds; nothing else, no hang;
// - the official SDK clients (1.x and v2) raise the 503 as an error instead of waiting;
// - no replica crashes: each still answers, directly, while the database is away; a new
//   hermes_task is refused 503 too, before the agent is asked anything;
// - once it is back, every call succeeds again, on every replica;
// - an async task whose run ended while the database was away has its result once it returns
//   (its follower could not store it then, and tried again).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERMES, startHermes, startFake, agentEnv, until, sleep, connectClient, connectV2Client,
  modernMeta, modernHeaders, JSON_HEADERS } from '../../lib/lib.mjs';
import { startPostgres } from '../../lib/pg.mjs';
import { NGINX, nginxBlocks, substitute, startNginx } from '../../lib/nginx.mjs';

const TOKEN = randomBytes(32).toString('hex');
const AUTH = { Authorization: `Bearer ${TOKEN}` };
const NAMES = ['a', 'b', 'c'];
const GUIDE_ADDR = { a: '10.0.0.11:8765', b: '10.0.0.12:8765', c: '10.0.0.13:8765' };
const skip = NGINX ? false : 'nginx not installed (scripts/deps.sh installs nginx-light)';

let pg, fake, dir, reps = {}, px, url;

before(async () => {
  if (skip) return;
  pg = await startPostgres();
  fake = await startFake();
  dir = mkdtempSync(join(tmpdir(), 'hm-unavail-'));
  const env = join(dir, 'init.env');
  writeFileSync(env, `STORE_URL=${pg.url}\n`, { mode: 0o600 });
  const init = spawnSync(HERMES, ['store', 'init', '--env-file', env], { encoding: 'utf8' });
  assert.equal(init.status, 0, init.stderr);
  for (const name of NAMES) {
    reps[name] = await startHermes({ STORE_URL: pg.url, MCP_AUTH_TOKEN: TOKEN, REPLICA_NAME: name,
      REPLICAS: '3', TRUSTED_PROXIES: '127.0.0.1,::1', MCP_PUBLIC_HOSTS: 'mcp.example.com',
      HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '100' });
  }
  const blocks = nginxBlocks('docs/guides/replicas.md');
  assert.equal(blocks.length, 1, 'docs/guides/replicas.md has one nginx block');
  px = await startNginx((port) => substitute(blocks[0], [['listen 443 ssl;', `listen 127.0.0.1:${port};`],
    ...NAMES.map((n) => [GUIDE_ADDR[n], `127.0.0.1:${reps[n].port}`])]));
  url = `${px.base}/mcp`;
});
after(async () => {
  await px?.stop();
  for (const [n, r] of Object.entries(reps)) assert.equal(await r.stop(), 0, `replica ${n}: ${r.proc.stderrText}`);
  await fake?.stop();
  await pg?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

let nextId = 0;
// One tools/call through the block (or to target), in the 2026-07-28 revision or as a 2025
// request without a session: { status, retry (Retry-After), json, text }.
async function call(name, args, { modern = false, target = url } = {}) {
  const body = { jsonrpc: '2.0', id: ++nextId, method: 'tools/call',
    params: { name, arguments: args, ...(modern ? { _meta: modernMeta() } : {}) } };
  const headers = modern ? modernHeaders('tools/call', name) : { ...JSON_HEADERS, 'MCP-Protocol-Version': '2025-11-25' };
  const res = await fetch(target, { method: 'POST', headers: { ...headers, ...AUTH }, body: JSON.stringify(body),
    signal: AbortSignal.timeout(20000) });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, retry: res.headers.get('retry-after'), type: res.headers.get('content-type'), json, text };
}

// What an answer was: 'ok' (a success), 'unavailable' (503 as it must be), or it fails.
function judge(r, what) {
  if (r.status === 200) {
    assert.ok(r.json?.result, `${what}: 200 without a result: ${r.text.slice(0, 300)}`);
    assert.notEqual(r.json.result.isError, true, `${what}: a tool error: ${r.text.slice(0, 300)}`);
    return 'ok';
  }
  assert.equal(r.status, 503, `${what}: HTTP ${r.status}: ${r.text.slice(0, 300)}`);
  assert.match(r.retry ?? '', /^[1-9][0-9]*$/, `${what}: Retry-After ${r.retry}`);
  assert.ok(Number(r.retry) <= 10, `${what}: Retry-After ${r.retry}`);
  assert.match(r.type ?? '', /^application\/json/);
  assert.equal(r.json?.error?.code, -32004, r.text);
  assert.match(r.json.error.message, /^Temporarily unavailable/);
  assert.equal(r.json.error.data?.retryAfter, Number(r.retry), 'data.retryAfter is the header');
  assert.equal(typeof r.json.id, 'number', 'the error carries the request id');
  return 'unavailable';
}

const asyncTask = async (id, text) => {
  const r = await call('hermes_task', { task: `${text} [text=${text}]`, mode: 'async', id });
  assert.equal(r.status, 200, r.text);
  assert.notEqual(r.json.result.isError, true, r.text);
  return r.json.result.structuredContent.run_id;
};

// Rejects if p does not settle in ms: an SDK call must not hang on a 503.
const settles = (p, ms, what) => Promise.race([p,
  sleep(ms).then(() => { throw new Error(`${what} did not settle in ${ms} ms`); })]);

test('PostgreSQL killed under load: 503 with Retry-After or success, no crash, then every call succeeds and a result made meanwhile arrives', { skip }, async () => {
  // Tasks whose results are stored, the load's targets: hermes_result by id, hermes_status by
  // run id, through any replica.
  const targets = [];
  for (let i = 0; i < 3; i++) targets.push({ id: `un-done-${i}`, run: await asyncTask(`un-done-${i}`, `done-${i} [delay=50]`) });
  for (const t of targets) {
    await until(async () => {
      const r = await call('hermes_result', { id: t.id });
      return r.status === 200 && r.json.result.isError !== true;
    }, `${t.id} stored`, 15000);
  }
  const v1 = await connectClient({ url, auth: AUTH }, { name: 'unavail-v1', listTools: true });
  const v2 = await connectV2Client({ url, auth: AUTH }, 'unavail-v2');
  await v2.listTools();

  let phase = 'before';
  const seen = { before: [], down: [], back: [], after: [], edge: [] };
  let load = true;
  const worker = async (w) => {
    for (let k = 0; load; k++) {
      const t = targets[(w + k) % targets.length];
      const modern = (w + k) % 2 === 0;
      const at = phase;
      const r = k % 3 === 2
        ? await call('hermes_status', { run_id: t.run }, { modern })
        : await call('hermes_result', { id: t.id }, { modern });
      // A call under way when the phase changed (one whose query the kill cut) may be either.
      seen[at === phase ? at : 'edge'].push(judge(r, `${at} ${modern ? '2026-07-28' : '2025'} call`));
      await sleep(5);
    }
  };
  const workers = [0, 1, 2, 3].map(worker);
  let killed = false;
  try {
    await sleep(300);
    // A run that ends while the database is away: its follower cannot store its result then.
    await asyncTask('un-late', 'late [delay=1500]');
    phase = 'down'; // a call sent from now on may meet the database gone
    await pg.kill();
    killed = true;
    await until(async () => seen.down.filter((x) => x === 'unavailable').length >= 6, '503s under load', 10000);

    // The SDK clients raise the 503 as an error, without waiting for their timeout.
    const e1 = await settles(v1.callTool({ name: 'hermes_result', arguments: { id: 'un-done-0' } })
      .then(() => null, (e) => e), 15000, 'SDK 1.x callTool');
    assert.ok(e1 instanceof Error, 'SDK 1.x: an error');
    assert.match(`${e1.code} ${e1.message}`, /503/);
    assert.match(e1.message, /-32004|Temporarily unavailable/);
    const e2 = await settles(v2.callTool({ name: 'hermes_result', arguments: { id: 'un-done-0' } })
      .then(() => null, (e) => e), 15000, 'SDK v2 callTool');
    assert.ok(e2 instanceof Error, 'SDK v2: an error');
    assert.match(`${e2.code} ${e2.message}`, /503|-32004|Temporarily unavailable/);

    // Each replica answers directly: a call that needs no task is served, one that does is 503.
    for (const n of NAMES) {
      const plain = await call('list_agents', {}, { target: reps[n].url });
      assert.equal(judge(plain, `list_agents on ${n}`), 'ok');
      const task = await call('hermes_result', { id: 'un-done-1' }, { target: reps[n].url, modern: true });
      assert.equal(judge(task, `hermes_result on ${n}`), 'unavailable');
    }
    // tasks/get (the tasks extension) about a task: the same 503.
    const get = await fetch(reps.c.url, { method: 'POST', headers: { ...modernHeaders('tasks/get', 'un-done-0'), ...AUTH },
      body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tasks/get', params: { taskId: 'un-done-0',
        _meta: modernMeta({ extensions: { 'io.modelcontextprotocol/tasks': {} } }) } }) });
    const getText = await get.text();
    assert.equal(judge({ status: get.status, retry: get.headers.get('retry-after'), type: get.headers.get('content-type'),
      json: JSON.parse(getText), text: getText }, 'tasks/get'), 'unavailable');
    // A new task (no id to load) is refused too, before the agent is asked anything.
    const asked = fake.received().filter((q) => q.method === 'POST').length;
    for (const mode of ['sync', 'async']) {
      const fresh = await call('hermes_task', { task: `never ${mode} [text=never]`, mode }, { target: reps.b.url });
      assert.equal(judge(fresh, `a new ${mode} hermes_task`), 'unavailable');
    }
    assert.equal(fake.received().filter((q) => q.method === 'POST').length, asked, 'the agent was asked nothing');
    // The late run ends while the database is away: its follower cannot store the result.
    await until(() => NAMES.some((n) => /task un-late: run \S+ ended but its result could not be stored/.test(reps[n].proc.stderrText)),
      'the follower to fail to store the late result', 15000);
    await pg.restart();
    killed = false;
    phase = 'back'; // each replica reconnects on its own: 503 or success meanwhile
    await until(async () => {
      for (const n of NAMES) if ((await fetch(`${reps[n].base}/readyz`)).status !== 200) return false;
      return true;
    }, 'every replica ready again', 20000);
    // Ready, and its task store connected again: each replica serves a task call.
    await until(async () => {
      for (const n of NAMES) {
        if (judge(await call('hermes_result', { id: 'un-done-1' }, { target: reps[n].url }), n) !== 'ok') return false;
      }
      return true;
    }, 'every replica serving task calls again', 20000);
    phase = 'after';
    await sleep(500);
  } finally {
    load = false;
    await Promise.all(workers).catch(() => {});
    if (killed) await pg.restart();
  }
  await Promise.all(workers); // a worker's failed judgement fails the test
  assert.ok(seen.before.length > 3 && seen.before.every((x) => x === 'ok'), `before: ${seen.before}`);
  assert.ok(seen.down.filter((x) => x === 'unavailable').length >= 6, 'answered 503 while the database was away');
  for (const n of NAMES) assert.equal(reps[n].proc.exitCode, null, `replica ${n} still runs`);

  // Back: every call succeeds, on every replica (nine in a row through round robin and each
  // replica directly), and the SDK clients call again.
  for (let i = 0; i < 9; i++) {
    const t = targets[i % targets.length];
    assert.equal(judge(await call('hermes_result', { id: t.id }, { modern: i % 2 === 0 }), 'after'), 'ok');
    assert.equal(judge(await call('hermes_status', { run_id: t.run }), 'after'), 'ok');
  }
  for (const n of NAMES) assert.equal(judge(await call('hermes_result', { id: 'un-done-2' }, { target: reps[n].url }), n), 'ok');
  assert.notEqual((await v1.callTool({ name: 'hermes_result', arguments: { id: 'un-done-0' } })).isError, true);
  assert.notEqual((await v2.callTool({ name: 'hermes_result', arguments: { id: 'un-done-0' } })).isError, true);
  assert.ok(seen.after.length > 0 && seen.after.every((x) => x === 'ok'), `after: ${seen.after}`);

  // The run that ended while the database was away: its result arrives, as the agent gave it.
  const late = await until(async () => {
    const r = await call('hermes_result', { id: 'un-late' });
    return r.status === 200 && r.json.result.isError !== true ? r.json.result : null;
  }, 'the late result', 15000);
  assert.equal(late.structuredContent.status, 'completed');
  assert.match(late.structuredContent.summary, /late/);
  await v1.close();
  await v2.close();
});

test('a replica stopped while a result waits for the database: a clean exit, and the run is followed again after', { skip }, async () => {
  const solo = await startHermes({ STORE_URL: pg.url, MCP_AUTH_TOKEN: TOKEN, REPLICA_NAME: 'd',
    HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '100' });
  let killed = false;
  try {
    // Until its task store is connected, the call is 503 (nothing done): sent again.
    const r = await until(async () => {
      const x = await call('hermes_task', { task: 'parting [delay=800] [text=parting]', mode: 'async', id: 'un-parting' },
        { target: solo.url });
      return judge(x, 'hermes_task') === 'ok' ? x : null;
    }, 'the new replica to take the task', 10000);
    assert.equal(r.json.result.structuredContent.status, 'accepted', r.text);
    await pg.kill();
    killed = true;
    await until(() => /task un-parting: run \S+ ended but its result could not be stored/.test(solo.proc.stderrText),
      'the follower to fail to store the result', 10000);
    assert.equal(await solo.stop(), 0, solo.proc.stderrText); // the retry pending: nothing leaks or crashes
    await pg.restart();
    killed = false;
    // The stopped replica's run, never stored, is taken over by a live one.
    const late = await until(async () => {
      const x = await call('hermes_result', { id: 'un-parting' });
      return x.status === 200 && x.json.result.isError !== true ? x.json.result : null;
    }, 'the result through another replica', 20000);
    assert.equal(late.structuredContent.status, 'completed');
    assert.match(late.structuredContent.summary, /parting/);
  } finally {
    if (killed) await pg.restart();
    await solo.stop();
  }
});
