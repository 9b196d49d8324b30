// The PostgreSQL harness itself (tests/lib/pg.mjs), proved without hermes-mcp: a cluster of
// Debian's PostgreSQL 15 of its own (run as nobody when the tests run as root), on 127.0.0.1 and a
// free port, with the durability settings the store is tested with; psql writes and reads back;
// two clusters at once are two; restart and crash recovery keep committed rows; stop() frees the
// port and the directory; a test process that forgets stop(), is ended by a signal or is killed
// leaves no server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { startPostgres, PG_USER, PG_DB } from '../../lib/pg.mjs';
import { until } from '../../lib/lib.mjs';

const ROOT_USER = process.getuid() === 0;
const PG_MJS = new URL('../../lib/pg.mjs', import.meta.url).pathname;

// Whether a TCP connection to 127.0.0.1:port is refused (true) or accepted (false).
function refused(port) {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    s.on('connect', () => { s.destroy(); resolve(false); });
    s.on('error', (e) => (e.code === 'ECONNREFUSED' ? resolve(true) : reject(e)));
  });
}

// The real user id a process runs as (Linux /proc).
const uidOf = (pid) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)[1]);
const alive = (pid) => { try { process.kill(pid, 0); return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8')); } catch { return false; } };

test('a cluster of its own: as nobody under root, 127.0.0.1 only, durable, a table written and read back', async () => {
  const pg = await startPostgres();
  try {
    assert.equal(pg.url, `postgresql://${PG_USER}@127.0.0.1:${pg.port}/${PG_DB}`);
    assert.equal(await refused(pg.port), false, 'the port takes connections');
    // initdb and postgres refuse root: under root the cluster is nobody's.
    const owner = ROOT_USER ? 65534 : process.getuid();
    assert.equal(uidOf(pg.pid), owner, 'the postmaster runs as the cluster owner');
    assert.equal(statSync(pg.dataDir).uid, owner);
    assert.equal(statSync(pg.dataDir).mode & 0o777, 0o700);
    assert.ok(existsSync(join(pg.dir, `.s.PGSQL.${pg.port}`)), 'the unix socket is in the cluster directory');
    // The settings the store's durability is tested with are PostgreSQL's own defaults.
    const show = await pg.psql('SHOW listen_addresses; SHOW fsync; SHOW synchronous_commit; SHOW full_page_writes; SELECT current_user, current_database(), current_setting(\'server_version_num\')::int / 10000');
    assert.deepEqual(show.split('\n'), ['127.0.0.1', 'on', 'on', 'on', `${PG_USER}|${PG_DB}|15`]);
    await pg.psql(`CREATE TABLE runs (id text PRIMARY KEY, body jsonb NOT NULL);
      INSERT INTO runs VALUES ('r1', '{"state":"done","n":1}'), ('r2', '{"state":"working"}');`);
    assert.equal(await pg.psql("SELECT id, body->>'state' FROM runs ORDER BY id"), 'r1|done\nr2|working');
    // A failing statement rejects, with PostgreSQL's message.
    await assert.rejects(pg.psql("INSERT INTO runs VALUES ('r1', '{}')"), /duplicate key value violates unique constraint/);
    await assert.rejects(pg.psql('SELECT * FROM nothing_here'), /relation "nothing_here" does not exist/);
    // psql reaches the cluster the URL names, and only that one.
    assert.equal(await pg.psql('SELECT count(*) FROM runs'), '2');
    assert.equal(await pg.psql("SELECT id FROM runs WHERE id = 'none'"), '', 'no row: empty');
  } finally {
    await pg.stop();
  }
  assert.equal(await refused(pg.port), true, 'after stop() the port refuses');
  assert.equal(existsSync(pg.dir), false, 'after stop() the directory is gone');
  await pg.stop(); // twice is harmless
});

test('two clusters at once: two ports, two data directories, a table in one is not in the other', async () => {
  const [a, b] = await Promise.all([startPostgres(), startPostgres()]);
  try {
    assert.notEqual(a.port, b.port);
    assert.notEqual(a.dataDir, b.dataDir);
    assert.equal(a.template, b.template, 'both copied from the one initdb of this process');
    await a.psql("CREATE TABLE t (v text); INSERT INTO t VALUES ('a')");
    await b.psql("CREATE TABLE t (v text); INSERT INTO t VALUES ('b')");
    assert.equal(await a.psql('SELECT v FROM t'), 'a');
    assert.equal(await b.psql('SELECT v FROM t'), 'b');
    await a.stop();
    assert.equal(await refused(a.port), true);
    assert.equal(await b.psql('SELECT v FROM t'), 'b', 'stopping one leaves the other running');
    // A cluster started after these has none of their tables: the template stays as initdb made it.
    const c = await startPostgres();
    try {
      assert.equal(await c.psql("SELECT count(*) FROM pg_tables WHERE tablename = 't'"), '0');
    } finally {
      await c.stop();
    }
  } finally {
    await a.stop();
    await b.stop();
  }
});

test('restart keeps the data; after kill() (SIGKILL of every process) crash recovery keeps what was committed', async () => {
  const pg = await startPostgres();
  try {
    const { port, url } = pg;
    await pg.psql("CREATE TABLE results (id int PRIMARY KEY, v text); INSERT INTO results VALUES (1, 'before restart')");
    const pid1 = pg.pid;
    await pg.restart();
    assert.notEqual(pg.pid, pid1, 'a new postmaster');
    assert.equal(alive(pid1), false);
    assert.equal(pg.port, port, 'the same port');
    assert.equal(pg.url, url, 'the same URL');
    assert.equal(await pg.psql('SELECT v FROM results'), 'before restart');
    // Committed with synchronous_commit on: durable once COMMIT returned, whatever happens next.
    await pg.psql("INSERT INTO results VALUES (2, 'before the crash')");
    const pid2 = pg.pid;
    await pg.kill();
    assert.equal(alive(pid2), false, 'the postmaster is dead');
    assert.equal(await refused(port), true, 'nothing listens after kill()');
    await pg.restart();
    assert.match(pg.log(), /database system was interrupted|was not properly shut down/, 'crash recovery ran');
    assert.equal(await pg.psql('SELECT id, v FROM results ORDER BY id'), '1|before restart\n2|before the crash');
  } finally {
    await pg.stop();
  }
});

test('durable: false turns fsync, synchronous_commit and full_page_writes off (benches only)', async () => {
  const pg = await startPostgres({ durable: false, settings: { max_connections: 20 } });
  try {
    assert.equal(await pg.psql('SHOW fsync; SHOW synchronous_commit; SHOW full_page_writes; SHOW max_connections'),
      'off\noff\noff\n20');
  } finally {
    await pg.stop();
  }
});

// Runs a Node process that starts a cluster, prints what it started, then ends (how: 'exit'
// ends the script normally without stop(), 'hang' waits to be killed).
async function childCluster(how) {
  const script = `import { startPostgres } from ${JSON.stringify(PG_MJS)};
    const pg = await startPostgres();
    console.log(JSON.stringify({ port: pg.port, pid: pg.pid, dir: pg.dir, template: pg.template }));
    if (${JSON.stringify(how)} === 'hang') setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal })));
  const started = await until(() => (out.includes('\n') ? JSON.parse(out) : child.exitCode !== null && { err }),
    'the child cluster', 60000);
  assert.ok(started.port, `the child started no cluster: ${err}`);
  return { child, started, exited };
}

test('a test process that ends without stop(): the cluster is shut down and its directory removed', async () => {
  const { started, exited } = await childCluster('exit');
  assert.deepEqual(await exited, { code: 0, signal: null }, 'the process ends on its own: the cluster does not hold it');
  assert.equal(alive(started.pid), false, 'the postmaster is gone');
  assert.equal(await refused(started.port), true);
  assert.equal(existsSync(started.dir), false, 'the directory is removed');
  assert.equal(existsSync(dirname(started.template)), false, 'the template is removed');
});

test('a test process ended by SIGTERM (a runner\'s timeout): the cluster is shut down and its directory removed', async () => {
  const { child, started, exited } = await childCluster('hang');
  assert.equal(await refused(started.port), false, 'running while the process lives');
  child.kill('SIGTERM');
  assert.deepEqual(await exited, { code: 128 + 15, signal: null }, 'the process exits as SIGTERM would end it');
  assert.equal(alive(started.pid), false, 'the postmaster is gone');
  assert.equal(await refused(started.port), true);
  assert.equal(existsSync(started.dir), false, 'the directory is removed');
  assert.equal(existsSync(dirname(started.template)), false, 'the template is removed');
});

test('a test process killed with SIGKILL: the kernel tells the postmaster, which shuts down', async () => {
  const { child, started, exited } = await childCluster('hang');
  try {
    assert.equal(await refused(started.port), false, 'running while the process lives');
    child.kill('SIGKILL');
    assert.equal((await exited).signal, 'SIGKILL');
    await until(async () => !alive(started.pid) && await refused(started.port), 'the orphaned postmaster to stop', 20000);
    assert.match(readFileSync(join(started.dir, 'postgres.log'), 'utf8'), /received fast shutdown request/);
  } finally {
    if (alive(started.pid)) process.kill(started.pid, 'SIGKILL');
    rmSync(started.dir, { recursive: true, force: true });
    rmSync(dirname(started.template), { recursive: true, force: true });
  }
});
