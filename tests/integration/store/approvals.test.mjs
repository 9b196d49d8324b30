// With STORE_URL the approval queue is every replica's: a gateway call held (guard: approve)
// on replica A is listed through replica B's control socket (`hermes-mcp approvals
// --env-file B`), approved or denied there, and A releases it within a second (the store's
// NOTIFY). A request whose holder stopped is no longer listed. Real PostgreSQL 15, two real
// servers, the official SDK client, the fake upstream of tests/fakes/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import net from 'node:net';
import { ROOT, startHermes, gatewayFile, sdkClient, hermesCli, pendingApprovals, waitApprovals, until } from '../../lib/lib.mjs';
import { startPostgres, storeInit } from '../../lib/pg.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
let pg, dir, a, b;

async function replica(name) {
  const gw = gatewayFile(dir, 'approvals: {timeout_s: 600}\nupstreams:\n  fake:\n' +
    `    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--calls', join(dir, `calls-${name}`)])}\n` +
    '    tools: {include: [echo], guard: {echo: approve}}\n', `gateway-${name}.yaml`);
  return startHermes({ GATEWAY_FILE: gw, STORE_URL: pg.url });
}
const upstreamCalls = (name) => (existsSync(join(dir, `calls-${name}`))
  ? readFileSync(join(dir, `calls-${name}`), 'utf8').split('\n').filter((l) => l === 'echo') : []);

before(async () => {
  pg = await startPostgres();
  dir = mkdtempSync(join(tmpdir(), 'hm-storeappr-'));
  const init = storeInit(pg, dir);
  assert.equal(init.status, 0, init.stderr);
  a = await replica('a');
  b = await replica('b');
});
after(async () => {
  await a?.stop();
  await b?.stop();
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('held on A, listed and approved through B: A releases the call within a second', async () => {
  const { client } = await sdkClient(a, 'appr-a');
  const call = client.callTool({ name: 'fake__echo', arguments: { message: 'via the store', api_key: 'sk-live-123' } },
    undefined, { timeout: 60000 });
  const [p] = await waitApprovals(b, 1); // B's socket answers from the store
  assert.equal(p.tool, 'fake__echo');
  assert.match(p.summary, /via the store/);
  assert.doesNotMatch(p.summary, /sk-live/);
  assert.deepEqual((await pendingApprovals(a)).map((x) => x.id), [p.id], 'A lists it too');
  const shown = await hermesCli(b, 'approvals', 'show', p.id);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /"message": "via the store"/);
  assert.equal(upstreamCalls('a').length, 0);
  const t0 = Date.now();
  const ok = await hermesCli(b, 'approve', p.id);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, new RegExp(`${p.id} approved`));
  const r = await call;
  const released = Date.now() - t0;
  assert.ok(released < 1000, `A released the call ${released} ms after the approve began`);
  assert.notEqual(r.isError, true, JSON.stringify(r));
  assert.equal(upstreamCalls('a').length, 1, 'the call went upstream from A');
  assert.equal(upstreamCalls('b').length, 0);
  assert.deepEqual(await pendingApprovals(b), []);
  const again = await hermesCli(b, 'approve', p.id);
  assert.equal(again.code, 1, 'decided once');
  assert.match(again.stderr, /no request waits with that id/);
  await client.close();
});

test('denied through B with a reason: A\'s caller hears it', async () => {
  const { client } = await sdkClient(a, 'appr-a');
  const call = client.callTool({ name: 'fake__echo', arguments: { message: 'no' } }, undefined, { timeout: 60000 });
  const [p] = await waitApprovals(b, 1);
  const no = await hermesCli(b, 'deny', p.id, '--reason', 'not on a Friday');
  assert.equal(no.code, 0, no.stderr);
  const r = await call;
  assert.equal(r.isError, true);
  assert.equal(r.structuredContent.error, 'approval_denied');
  assert.match(JSON.stringify(r.structuredContent), /not on a Friday/);
  await client.close();
});

test('a client that half-closes the control socket after its request still gets the answer', async () => {
  const sock = join(dirname(b.envFile), `.${basename(b.envFile).replace(/^\./, '')}.hermes-mcp.sock`);
  const answer = await new Promise((resolve, reject) => {
    const c = net.createConnection(sock);
    let text = '';
    c.on('data', (d) => { text += d; });
    c.on('end', () => resolve(text));
    c.on('error', reject);
    c.end('{"op":"list"}\n'); // the request, then our end of the stream
  });
  assert.deepEqual(JSON.parse(answer), { ok: true, pending: [] });
});

test('a request whose holder stopped cleanly is no longer listed anywhere', async () => {
  const { client } = await sdkClient(a, 'appr-a');
  const call = client.callTool({ name: 'fake__echo', arguments: { message: 'orphan' } }, undefined, { timeout: 60000 })
    .catch((e) => e);
  await waitApprovals(b, 1);
  await a.stop();
  await call;
  assert.deepEqual(await pendingApprovals(b), [], 'its row went with it');
  a = await replica('a2');
});

test('a request whose holder died is unlisted once its heartbeat is old, and cannot be approved', async () => {
  const { client } = await sdkClient(a, 'appr-a');
  const call = client.callTool({ name: 'fake__echo', arguments: { message: 'dead holder' } }, undefined, { timeout: 60000 })
    .catch((e) => e);
  const [p] = await waitApprovals(b, 1);
  await a.stop('SIGKILL');
  await call;
  await until(async () => (await pendingApprovals(b)).length === 0, 'unlisted after 10 s without a heartbeat', 20000);
  const r = await hermesCli(b, 'approve', p.id);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /no request waits with that id/);
  a = await replica('a3');
});
