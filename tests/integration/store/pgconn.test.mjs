// src/store/pgconn.c against a real PostgreSQL 15 (tests/lib/pg.mjs), driven by
// build/pgconn-drive (tests/drivers/pgconn_drive.c): prepared statements with bound values, a
// batch as one transaction, LISTEN/NOTIFY kept across a reconnect, the in-flight cap, a stalled
// statement, and the database killed and started again under load.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { BUILD } from '../../lib/lib.mjs';
import { startPostgres } from '../../lib/pg.mjs';

const DRIVE = join(BUILD, 'pgconn-drive');
let pg;
const procs = new Set();

before(async () => {
  pg = await startPostgres();
  await pg.psql('CREATE TABLE kv (k text PRIMARY KEY, v text)');
});
after(async () => {
  for (const p of procs) p.kill('SIGKILL');
  await pg?.stop();
});

// The driver on pg's URL: send(line) a command; next(pred) the first event (parsed) matching
// pred not taken yet, within ms.
function drive(...args) {
  return driveUrl(pg.url, ...args);
}

function driveUrl(url, ...args) {
  const proc = spawn(DRIVE, [url, ...args.map(String)], { stdio: ['pipe', 'pipe', 'pipe'] });
  procs.add(proc);
  proc.on('close', () => procs.delete(proc));
  const events = [];
  const waiters = [];
  let buf = '';
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  proc.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      events.push(JSON.parse(buf.slice(0, nl)));
      buf = buf.slice(nl + 1);
      for (const w of [...waiters]) w();
    }
  });
  return {
    events,
    send: (line) => proc.stdin.write(`${line}\n`),
    next(pred, ms = 10000) {
      return new Promise((resolve, reject) => {
        const look = () => {
          const i = events.findIndex(pred);
          if (i < 0) return false;
          waiters.splice(waiters.indexOf(look), 1);
          clearTimeout(timer);
          resolve(events.splice(i, 1)[0]);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(look), 1);
          reject(new Error(`no such event in ${ms} ms; seen ${JSON.stringify(events)}; stderr ${stderr}`));
        }, ms);
        waiters.push(look);
        look();
      });
    },
    // Frees the connection and exits: 0, or the sanitizers' report fails the test.
    async quit() {
      const closed = new Promise((r) => proc.on('close', r));
      proc.stdin.end('quit\n');
      const code = await closed;
      assert.equal(code, 0, `pgconn-drive exited with ${code}: ${stderr}`);
      return stderr;
    },
  };
}
const id = (n) => (e) => e.id === n;
const up = (e) => e.state === 'up';

test('statements with bound values, a batch as one transaction, a failure named', async () => {
  const d = drive();
  await d.next(up);
  const evil = "x');DROP/**/TABLE/**/kv;--";
  d.send(`put ${evil} 1`);
  d.send(`get ${evil}`);
  assert.equal((await d.next(id(1))).status, 'ok');
  assert.deepEqual((await d.next(id(2))).rows, [['1']], 'the value went in as data, not SQL');
  d.send('insert dup 1');
  d.send('insert dup 2');
  assert.equal((await d.next(id(3))).status, 'ok');
  const dup = await d.next(id(4));
  assert.equal(dup.status, 'failed');
  assert.match(dup.error, /duplicate key value violates unique constraint "kv_pkey"/);
  assert.doesNotMatch(dup.error, /\n/);
  d.send('batch 50 b');
  assert.equal((await d.next(id(5))).status, 'ok');
  assert.equal((await pg.psql("SELECT count(*) FROM kv WHERE k LIKE 'b%'")).trim(), '50');
  d.send('batchfail c 3'); // put c, then insert c again: the transaction rolls back whole
  assert.equal((await d.next(id(6))).status, 'failed');
  assert.equal((await pg.psql("SELECT count(*) FROM kv WHERE k = 'c'")).trim(), '0');
  assert.equal((await pg.psql("SELECT to_regclass('kv') IS NOT NULL")).trim(), 't', 'the table is still there');
  await d.quit();
});

test('a statement failing first in a pipelined request aborts the rest of it, not the next request', async () => {
  const d = drive();
  await d.next(up);
  d.send('failfirst ff'); // ids 1 (insert ff), 2 (insert ff again, put, put), 3 (get ff)
  assert.equal((await d.next(id(1))).status, 'ok');
  const two = await d.next(id(2));
  assert.equal(two.status, 'failed');
  assert.deepEqual(two.results, ['error', 'aborted', 'aborted']);
  assert.match(two.error, /duplicate key/);
  const three = await d.next(id(3));
  assert.equal(three.status, 'ok', 'the request pipelined behind it runs');
  assert.deepEqual(three.rows, [['first']]);
  assert.equal((await pg.psql("SELECT count(*) FROM kv WHERE k LIKE 'after-%'")).trim(), '0');
  await d.quit();
});

test('a URL naming two hosts, the first refusing: the connection moves to the second', async () => {
  const two = pg.url.replace('@127.0.0.1:', '@127.0.0.1:1,127.0.0.1:');
  assert.notEqual(two, pg.url);
  const d = driveUrl(two, 100, 3000);
  await d.next(up, 2500); // within one attempt: not a timeout and a retry
  d.send('get x');
  assert.equal((await d.next(id(1))).status, 'ok');
  await d.quit();
});

test('at most QUEUE_MAX requests in flight; the rest are refused at once, not queued', async () => {
  const d = drive(3);
  await d.next(up);
  d.send('sleep 0.5');
  d.send('flood 4'); // ids 2..5: two fit beside the sleep, two do not
  const busy = [await d.next((e) => e.status === 'busy'), await d.next((e) => e.status === 'busy')];
  assert.deepEqual(busy.map((e) => e.id).sort(), [4, 5]);
  assert.equal((await d.next(id(1))).status, 'ok');
  assert.equal((await d.next(id(2))).status, 'ok');
  d.send('get x'); // room again
  assert.equal((await d.next(id(6))).status, 'ok');
  await d.quit();
});

test('a statement stalled past TIMEOUT_MS fails the connection, which comes back', async () => {
  const d = drive(100, 400);
  await d.next(up);
  d.send('sleep 3');
  const t0 = Date.now();
  const stalled = await d.next(id(1));
  assert.equal(stalled.status, 'timeout');
  assert.ok(Date.now() - t0 < 2500, `answered after ${Date.now() - t0} ms`);
  await d.next(up);
  d.send('get x');
  assert.equal((await d.next(id(2))).status, 'ok');
  await d.quit();
});

test('the database killed under load: clean failures, then back, LISTEN again', async () => {
  const d = drive();
  await d.next(up);
  d.send('listen jobs');
  d.send('notify jobs before');
  assert.equal((await d.next((e) => e.notify === 'jobs')).payload, 'before');
  d.send('sleep 5');
  await new Promise((r) => setTimeout(r, 200));
  await pg.kill(); // the server gone at once, as in a crash
  const lost = await d.next(id(2));
  assert.equal(lost.status, 'timeout', 'sent before the crash: it may or may not have run');
  const down = await d.next((e) => e.state === 'down');
  assert.ok(down.why.length > 0);
  d.send('get x');
  const refused = await d.next(id(3), 2000);
  assert.equal(refused.status, 'down', 'no queueing while the database is away');
  await pg.restart();
  await d.next(up, 15000);
  d.send('notify jobs after');
  assert.equal((await d.next((e) => e.notify === 'jobs')).payload, 'after', 'listening again after the reconnect');
  d.send('get x');
  assert.equal((await d.next(id(5))).status, 'ok');
  const stderr = await d.quit();
  assert.doesNotMatch(stderr, /^(WARNING|FATAL):/m, 'the server\'s notices go to our log, not raw to stderr');
});
