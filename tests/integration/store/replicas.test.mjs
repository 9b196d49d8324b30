// Three replicas on one real PostgreSQL 15 behind the nginx block of docs/guides/replicas.md,
// taken from the page itself (only its addresses changed), run by Debian's nginx-light; two
// replicas behind the same block edited as the page says:
// - 2025 sessions (MCP_SESSIONS=1): two official SDK 1.x clients at once and mcp-remote, each
//   session answered by the replica that made it (REPLICA_NAME prefixes its id, the block's map
//   routes by it), tools listed and called; a 2026-07-28 client (SDK v2) through the same block;
//   a session whose replica stopped gets 404 from another, and a new session works;
// - limits with REPLICAS=3: RATE_LIMIT_AUTH_PER_MIN and a role's calls_per_min and
//   calls_in_flight hold for the three together (each replica a third), no more;
// - PostgreSQL killed under load: /readyz answers 503 with Retry-After through the block while
//   every other request is still answered, then ready again once it is back;
// - tasks: an async task started through the block is read and cancelled through every replica,
//   and kill -9 of the replica following its run has another take it over;
// - a replica started on an older schema refuses to start and names `store init` (the full
//   check of that message is storecli.test.mjs's); the block serves on without it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ROOT, HERMES, startHermes, startFake, agentEnv, until, sleep, tokensFile, connectV2Client } from '../../lib/lib.mjs';
import { startPostgres, storeInit } from '../../lib/pg.mjs';
import { NGINX, nginxBlocks, substitute, startNginx } from '../../lib/nginx.mjs';

const MCP_REMOTE = join(ROOT, 'tools/mcp-remote/node_modules/mcp-remote/dist/proxy.js');
const TOKEN = randomBytes(32).toString('hex');
const AUTH = { Authorization: `Bearer ${TOKEN}` };
const NAMES = ['a', 'b', 'c'];
const GUIDE_ADDR = { a: '10.0.0.11:8765', b: '10.0.0.12:8765', c: '10.0.0.13:8765' };
const skip = NGINX ? false : 'nginx not installed (scripts/deps.sh installs nginx-light)';

let pg, fake, dir;

before(async () => {
  pg = await startPostgres();
  fake = await startFake();
  dir = mkdtempSync(join(tmpdir(), 'hm-replicas-'));
  const init = storeInit(pg, dir);
  assert.equal(init.status, 0, init.stderr);
});
after(async () => {
  await fake?.stop();
  await pg?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// The guide's block, for three replicas or, edited as the guide says, for two; with the test's
// addresses: each replica's on 127.0.0.1, nginx on port.
function guideBlock(ports, port) {
  const blocks = nginxBlocks('docs/guides/replicas.md');
  assert.equal(blocks.length, 1, 'docs/guides/replicas.md has one nginx block');
  let block = blocks[0];
  if (!ports.c) {
    // "leave out the third server lines, hermes_mcp_c and its map line (and point
    // hermes_mcp_b's backup at 10.0.0.11)"
    block = substitute(block, [['    server 10.0.0.13:8765;\n', ''],
      ['server 10.0.0.13:8765 backup;', 'server 10.0.0.11:8765 backup;']]);
    const lines = block.split('\n');
    const kept = lines.filter((l) => !/^upstream hermes_mcp_c |^\s*~\^c\\\./.test(l));
    assert.equal(lines.length - kept.length, 2, 'hermes_mcp_c and its map line');
    assert.doesNotMatch(kept.join('\n'), /10\.0\.0\.13/);
    block = kept.join('\n');
  }
  const names = NAMES.filter((n) => ports[n]);
  return substitute(block, [['listen 443 ssl;', `listen 127.0.0.1:${port};`],
    ...names.map((n) => [GUIDE_ADDR[n], `127.0.0.1:${ports[n]}`])]);
}

// count (2 or 3) replicas a, b (, c) on pg (one token, REPLICAS=count; env: more settings for
// each), the guide's nginx in front of them.
async function deploy(env = {}, count = 3) {
  const reps = {};
  for (const name of NAMES.slice(0, count)) {
    reps[name] = await startHermes({ STORE_URL: pg.url, MCP_AUTH_TOKEN: TOKEN, REPLICA_NAME: name,
      REPLICAS: String(count), TRUSTED_PROXIES: '127.0.0.1,::1', MCP_PUBLIC_HOSTS: 'mcp.example.com',
      HERMES_ENV_PATH: agentEnv(fake), ...env });
  }
  const ports = Object.fromEntries(Object.entries(reps).map(([n, r]) => [n, r.port]));
  const px = await startNginx((port) => guideBlock(ports, port));
  return {
    reps, px, url: `${px.base}/mcp`,
    async stop() {
      await px.stop();
      for (const r of Object.values(reps)) assert.equal(await r.stop(), 0, r.proc.stderrText);
    },
  };
}

// One JSON-RPC POST through nginx: { status, headers, json, text }.
async function rpc(url, method, params = {}, headers = {}) {
  const res = await fetch(url, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2025-11-25', ...AUTH, ...headers } });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, headers: res.headers, json, text };
}

const metric = async (srv, name) => {
  const text = await (await fetch(`${srv.base}/metrics`, { headers: AUTH })).text();
  return Number(text.match(new RegExp(`^${name} (\\d+)$`, 'm'))?.[1]);
};
const syncTask = (id, text) => ({ name: 'hermes_task', arguments: { task: `${text} [delay=300] [text=${text}]`, mode: 'sync', id } });

for (const count of [2, 3]) test(`${count} replicas: 2025 sessions stay on the replica that made them; SDK 1.x, mcp-remote and a 2026-07-28 client through the block`, { skip }, async () => {
  const d = await deploy({ MCP_SESSIONS: '1' }, count);
  const home = mkdtempSync(join(tmpdir(), 'hm-replicas-remote-'));
  const clients = [];
  try {
    // Two session clients connecting at once: initialize goes round robin.
    for (const name of ['one', 'two']) {
      const transport = new StreamableHTTPClientTransport(new URL(d.url), { requestInit: { headers: AUTH } });
      clients.push({ name, transport, client: new Client({ name, version: '1' }) });
    }
    await Promise.all(clients.map((c) => c.client.connect(c.transport)));
    const prefixes = clients.map((c) => {
      assert.match(c.transport.sessionId, count === 2 ? /^[ab]\.[0-9a-f]{64}$/ : /^[abc]\.[0-9a-f]{64}$/,
        'the session id names its replica');
      return c.transport.sessionId[0];
    });
    assert.notEqual(prefixes[0], prefixes[1], 'the two sessions were made on two replicas');
    for (const n of Object.keys(d.reps)) {
      assert.equal(await metric(d.reps[n], 'hermes_mcp_sessions'), prefixes.filter((p) => p === n).length,
        `replica ${n} holds its sessions and no other`);
    }
    // Each lists and calls, both at once, several times: every request of a session reaches its
    // replica (anywhere else it would be 404), and each gets its own answer.
    for (const { client } of clients) {
      assert.ok((await client.listTools()).tools.some((t) => t.name === 'hermes_task'));
    }
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(clients.map(({ client, name }) =>
        client.callTool(syncTask(`rep-${name}-${round}`, `answer-${name}-${round}`))));
      results.forEach((r, i) => {
        assert.equal(r.isError, false, JSON.stringify(r));
        assert.match(r.structuredContent.summary, new RegExp(`answer-${clients[i].name}-${round}`));
      });
    }
    // A made-up id naming replica a reaches a, which knows no such session: 404, nothing run.
    const hostile = await rpc(d.url, 'ping', {}, { 'Mcp-Session-Id': "a.'); DROP TABLE hm_replica; --" });
    assert.equal(hostile.status, 404, hostile.text);
    assert.equal(await pg.psql("SELECT to_regclass('hm_replica') IS NOT NULL"), 't');

    // mcp-remote (its default transport, a 2025 session) through the same block.
    const remote = new Client({ name: 'desktop-like', version: '1' });
    const rt = new StdioClientTransport({ command: process.execPath,
      args: [MCP_REMOTE, d.url, '--header', 'Authorization:${HERMES_AUTH_HEADER}'],
      env: { PATH: process.env.PATH, HOME: home, MCP_REMOTE_CONFIG_DIR: join(home, '.mcp-auth'),
        HERMES_AUTH_HEADER: `Bearer ${TOKEN}` }, stderr: 'pipe' });
    let stderr = '';
    rt.stderr?.on('data', (x) => { stderr += x; });
    try {
      await remote.connect(rt);
      assert.ok((await remote.listTools()).tools.some((t) => t.name === 'hermes_task'));
      for (let i = 0; i < 2; i++) {
        const r = await remote.callTool(syncTask(`rep-remote-${i}`, `remote-${i}`));
        assert.equal(r.isError, false, JSON.stringify(r));
        assert.match(r.structuredContent.summary, new RegExp(`remote-${i}`));
      }
    } catch (e) {
      throw new Error(`${e.message}\nmcp-remote stderr:\n${stderr}`);
    } finally {
      await remote.close();
    }
    assert.ok(!stderr.includes(TOKEN), 'mcp-remote never printed the token');

    // A 2026-07-28 client: stateless, any replica answers each request.
    const v2 = await connectV2Client({ url: d.url, auth: AUTH }, 'modern');
    try {
      assert.ok((await v2.listTools()).tools.some((t) => t.name === 'hermes_task'));
      for (let i = 0; i < 3; i++) {
        const r = await v2.callTool(syncTask(`rep-v2-${i}`, `modern-${i}`));
        assert.equal(r.isError, false, JSON.stringify(r));
        assert.match(r.structuredContent.summary, new RegExp(`modern-${i}`));
      }
    } finally {
      await v2.close();
    }

    // The replica of the first session stops: its session is gone, and another replica says so
    // (404, what tells a client to start a new session); a new session works.
    const gone = clients[0];
    const stopped = d.reps[prefixes[0]];
    assert.equal(await stopped.stop(), 0);
    const r = await rpc(d.url, 'ping', {}, { 'Mcp-Session-Id': gone.transport.sessionId });
    assert.equal(r.status, 404, r.text);
    assert.match(r.text, /Session not found/);
    const again = new Client({ name: 'again', version: '1' });
    const at = new StreamableHTTPClientTransport(new URL(d.url), { requestInit: { headers: AUTH } });
    await again.connect(at);
    assert.notEqual(at.sessionId[0], prefixes[0]);
    const ra = await again.callTool(syncTask('rep-again', 'again'));
    assert.equal(ra.isError, false, JSON.stringify(ra));
    await again.close();
    // The other session is untouched.
    const rb = await clients[1].client.callTool(syncTask('rep-two-after', 'two-after'));
    assert.equal(rb.isError, false, JSON.stringify(rb));
  } finally {
    for (const { client } of clients) await client.close().catch(() => {});
    await d.stop();
    rmSync(home, { recursive: true, force: true });
  }
});

test('REPLICAS=3: the request limit and a role\'s calls a minute and in flight hold for the three together', { skip }, async () => {
  const metered = randomBytes(32).toString('hex');
  const parallel = randomBytes(32).toString('hex');
  const sha = (t) => createHash('sha256').update(t).digest('hex');
  const file = tokensFile(dir, {}, `  - name: metered\n    sha256: ${sha(metered)}\n` +
    '    scopes: [hermes:read]\n    limits: {calls_per_min: 9}\n' +
    `  - name: parallel\n    sha256: ${sha(parallel)}\n` +
    '    scopes: [hermes:read, hermes:task]\n    limits: {calls_in_flight: 3}\n');
  const d = await deploy({ RATE_LIMIT_AUTH_PER_MIN: '30', TOKENS_FILE: file });
  try {
    // 45 requests with one credential from one client address: round robin gives each replica
    // 15, each allows 10 (30 / 3): 30 in all, as one server with RATE_LIMIT_AUTH_PER_MIN=30.
    const t0 = Date.now();
    const statuses = [];
    for (let i = 0; i < 45; i++) {
      const r = await rpc(d.url, 'ping', {}, { 'X-Forwarded-For': '198.51.100.7' });
      statuses.push(r.status);
      if (r.status === 429) assert.ok(Number(r.headers.get('retry-after')) >= 1);
    }
    const elapsed = Date.now() - t0;
    // A third of 30 a minute refills one request in 6 s: none if the burst took less.
    const refill = Math.floor(elapsed / 6000) * 3;
    const ok = statuses.filter((s) => s === 200).length;
    assert.ok(ok >= 30 && ok <= 30 + refill, `${ok} of 45 allowed in ${elapsed} ms (limit 30)`);
    assert.equal(statuses.filter((s) => s === 429).length, 45 - ok);
    for (const n of NAMES) {
      const h = await (await fetch(`${d.reps[n].base}/health`)).json();
      assert.ok(h.rate_limited >= 5 - refill / 3, `replica ${n} refused its share: ${h.rate_limited}`);
    }
    assert.match(d.reps.a.proc.stderrText, /this replica's share: divided by REPLICAS/);

    // The role's 9 calls a minute: 3 on each replica; 12 calls, 9 allowed, the rest busy.
    const results = [];
    for (let i = 0; i < 12; i++) {
      const r = await rpc(d.url, 'tools/call', { name: 'whoami', arguments: {} }, { Authorization: `Bearer ${metered}` });
      assert.equal(r.status, 200, r.text);
      results.push(r.json.result);
    }
    const allowed = results.filter((x) => !x.isError).length;
    assert.equal(allowed, 9, JSON.stringify(results.map((x) => x.structuredContent?.error ?? 'ok')));
    for (const x of results.filter((y) => y.isError)) assert.equal(x.structuredContent.error, 'busy');

    // The role's 3 calls in flight: 1 on each replica; 4 slow calls at once, one replica gets
    // two, and refuses its second: 3 run, as on one server with calls_in_flight 3.
    const slow = await Promise.all([0, 1, 2, 3].map((i) => rpc(d.url, 'tools/call',
      { name: 'hermes_task', arguments: { task: `slow ${i} [delay=1500]`, mode: 'sync', id: `rep-par-${i}` } },
      { Authorization: `Bearer ${parallel}` })));
    const outcomes = slow.map((r) => {
      assert.equal(r.status, 200, r.text);
      return r.json.result.isError ? r.json.result.structuredContent.error : r.json.result.structuredContent.status;
    }).sort();
    assert.deepEqual(outcomes, ['busy', 'completed', 'completed', 'completed']);
  } finally {
    await d.stop();
  }
});

test('PostgreSQL killed under load: /readyz 503 with Retry-After through the block, requests answered, then ready again', { skip }, async () => {
  const d = await deploy();
  const readyz = async () => {
    const res = await fetch(`${d.px.base}/readyz`);
    return { status: res.status, retry: res.headers.get('retry-after'), body: await res.json() };
  };
  // Three in a row through round robin: one from each replica.
  const allReady = async (want) => {
    for (let i = 0; i < 3; i++) {
      const r = await readyz();
      if (r.status !== want) return null;
    }
    return true;
  };
  let load = true, killed = false;
  const answered = [];
  const worker = async () => {
    while (load) {
      const r = await rpc(d.url, 'tools/list');
      answered.push(r.status);
      await sleep(5);
    }
  };
  try {
    await until(() => allReady(200), 'every replica ready', 15000);
    assert.deepEqual((await readyz()).body.store, 'up');
    const workers = [worker(), worker(), worker()];
    await sleep(300);
    await pg.kill();
    killed = true;
    await until(() => allReady(503), 'every replica to say its store is down', 15000);
    const down = await readyz();
    assert.equal(down.body.store, 'down');
    assert.equal(down.body.status, 'not_ready');
    assert.ok(Number(down.retry) >= 1 && Number(down.retry) <= 5, `Retry-After: ${down.retry}`);
    const during = answered.length;
    await sleep(500);
    assert.ok(answered.length > during, 'requests are still answered while the database is away');
    await pg.restart();
    killed = false;
    await until(() => allReady(200), 'every replica ready again', 20000);
    load = false;
    await Promise.all(workers);
    assert.ok(answered.length > 20, `${answered.length} requests under load`);
    assert.deepEqual([...new Set(answered)], [200], 'every request of the load was answered 200');
    for (const n of NAMES) assert.equal(d.reps[n].proc.exitCode, null, `replica ${n} still runs`);
  } finally {
    load = false;
    if (killed) await pg.restart(); // for the tests after this one
    await d.stop();
  }
});

test('a replica on an older schema refuses to start and names store init; the block serves on', { skip }, async () => {
  const d = await deploy();
  try {
    await pg.psql('CREATE DATABASE older');
    const url = pg.url.replace(/\/[^/]*$/, '/older');
    const env = join(dir, 'older.env');
    writeFileSync(env, `STORE_URL=${url}\nMCP_PORT=0\nMCP_AUTH_TOKEN=${TOKEN}\nREPLICA_NAME=c\nREPLICAS=3\n`, { mode: 0o600 });
    assert.equal(spawnSync(HERMES, ['store', 'init', '--env-file', env]).status, 0);
    await pg.psql('DELETE FROM hm_schema WHERE version >= 2', { db: 'older' });
    // Replica c is replaced by one started on that database.
    assert.equal(await d.reps.c.stop(), 0);
    const r = spawnSync(HERMES, ['serve', '--env-file', env], { encoding: 'utf8', timeout: 20000 });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /schema is at version 1, this hermes-mcp needs \d+: run hermes-mcp store init --env-file/);
    // nginx passes c's turn to the others: every request is answered.
    for (let i = 0; i < 9; i++) {
      const x = await rpc(d.url, 'tools/list');
      assert.equal(x.status, 200, x.text);
    }
  } finally {
    await d.stop();
  }
});

// Every replica's tools/call count (all tools, all outcomes), from its /metrics.
const toolCalls = async (srv) => {
  const text = await (await fetch(`${srv.base}/metrics`, { headers: AUTH })).text();
  return [...text.matchAll(/^hermes_mcp_rpc_requests_total\{method="tools\/call"[^}]*\} (\d+)$/gm)]
    .reduce((n, m) => n + Number(m[1]), 0);
};

test('tasks through the block: an async task is read and cancelled through every replica; kill -9 of its follower: another takes the run over', { skip }, async () => {
  const d = await deploy({ HERMES_POLL_MS: '100' }, 3);
  const v1 = new Client({ name: 'tasks-v1', version: '1' });
  let v2;
  try {
    await v1.connect(new StreamableHTTPClientTransport(new URL(d.url), { requestInit: { headers: AUTH } }));
    v2 = await connectV2Client({ url: d.url, auth: AUTH }, 'tasks-v2');
    await v1.listTools();
    await v2.listTools();
    const before = await Promise.all(Object.values(d.reps).map(toolCalls));
    const acc = await v1.callTool({ name: 'hermes_task', arguments: { task: 'through [delay=1200]', mode: 'async', id: 'nx-1' } });
    assert.equal(acc.isError, false, JSON.stringify(acc));
    const runId = acc.structuredContent.run_id;
    // Round robin: the status and result calls land on every replica, and each knows the task.
    for (let i = 0; i < 3; i++) {
      const st = await v2.callTool({ name: 'hermes_status', arguments: { run_id: runId } });
      assert.equal(st.isError, false, JSON.stringify(st));
      assert.equal(st.structuredContent.task_id, 'nx-1');
    }
    await until(async () => (await v2.callTool({ name: 'hermes_result', arguments: { id: 'nx-1' } })).isError === false,
      'the result through the block', 10000);
    const after = await Promise.all(Object.values(d.reps).map(toolCalls));
    after.forEach((n, i) => assert.ok(n > before[i], `replica ${NAMES[i]} answered tool calls about the task`));
    const r = await v1.callTool({ name: 'hermes_result', arguments: { id: 'nx-1' } });
    assert.equal(r.structuredContent.status, 'completed');

    const acc2 = await v2.callTool({ name: 'hermes_task', arguments: { task: 'long [delay=20000]', mode: 'async', id: 'nx-2' } });
    assert.equal(acc2.isError, false, JSON.stringify(acc2));
    const cancel = await v1.callTool({ name: 'hermes_cancel', arguments: { id: 'nx-2' } });
    assert.equal(cancel.isError, false, JSON.stringify(cancel));
    await until(async () => {
      const res = await v2.callTool({ name: 'hermes_result', arguments: { id: 'nx-2' } });
      return res.isError === false && res.structuredContent.status === 'cancelled';
    }, 'the cancelled result through the block', 10000);

    // The replica following a run is killed: another takes it over, the result comes through
    // the block (calls that nginx sent to the dead replica meanwhile fail and are retried).
    const acc3 = await v1.callTool({ name: 'hermes_task', arguments: { task: 'orphan [delay=1500]', mode: 'async', id: 'nx-3' } });
    assert.equal(acc3.isError, false, JSON.stringify(acc3));
    const follower = (await pg.psql("SELECT follower FROM hm_task WHERE id = 'nx-3'")).trim();
    const [name, victim] = Object.entries(d.reps).find(([, s]) => follower.includes(`-${s.proc.pid}-`));
    const gone = new Promise((res) => victim.proc.once('close', res));
    victim.proc.kill('SIGKILL');
    await gone;
    delete d.reps[name];
    await until(async () => {
      try {
        const res = await v2.callTool({ name: 'hermes_result', arguments: { id: 'nx-3' } });
        return res.isError === false && res.structuredContent.status === 'completed';
      } catch { return false; }
    }, 'the result of the run taken over', 20000);
    assert.notEqual((await pg.psql("SELECT coalesce(follower, 'none') FROM hm_task WHERE id = 'nx-3'")).trim(), follower);
  } finally {
    await v1.close();
    await v2?.close();
    await d.stop();
  }
});
