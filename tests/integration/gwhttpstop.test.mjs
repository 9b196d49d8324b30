// Shutdown with url upstreams: each one's session is ended with DELETE, and the DELETEs go out
// together (one curl multi, 1 s in all) rather than one after another, so two upstreams that are
// slow to answer DELETE do not add up. The fake (tests/fakes/fake-upstream.mjs --http
// --delete-delay) records when each DELETE arrives and answers it a second later.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, startHermes, until, jsonLines, freePort, gatewayFile, sdkClient } from './lib.mjs';

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
  const a = await slowDeleteUpstream('a');
  const b = await slowDeleteUpstream('b');
  const srv = await startHermes({ GATEWAY_FILE: gatewayFile(dir, 'upstreams:\n' +
    `  a:\n    url: http://127.0.0.1:${a.port}/mcp\n    tools: {include: ["*"]}\n` +
    `  b:\n    url: http://127.0.0.1:${b.port}/mcp\n    tools: {include: ["*"]}\n`) });
  const { client, tools } = await sdkClient(srv);
  assert.ok(tools.a__echo && tools.b__echo, 'both upstreams are up');
  await client.close();
  const t0 = Date.now();
  assert.equal(await srv.stop(), 0);
  const took = Date.now() - t0;
  const [da, db] = [deletes(a.record), deletes(b.record)];
  assert.equal(da.length, 1, 'upstream a got its DELETE');
  assert.equal(db.length, 1, 'upstream b got its DELETE');
  assert.ok(da[0].session && db[0].session, 'each with its session');
  const gap = Math.abs(da[0].t - db[0].t);
  assert.ok(gap < 500, `the DELETEs arrived ${gap} ms apart: sent together`);
  assert.ok(took < 1800, `the server stopped in ${took} ms, not 1 s per upstream`);
});
