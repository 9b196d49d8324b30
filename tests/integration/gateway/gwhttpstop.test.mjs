// Shutdown with url upstreams: each one's session is ended with DELETE, and the DELETEs go out
// together (one curl multi, 1 s in all) rather than one after another, so upstreams that are slow
// to answer DELETE do not add up. The fake (tests/fakes/fake-upstream.mjs --http
// --delete-delay) records when each DELETE arrives and answers it a second later.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, startHermes, until, jsonLines, freePort, gatewayFile, sdkClient } from '../../lib/lib.mjs';
import { events } from '../../lib/events.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
let dir;
const children = [];

before(() => { dir = mkdtempSync(join(tmpdir(), 'hm-gwhttpstop-')); });
after(() => {
  for (const p of children) p.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function slowDeleteUpstream(name) {
  const port = await freePort();
  const record = join(dir, `${name}.jsonl`);
  const p = spawn(process.execPath, [FAKE, '--http', String(port), '--record', record, '--delete-delay', '1000'],
    { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  p.stderr.on('data', (d) => { err += d; });
  children.push(p);
  await until(() => err.includes(`${port}`), `upstream ${name} listening`, 15000);
  return { port, record };
}

const deletes = (file) => jsonLines(existsSync(file) ? readFileSync(file, 'utf8') : '').filter((l) => l.http === 'DELETE');

test('at shutdown the url upstreams\' session DELETEs are sent at once, not one after another', async () => {
  // Four upstreams, each slow to answer DELETE: one after another would take 4 s or more (1 s
  // each), together about 1 s; the bounds below sit far from both (a loaded, sanitized run).
  const names = ['a', 'b', 'c', 'd'];
  const ups = [];
  for (const n of names) ups.push(await slowDeleteUpstream(n));
  const srv = await startHermes({ GATEWAY_FILE: gatewayFile(dir, 'upstreams:\n' +
    names.map((n, i) => `  ${n}:\n    url: http://127.0.0.1:${ups[i].port}/mcp\n    tools: {include: ["*"]}\n`).join('')) });
  const { client, tools } = await sdkClient(srv);
  for (const n of names) assert.ok(tools[`${n}__echo`], `upstream ${n} is up`);
  await client.close();
  const t0 = Date.now();
  assert.equal(await srv.stop(), 0);
  const took = Date.now() - t0;
  const got = ups.map((u) => deletes(u.record));
  got.forEach((d, i) => {
    assert.equal(d.length, 1, `upstream ${names[i]} got its DELETE`);
    assert.ok(d[0].session, `upstream ${names[i]}'s DELETE carries its session`);
    assert.equal(events(srv, 'upstream_session_ended', { upstream: names[i] }).length, 1);
  });
  const times = got.map((d) => d[0].t);
  const spread = Math.max(...times) - Math.min(...times);
  assert.ok(spread < 900, `the DELETEs arrived within ${spread} ms: sent together (one by one: 1 s apart)`);
  assert.ok(took < 3500, `the server stopped in ${took} ms, not 1 s per upstream (4 s)`);
});

test('a session DELETE whose DNS lookup hangs does not hold the stop past its 1 s', async () => {
  // tests/fakes/slowdns.c, preloaded: *.later.test is 127.0.0.1 until the flag file exists,
  // then each lookup takes 8 s. Without CURLOPT_QUICK_EXIT on the DELETE's handle, freeing it
  // joins the resolver thread: the stop would take the lookup's 8 s.
  const shim = join(dir, 'slowdns.so');
  const cc = spawnSync('cc', ['-shared', '-fPIC', '-O2', '-o', shim, join(ROOT, 'tests/fakes/slowdns.c'), '-ldl'], { encoding: 'utf8' });
  assert.equal(cc.status, 0, cc.stderr);
  const flag = join(dir, 'dns-turns-slow');
  const a = await slowDeleteUpstream('dns');
  const env = { ...process.env, LD_PRELOAD: shim, SLOWDNS_MS: '8000', SLOWDNS_FLAG: flag,
    ASAN_OPTIONS: `${process.env.ASAN_OPTIONS ?? ''}:verify_asan_link_order=0` }; // the shim has no ASan
  const srv = await startHermes({ GATEWAY_FILE: gatewayFile(dir, 'upstreams:\n' +
    `  dns:\n    url: http://up.later.test:${a.port}/mcp\n    tools: {include: ["*"]}\n`, 'dns.yaml') }, { env });
  const { client, tools } = await sdkClient(srv);
  assert.ok(tools.dns__echo, 'the upstream is up (its name resolved then)');
  await client.close();
  writeFileSync(flag, '');
  const t0 = Date.now();
  assert.equal(await srv.stop(), 0);
  const took = Date.now() - t0;
  const [ended] = events(srv, 'upstream_session_ended', { upstream: 'dns' });
  assert.match(ended.line, /no answer to DELETE within 1000 ms/);
  assert.equal(deletes(a.record).length, 0, 'the DELETE never got there');
  assert.ok(took < 5000, `the server stopped in ${took} ms, not after the 8 s lookup`);
});
