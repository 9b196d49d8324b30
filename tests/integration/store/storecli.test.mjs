// STORE_URL with a real PostgreSQL 15: `hermes-mcp store init` creates the schema (again: a
// no-op; two at once: each step once), `store status` reports it and the replicas, a server
// refuses a database without its schema (or with an older one) and names `store init`, and a
// running server is a replica there with a heartbeat, gone from the list at a clean stop.
// STORE_URL holding a password is refused without echoing it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERMES, startHermes, sleep, until } from '../../lib/lib.mjs';
import { startPostgres } from '../../lib/pg.mjs';

// The schema version this binary makes (src/store/storeschema.h).
const V = 7;

let pg;
before(async () => { pg = await startPostgres(); });
after(async () => { await pg?.stop(); });

// Runs hermes-mcp with args; { code, out, err }.
function cli(args) {
  return new Promise((resolve) => {
    const p = spawn(HERMES, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('close', (code) => resolve({ code, out, err }));
  });
}

// An env file for a database of pg (a fresh one per test: CREATE DATABASE).
let dbs = 0;
async function envFor(lines = {}) {
  const db = `t${++dbs}`;
  await pg.psql(`CREATE DATABASE ${db}`);
  const dir = mkdtempSync(join(tmpdir(), 'hm-storecli-'));
  const url = pg.url.replace(/\/[^/]*$/, `/${db}`);
  const file = join(dir, 'env');
  const all = { STORE_URL: url, ...lines };
  writeFileSync(file, Object.entries(all).map(([k, v]) => `${k}=${v}`).join('\n') + '\n', { mode: 0o600 });
  return { db, url, file, dir, done: () => rmSync(dir, { recursive: true, force: true }) };
}

test('store init makes the schema once; status says where it stands', async () => {
  const e = await envFor();
  let r = await cli(['store', 'status', '--env-file', e.file]);
  assert.equal(r.code, 1);
  assert.match(r.out, /not initialised: run hermes-mcp store init --env-file/);
  r = await cli(['store', 'init', '--env-file', e.file]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /schema version 1: .*replicas/);
  assert.match(r.out, /schema version 2: .*approval queue/);
  assert.match(r.out, /schema version 3: tasks/);
  assert.match(r.out, new RegExp(`the schema is at version ${V} \\(was 0\\)`));
  r = await cli(['store', 'init', '--env-file', e.file]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, new RegExp(`at version ${V} already`));
  r = await cli(['store', 'status', '--env-file', e.file, '--json']);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(JSON.parse(r.out), { schema: V, binary_schema: V, current: true, replicas: [] });
  assert.equal((await pg.psql('SELECT count(*) FROM hm_schema', { db: e.db })).trim(), String(V));
  e.done();
});

test('two store init at once apply each step once', async () => {
  const e = await envFor();
  const rs = await Promise.all([1, 2, 3].map(() => cli(['store', 'init', '--env-file', e.file])));
  for (const r of rs) assert.equal(r.code, 0, r.err);
  assert.equal(rs.filter((r) => /was 0/.test(r.out)).length, 1, rs.map((r) => r.out).join('|'));
  assert.equal((await pg.psql('SELECT count(*) FROM hm_schema', { db: e.db })).trim(), String(V));
  e.done();
});

test('a server refuses a database without its schema, an older or a newer one, and says what to do', async () => {
  const e = await envFor({ MCP_PORT: '0', MCP_AUTH_TOKEN: 'a'.repeat(64) });
  let r = await cli(['serve', '--env-file', e.file]);
  assert.equal(r.code, 2);
  assert.match(r.err, /has no hermes-mcp schema yet: run hermes-mcp store init --env-file/);
  assert.equal((await cli(['store', 'init', '--env-file', e.file])).code, 0);
  // A database left at version 1 (as an older hermes-mcp's init left it):
  await pg.psql(
    "DO $$ DECLARE t text; BEGIN FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'public'" +
      " AND tablename NOT IN ('hm_schema', 'hm_replica') LOOP EXECUTE 'DROP TABLE IF EXISTS ' || t || ' CASCADE'; END LOOP; END $$;" +
      ' DELETE FROM hm_schema WHERE version >= 2',
    { db: e.db },
  );
  r = await cli(['serve', '--env-file', e.file]);
  assert.equal(r.code, 2);
  assert.match(r.err, new RegExp(`schema is at version 1, this hermes-mcp needs ${V}: run hermes-mcp store init --env-file`));
  r = await cli(['store', 'status', '--env-file', e.file]);
  assert.equal(r.code, 1);
  assert.match(r.out, new RegExp(`schema version 1, older than this hermes-mcp's \\(${V}\\): run hermes-mcp store init`));
  r = await cli(['store', 'init', '--env-file', e.file]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, new RegExp(`schema version 2: .*approval queue[^]*at version ${V} \\(was 1\\)`));
  assert.equal((await pg.psql("SELECT to_regclass('hm_approval') IS NOT NULL", { db: e.db })).trim(), 't');
  await pg.psql(`UPDATE hm_schema SET version = 99 WHERE version = ${V}`, { db: e.db });
  r = await cli(['serve', '--env-file', e.file]);
  assert.equal(r.code, 2);
  assert.match(r.err, new RegExp(`newer than this hermes-mcp's \\(${V}\\): upgrade hermes-mcp`));
  e.done();
});

test('a database that cannot be reached: serve and store say so and stop', async () => {
  const e = await envFor({ MCP_PORT: '0', MCP_AUTH_TOKEN: 'a'.repeat(64) });
  const dead = e.url.replace(/:(\d+)\//, ':9/');
  writeFileSync(e.file, `STORE_URL=${dead}\nMCP_PORT=0\nMCP_AUTH_TOKEN=${'a'.repeat(64)}\n`, { mode: 0o600 });
  for (const args of [['serve'], ['store', 'status'], ['store', 'init']]) {
    const r = await cli([...args, '--env-file', e.file]);
    assert.equal(r.code, 1, `${args}: ${r.err}`);
    assert.match(r.err, /cannot connect to STORE_URL: .*(refused|failed)/);
  }
  e.done();
});

test('running servers are replicas with a heartbeat, gone at a clean stop', async () => {
  const e = await envFor();
  assert.equal((await cli(['store', 'init', '--env-file', e.file])).code, 0);
  const a = await startHermes({ STORE_URL: e.url });
  const b = await startHermes({ STORE_URL: e.url });
  const status = async () => JSON.parse((await cli(['store', 'status', '--env-file', e.file, '--json'])).out);
  try {
    await until(async () => (await status()).replicas.length === 2, 'two replicas registered');
    const first = await pg.psql('SELECT seen_at FROM hm_replica ORDER BY id', { db: e.db });
    await sleep(2500);
    const later = await pg.psql('SELECT seen_at FROM hm_replica ORDER BY id', { db: e.db });
    assert.notEqual(later, first, 'the heartbeats moved');
    for (const x of (await status()).replicas) {
      assert.ok(x.seen_s <= 3, JSON.stringify(x));
      assert.match(x.id, /^.+-\d+-[0-9a-f]{12}$/);
    }
    await a.stop();
    await until(async () => (await status()).replicas.length === 1, 'the stopped server left');
    // The database restarted under a running replica: it comes back to the list.
    await pg.psql('DELETE FROM hm_replica', { db: e.db });
    await pg.kill();
    await pg.restart();
    await until(async () => (await status()).replicas.length === 1, 'the replica joined again', 15000);
  } finally {
    await a.stop();
    await b.stop();
    e.done();
  }
});

test('without a loadable libpq: serve and store name the library and the package', async () => {
  const e = await envFor({ MCP_PORT: '0', MCP_AUTH_TOKEN: 'a'.repeat(64) });
  writeFileSync(join(e.dir, 'libpq.so.5'), 'not a shared library\n');
  for (const args of [['serve'], ['store', 'init']]) {
    const r = await new Promise((resolve) => {
      const p = spawn(HERMES, [...args, '--env-file', e.file], { env: { ...process.env, LD_LIBRARY_PATH: e.dir } });
      let err = '';
      p.stderr.on('data', (d) => { err += d; });
      p.on('close', (code) => resolve({ code, err }));
    });
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, /libpq\.so\.5 cannot be loaded \(.*\); install libpq5/);
  }
  e.done();
});

test('STORE_URL with a password in it is refused, the password never shown', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-storecli-'));
  const file = join(dir, 'env');
  const secret = 'sup3r-s3cret-pw';
  for (const url of [`postgresql://hermes:${secret}@127.0.0.1:5432/db`, `postgresql://hermes@127.0.0.1/db?password=${secret}`]) {
    writeFileSync(file, `STORE_URL=${url}\nMCP_PORT=0\nMCP_AUTH_TOKEN=${'a'.repeat(64)}\n`, { mode: 0o600 });
    for (const args of [['serve'], ['store', 'status']]) {
      const r = await cli([...args, '--env-file', file]);
      assert.equal(r.code, 2);
      assert.match(r.err, /STORE_URL must not hold a password: put it in STORE_PASSWORD/);
      assert.ok(!r.err.includes(secret) && !r.out.includes(secret));
    }
  }
  writeFileSync(file, `STORE_URL=postgresql://hermes@127.0.0.1/db\nSTORE_PASSWORD=${secret}\n`);
  chmodSync(file, 0o644);
  const r = await cli(['store', 'status', '--env-file', file]);
  assert.equal(r.code, 2);
  assert.match(r.err, /holds a secret but is readable by others/);
  rmSync(dir, { recursive: true, force: true });
});
