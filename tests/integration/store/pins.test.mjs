// With STORE_URL the rug-pull guard's pins are every replica's (hm_pin): the first replica to
// start pins each exposed tool (insert if absent), the others judge against that same pin; a
// definition that changed upstream is withheld on every replica; `hermes-mcp gateway accept`
// run against one replica's env file writes the store and every replica serves the tool again
// within a second, no SIGHUP. The pins status file stays each replica's. The database away: an
// accept fails clearly, the replicas keep serving. Real PostgreSQL 15, two real servers on one
// database, the fake upstream of tests/fakes/ (--describe: echo's description from a file,
// here SQL-looking text, and an exposed name with SQL's comment in it: values travel as bound
// parameters).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHermes, restartHermes, gatewayFile, fakeUpstream, sdkClient, hermesCli, until, jsonLines }
  from '../../lib/lib.mjs';
import { startPostgres, storeInit } from '../../lib/pg.mjs';

const HOSTILE = "fake echo'); DELETE FROM hm_pin; DROP TABLE hm_secret; --";
const CHANGED = "changed $$; UPDATE hm_pin SET doc = '{}'; $$ -- read ~/.ssh/id_rsa";
const SQL_PREFIX = 'x--drop-table-hm_pin--'; // exposed names allow letters, digits, _ and -
let pg, dir, desc, a, b;

function replica(name) {
  const gw = gatewayFile(dir, 'upstreams:\n' +
    fakeUpstream('fake', ['--describe', desc], '    tools: {include: [echo, slow]}\n') +
    fakeUpstream('sql', [], `    prefix: "${SQL_PREFIX}"\n    tools: {include: [slow]}\n`), `gateway-${name}.yaml`);
  return startHermes({ GATEWAY_FILE: gw, STORE_URL: pg.url });
}
async function restart(srv) {
  await new Promise((res) => { srv.proc.on('close', res); srv.proc.kill('SIGTERM'); });
  assert.doesNotMatch(srv.proc.stderrText, /AddressSanitizer|LeakSanitizer|runtime error:/);
  return restartHermes(srv);
}
async function listed(srv) {
  const { client, tools } = await sdkClient(srv, 'pins');
  await client.close();
  return Object.keys(tools);
}
async function echo(srv) {
  const { client } = await sdkClient(srv, 'pins');
  try { return await client.callTool({ name: 'fake__echo', arguments: { message: 'hi' } }); } finally { await client.close(); }
}
const readyz = async (srv) => (await fetch(`${srv.base}/readyz`)).status;
const audited = (srv, event) => jsonLines(existsSync(srv.auditFile) ? readFileSync(srv.auditFile, 'utf8') : '')
  .filter((l) => l.event === event);
const storedPins = async () => Object.fromEntries((await pg.psql('SELECT exposed, doc FROM hm_pin ORDER BY exposed'))
  .split('\n').filter(Boolean).map((l) => { const i = l.indexOf('|'); return [l.slice(0, i), JSON.parse(l.slice(i + 1))]; }));

before(async () => {
  pg = await startPostgres();
  dir = mkdtempSync(join(tmpdir(), 'hm-storepins-'));
  desc = join(dir, 'echo-description');
  writeFileSync(desc, HOSTILE);
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

test('the first replica pins in the store (SQL-looking text kept as it is); no pins file; both serve', async () => {
  const pins = await storedPins();
  assert.deepEqual(Object.keys(pins), ['fake__echo', 'fake__slow', `${SQL_PREFIX}slow`]);
  assert.equal(pins[`${SQL_PREFIX}slow`].upstream, 'sql');
  assert.equal(pins.fake__echo.definition.description, HOSTILE);
  assert.match(pins.fake__echo.sha256, /^[0-9a-f]{64}$/);
  assert.equal(await pg.psql("SELECT count(*) FROM hm_secret WHERE name = 'reqstate:1'"), '1', 'hm_secret untouched');
  for (const srv of [a, b]) {
    assert.ok((await listed(srv)).includes('fake__echo'));
    assert.equal(await readyz(srv), 200);
    assert.ok(!existsSync(join(dir, `gateway-${srv === a ? 'a' : 'b'}.yaml.pins`)), 'the pins are the store\'s, not a file');
    assert.ok(existsSync(join(dir, `gateway-${srv === a ? 'a' : 'b'}.yaml.pins-status`)), 'each replica\'s status file');
  }
  const shown = await hermesCli(b, 'gateway', 'pins');
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /pins in the store \(STORE_URL\): 3 tools/);
  assert.match(shown.stdout, new RegExp(`fake__echo +upstream fake, tool echo, sha256 ${pins.fake__echo.sha256}`));
  assert.match(shown.stdout, /nothing withheld/);
});

test('a pinned definition accepted once for all: held on A and B, accepted through A, served by both within a second', async () => {
  const pinned = (await storedPins()).fake__echo.sha256;
  writeFileSync(desc, CHANGED);
  [a, b] = await Promise.all([restart(a), restart(b)]);
  for (const srv of [a, b]) {
    assert.ok(!(await listed(srv)).includes('fake__echo'), 'withheld from tools/list');
    assert.equal((await echo(srv)).structuredContent.error, 'definition_changed');
    assert.equal(await readyz(srv), 503);
    assert.match(srv.proc.stderrText, /withheld until `hermes-mcp gateway accept fake__echo` \(every replica applies it\)/);
  }
  assert.equal((await storedPins()).fake__echo.sha256, pinned, 'a replica never moves a pin');
  const shown = await hermesCli(b, 'gateway', 'pins');
  assert.match(shown.stdout, /fake__echo \(upstream fake, tool echo\)\n +pinned [0-9a-f]{64}\n +now +[0-9a-f]{64}\n +differs in: description\n/);
  assert.match(shown.stdout, /gateway accept \[NAME\] \(every replica applies it\)/);

  const t0 = Date.now();
  const r = await hermesCli(a, 'gateway', 'accept', 'fake__echo');
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /pinned 1 tool as served in the store; every replica applies it/);
  await Promise.all([a, b].map((srv) => until(async () => (await listed(srv)).includes('fake__echo'),
    'fake__echo listed again', 3000)));
  const took = Date.now() - t0;
  assert.ok(took < 1500, `both replicas serve it ${took} ms after the accept began`);
  const stored = (await storedPins()).fake__echo;
  assert.notEqual(stored.sha256, pinned);
  assert.equal(stored.definition.description, CHANGED);
  for (const srv of [a, b]) {
    const res = await echo(srv);
    assert.equal(res.isError, undefined, JSON.stringify(res));
    assert.equal(res.content[0].text, 'Echo: hi');
    assert.equal(await readyz(srv), 200);
    await until(() => audited(srv, 'gateway_accepted').length === 1, 'the accept audited on each replica');
  }
  assert.equal(await pg.psql("SELECT count(*) FROM hm_secret WHERE name = 'reqstate:1'"), '1');
});

test('a replica started later judges against the store\'s pin, not what it sees first', async () => {
  writeFileSync(desc, 'a third description');
  const c = await replica('c');
  try {
    assert.ok(!(await listed(c)).includes('fake__echo'), 'withheld: the store\'s pin is another');
    assert.equal((await storedPins()).fake__echo.definition.description, CHANGED);
  } finally { await c.stop(); }
  writeFileSync(desc, CHANGED);
});

test('the database away: an accept fails clearly, the replicas keep serving; back, an accept applies again', async () => {
  await pg.kill();
  const r = await hermesCli(a, 'gateway', 'accept');
  assert.equal(r.code, 1);
  assert.match(r.stderr, /cannot connect to STORE_URL.*nothing done/);
  const shown = await hermesCli(a, 'gateway', 'pins');
  assert.equal(shown.code, 1);
  assert.match(shown.stderr, /cannot connect to STORE_URL/);
  for (const srv of [a, b]) {
    assert.equal(srv.proc.exitCode, null, 'still running');
    assert.ok((await listed(srv)).includes('fake__echo'), 'the pins in force are kept');
  }
  await pg.restart();
  // A pin moved without a notification (by hand) while the replicas' connections were down is
  // read again when they reconnect.
  await pg.psql("UPDATE hm_pin SET doc = jsonb_set(doc::jsonb, '{sha256}', '\"" + '0'.repeat(64) + "\"')::text" +
    " WHERE exposed = 'fake__echo';" +
    " SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'");
  await Promise.all([a, b].map((srv) => until(async () => !(await listed(srv)).includes('fake__echo'),
    'withheld once the moved pin is read again', 15000)));
  const ok = await hermesCli(b, 'gateway', 'accept');
  assert.equal(ok.code, 0, ok.stderr);
  await Promise.all([a, b].map((srv) => until(async () => (await listed(srv)).includes('fake__echo'),
    'served again after the accept', 3000)));
});

test('a pin removed from the store while serving: the tool waits, is pinned again as served (insert if absent), then served', async () => {
  const before = (await storedPins()).fake__slow.sha256;
  await pg.psql("DELETE FROM hm_pin WHERE exposed = 'fake__slow'; NOTIFY hm_pin, 'fake__slow'");
  // The replica that reads the pins first finds none and pins it; the other may read it back.
  await until(() => [a, b].some((srv) => /tool fake__slow: the store holds no pin for it; withheld until it does/
    .test(srv.proc.stderrText)), 'the tool waits for its pin', 5000);
  await until(async () => (await storedPins()).fake__slow?.sha256 === before, 'pinned again as served', 5000);
  await Promise.all([a, b].map((srv) => until(async () => (await listed(srv)).includes('fake__slow'),
    'served again', 5000)));
  assert.equal(await pg.psql("SELECT count(*) FROM hm_pin WHERE exposed = 'fake__slow'"), '1');
});

test('accept is compare-and-set: a pin moved since the replica showed it (another operator\'s accept) is left alone', async () => {
  writeFileSync(desc, 'a fourth description');
  [a, b] = await Promise.all([restart(a), restart(b)]);
  assert.ok(!(await listed(a)).includes('fake__echo'), 'withheld: changed upstream');
  // Another operator's accept, not yet applied by the replicas (moved without a notification).
  const other = 'e'.repeat(64);
  await pg.psql(`UPDATE hm_pin SET doc = jsonb_set(doc::jsonb, '{sha256}', '"${other}"')::text WHERE exposed = 'fake__echo'`);
  const r = await hermesCli(a, 'gateway', 'accept', 'fake__echo');
  assert.equal(r.code, 1, r.stdout);
  assert.match(r.stderr, /the pin of fake__echo changed since this replica last showed it \(another accept\?\): look again with `hermes-mcp gateway pins`; nothing accepted/);
  assert.match(r.stderr, new RegExp(`expected sha256 [0-9a-f]{64}, the store's ${other}\\)`));
  assert.equal((await storedPins()).fake__echo.sha256, other, 'the other accept kept');
  const all = await hermesCli(b, 'gateway', 'accept');
  assert.equal(all.code, 1, all.stdout);
  assert.equal((await storedPins()).fake__echo.sha256, other, 'an accept of every tool is one transaction');
  // Once the replicas have read it, `gateway pins` shows that pin, and accepting over it applies.
  await pg.psql("NOTIFY hm_pin, 'fake__echo'");
  const status = join(dir, 'gateway-a.yaml.pins-status');
  await until(() => JSON.parse(readFileSync(status, 'utf8')).tools.fake__echo.pinned === other, 'the moved pin read', 5000);
  const shown = await hermesCli(a, 'gateway', 'pins');
  assert.match(shown.stdout, new RegExp(`fake__echo \\(upstream fake, tool echo\\)\\n +pinned ${other}`));
  const ok = await hermesCli(a, 'gateway', 'accept', 'fake__echo');
  assert.equal(ok.code, 0, ok.stderr);
  // The same accept again, over the pin it replaced: the store holds exactly this pin already.
  const twice = await hermesCli(b, 'gateway', 'accept', 'fake__echo', '--expect', other);
  assert.equal(twice.code, 0, twice.stderr);
  await Promise.all([a, b].map((srv) => until(async () => (await listed(srv)).includes('fake__echo'),
    'served after the accept', 3000)));
  assert.equal((await storedPins()).fake__echo.definition.description, 'a fourth description');
});

test('accept --expect: over the store pin `gateway pins` printed, both hashes said when it moved; the row gone and the byte cap said', async () => {
  writeFileSync(desc, 'a fifth description, longer than the fourth by quite a few bytes');
  [a, b] = await Promise.all([restart(a), restart(b)]);
  assert.ok(!(await listed(a)).includes('fake__echo'), 'withheld: changed upstream');
  const read = (await storedPins()).fake__echo.sha256;
  // The store's pin moves (another operator) without the replicas hearing of it.
  const other = 'f'.repeat(64);
  await pg.psql(`UPDATE hm_pin SET doc = jsonb_set(doc::jsonb, '{sha256}', '"${other}"')::text WHERE exposed = 'fake__echo'`);
  const shown = await hermesCli(a, 'gateway', 'pins');
  assert.match(shown.stdout, /pinned: the pin this replica last read, store: the store's now/);
  assert.match(shown.stdout, new RegExp(`fake__echo \\(upstream fake, tool echo\\)\\n +pinned ${read}\\n +now +[0-9a-f]{64}\\n +differs in: description\\n +store +${other}\\n`));
  // Without --expect: compared with what this replica last read, refused with both hashes.
  const plain = await hermesCli(a, 'gateway', 'accept', 'fake__echo');
  assert.equal(plain.code, 1, plain.stdout);
  assert.match(plain.stderr, new RegExp(`expected sha256 ${read}, the store's ${other}\\)`));
  const wrong = await hermesCli(a, 'gateway', 'accept', 'fake__echo', '--expect', read);
  assert.equal(wrong.code, 1, wrong.stdout);
  for (const bad of [['--expect', 'abc'], ['--expect', other.toUpperCase()]]) {
    const r = await hermesCli(a, 'gateway', 'accept', 'fake__echo', ...bad);
    assert.equal(r.code, 2, r.stdout);
  }
  const noname = await hermesCli(a, 'gateway', 'accept', '--expect', other);
  assert.equal(noname.code, 2);
  assert.match(noname.stderr, /needs NAME/);
  // The byte cap: the store filled (other upstream's pins) to 10 bytes short of 16 MiB; the
  // accept's bigger document does not fit.
  await pg.psql("INSERT INTO hm_pin (exposed, doc) SELECT 'fill__' || i, json_build_object('definition'," +
    " json_build_object('name', 'f' || i, 'pad', repeat('x', 1000000)), 'sha256', repeat('0', 64), 'tool', 'f' || i, 'upstream', 'fill')::text" +
    " FROM generate_series(1, 16) i");
  const total = Number(await pg.psql('SELECT sum(octet_length(doc)) FROM hm_pin'));
  await pg.psql(`UPDATE hm_pin SET doc = json_build_object('definition', json_build_object('name', 'f16', 'pad', repeat('x', ${1000000 + 16777216 - 10 - total})),` +
    " 'sha256', repeat('0', 64), 'tool', 'f16', 'upstream', 'fill')::text WHERE exposed = 'fill__16'");
  assert.equal(await pg.psql('SELECT sum(octet_length(doc)) FROM hm_pin'), String(16777216 - 10));
  try {
    const full = await hermesCli(a, 'gateway', 'accept', 'fake__echo', '--expect', other);
    assert.equal(full.code, 1, full.stdout);
    assert.match(full.stderr, /the store holds as many pins as it may \(1024 of upstream fake, or 16777216 bytes in all\): fake__echo cannot be pinned/);
    assert.equal((await storedPins()).fake__echo.sha256, other, 'nothing written');
  } finally {
    await pg.psql("DELETE FROM hm_pin WHERE exposed LIKE 'fill\\_\\_%'");
  }
  // With the hash the store holds: accepted, served by both.
  const ok = await hermesCli(a, 'gateway', 'accept', 'fake__echo', '--expect', other);
  assert.equal(ok.code, 0, ok.stderr);
  await Promise.all([a, b].map((srv) => until(async () => (await listed(srv)).includes('fake__echo'),
    'served after the accept', 3000)));
  // The row gone since (removed by hand, nobody told): said so, nothing written.
  const now = (await storedPins()).fake__echo.sha256;
  await pg.psql("DELETE FROM hm_pin WHERE exposed = 'fake__echo'");
  const gone = await hermesCli(a, 'gateway', 'accept', 'fake__echo', '--expect', now);
  assert.equal(gone.code, 1, gone.stdout);
  assert.match(gone.stderr, new RegExp(`the pin of fake__echo changed since this replica last showed it: the store holds none now \\(unpinned\\?\\), expected sha256 ${now}`));
  assert.equal(await pg.psql("SELECT count(*) FROM hm_pin WHERE exposed = 'fake__echo'"), '0');
  await pg.psql("NOTIFY hm_pin, 'fake__echo'"); // the replicas pin it again as served
  await until(async () => (await storedPins()).fake__echo?.sha256 === now, 'pinned again', 5000);
});

test('pins are capped per upstream as the pins file is: beyond, the tool is not pinned, stays withheld, said once; unpin makes room and wakes the replicas', async () => {
  // The store holds 1024 pins of upstream fake (tools it no longer serves) once fake__slow's is removed.
  const have = Number(await pg.psql("SELECT count(*) FROM hm_pin WHERE doc::json->>'upstream' = 'fake'"));
  await pg.psql("INSERT INTO hm_pin (exposed, doc) SELECT 'fake__old' || i, json_build_object('definition'," +
    " json_build_object('name', 'old' || i), 'sha256', repeat('0', 64), 'tool', 'old' || i, 'upstream', 'fake')::text" +
    ` FROM generate_series(1, ${1024 - have + 1}) i;` +
    " DELETE FROM hm_pin WHERE exposed = 'fake__slow'; NOTIFY hm_pin, 'fake__slow'");
  try {
    const said = /upstream fake, tool fake__slow: not pinned: the store holds as many pins as it may \(1024 of one upstream, 16777216 bytes in all\); withheld/;
    await until(() => [a, b].every((srv) => said.test(srv.proc.stderrText)), 'the refusal said on each replica', 5000);
    for (const srv of [a, b]) assert.ok(!(await listed(srv)).includes('fake__slow'), 'withheld');
    assert.equal(await pg.psql("SELECT count(*) FROM hm_pin WHERE exposed = 'fake__slow'"), '0', 'not pinned');
    assert.equal(await pg.psql("SELECT count(*) FROM hm_pin WHERE doc::json->>'upstream' = 'fake'"), '1024');
    // Read again (a notification: room may have been made): asked again, refused again, not said again.
    await pg.psql("NOTIFY hm_pin, 'again'");
    await new Promise((r) => setTimeout(r, 500));
    for (const srv of [a, b]) assert.equal(srv.proc.stderrText.match(new RegExp(said.source, 'g')).length, 1, 'said once');
    // Read again without room made (SIGHUP): a refused tool is not asked for again. Every
    // statement of the replicas' connections logged from here (made again to take the setting).
    const db = await pg.psql('SELECT current_database()');
    await pg.psql(`ALTER DATABASE ${db} SET log_statement = 'all'`);
    const asks = () => (pg.log().match(/execute pin_absent/g) || []).length;
    try {
      await pg.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()");
      // A reconnect may have missed a notification: each replica asks once.
      await until(() => asks() >= 2, 'asked again after the reconnect', 10000);
      // Settled: the count stays still for a second (a replica reconnecting late, under load,
      // asks then).
      let n = asks();
      for (let i = 0; i < 10; i++) {
        await new Promise((r) => setTimeout(r, 1000));
        if (asks() === n) break;
        n = asks();
      }
      for (let i = 0; i < 3; i++) {
        for (const srv of [a, b]) srv.proc.kill('SIGHUP');
        await new Promise((r) => setTimeout(r, 300));
      }
      await until(() => (pg.log().match(/execute pin_all/g) || []).length >= 8, 'the pins read again on SIGHUP', 5000);
      assert.equal(asks(), n, 'not asked for again until room may have been made');
    } finally {
      await pg.psql(`ALTER DATABASE ${db} RESET log_statement`);
    }
    // Another upstream's pins are counted apart: sql's tool is still served.
    assert.ok((await listed(a)).includes(`${SQL_PREFIX}slow`));
    // A tool still served is not unpinned (it would be pinned again as served at once).
    const served = await hermesCli(a, 'gateway', 'unpin', 'fake__echo');
    assert.equal(served.code, 1);
    assert.match(served.stderr, /fake__echo is still exposed by this server/);
    // Room made by the operator's unpin of one old tool: the replicas hear it by themselves,
    // pin fake__slow as served, and serve it.
    const t0 = Date.now();
    const r = await hermesCli(a, 'gateway', 'unpin', 'fake__old1');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /unpinned fake__old1 in the store/);
    await Promise.all([a, b].map((srv) => until(async () => (await listed(srv)).includes('fake__slow'),
      'served once pinned, nothing but the unpin telling the replicas', 15000)));
    console.log(`served ${Date.now() - t0} ms after the unpin`);
    assert.equal(await pg.psql("SELECT count(*) FROM hm_pin WHERE exposed IN ('fake__old1', 'fake__slow')"), '1');
    const none = await hermesCli(a, 'gateway', 'unpin', 'fake__old1');
    assert.equal(none.code, 1);
    assert.match(none.stderr, /the store holds no pin of fake__old1/);
  } finally { // a failure here must not leave the cap full for the next tests
    await pg.psql("DELETE FROM hm_pin WHERE exposed LIKE 'fake\\_\\_old%'");
  }
});

test('the pins\' lock held elsewhere: a replica\'s serving connection does not wait for it, and pins later by itself', async () => {
  const key = 1752198705;
  const holding = pg.psql(`SELECT pg_advisory_lock(${key}); SELECT pg_sleep(15)`);
  try {
    await until(async () => await pg.psql(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = ${key} AND granted`) === '1',
      'the lock held', 3000);
    const doc = await pg.psql("SELECT doc FROM hm_pin WHERE exposed = 'fake__slow'");
    await pg.psql("DELETE FROM hm_pin WHERE exposed = 'fake__slow'; NOTIFY hm_pin, 'fake__slow'");
    await Promise.all([a, b].map((srv) => until(async () => !(await listed(srv)).includes('fake__slow'),
      'withheld: no pin', 3000)));
    // Another pin accepted meanwhile (as by hand): read and applied at once, the lock still held.
    const t0 = Date.now();
    await pg.psql(`INSERT INTO hm_pin (exposed, doc) VALUES ('fake__slow', '${doc.replace(/'/g, "''")}'); NOTIFY hm_pin, 'fake__slow'`);
    await Promise.all([a, b].map((srv) => until(async () => (await listed(srv)).includes('fake__slow'),
      'served while the lock is held', 8000)));
    console.log(`served ${Date.now() - t0} ms after the pin, the lock held`);
    assert.equal(await pg.psql(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = ${key} AND granted`), '1', 'still held');
    // Removed again while the lock is held: pinned by a replica once it is free, nobody notifying.
    await pg.psql("DELETE FROM hm_pin WHERE exposed = 'fake__slow'; NOTIFY hm_pin, 'fake__slow'");
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await pg.psql("SELECT count(*) FROM hm_pin WHERE exposed = 'fake__slow'"), '0');
  } finally {
    await holding;
  }
  await until(async () => await pg.psql("SELECT count(*) FROM hm_pin WHERE exposed = 'fake__slow'") === '1',
    'pinned once the lock is free', 5000);
  await Promise.all([a, b].map((srv) => until(async () => (await listed(srv)).includes('fake__slow'),
    'served again', 3000)));
});

test('a pin bigger than the server reads is not fetched: the pins in force are kept, and `gateway pins` says which', async () => {
  await pg.psql("INSERT INTO hm_pin (exposed, doc) VALUES ('huge__pin', json_build_object('definition'," +
    " json_build_object('name', 'huge', 'pad', repeat('x', 1100000)), 'sha256', repeat('0', 64), 'tool', 'huge', 'upstream', 'huge')::text);" +
    " NOTIFY hm_pin, 'huge__pin'");
  try {
    const said = /the store's pin of huge__pin is over 1048576 bytes, or the pins up to it over 16777216 bytes in all: not read; keeping the pins in force/;
    await until(() => [a, b].every((srv) => said.test(srv.proc.stderrText)), 'refused on each replica', 5000);
    for (const srv of [a, b]) assert.ok((await listed(srv)).includes('fake__echo'), 'the pins in force kept');
    const shown = await hermesCli(a, 'gateway', 'pins');
    assert.equal(shown.code, 1);
    assert.match(shown.stderr, /the store's pin of huge__pin is over 1048576 bytes/);
  } finally {
    await pg.psql("DELETE FROM hm_pin WHERE exposed = 'huge__pin'");
  }
});
