// From files to PostgreSQL and back: `store migrate --from-files` copies a task directory made
// by a real server (files store; sync and async tasks run by the fake agent) into the database,
// then two servers with STORE_URL read every task through the official SDK client; a second
// migrate finds everything there; one killed mid-way on 3000 tasks is finished by running it
// again; a broken task is refused and the rest copied; `store export` writes the files back,
// byte for byte. Real PostgreSQL 15.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERMES, startHermes, startFake, agentEnv, connectClient, until, startOAuth, registerPublic, approveConsent,
  pkce, rpc } from '../../lib/lib.mjs';
import { startPostgres } from '../../lib/pg.mjs';

const RECORDS = ['request.json', 'run.json', 'result.json'];
const SQLISH = "x'); DROP TABLE hm_task; -- \\\" $1 $$ '' OR '1'='1";
const token = randomBytes(32).toString('hex');
let pg, dir, fake, tasksDir, agent, openRun;
const made = {}; // task id -> { result (structuredContent of hermes_result), run_id }
const sql = async (q) => (await pg.psql(q)).trim();
const call = (client, name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 60000 });

// An env file for the store commands: this database, the given task directory.
function envFor(tasks) {
  const f = join(dir, `store-${randomBytes(4).toString('hex')}.env`);
  writeFileSync(f, `STORE_URL=${pg.url}\nTASKS_DIR=${tasks}\n`, { mode: 0o600 });
  return f;
}
const store = (args, env) => spawnSync(HERMES, ['store', ...args, '--env-file', env], { encoding: 'utf8' });
const migrate = (tasks) => store(['migrate', '--from-files'], envFor(tasks));
const summary = (r) => {
  const m = r.stdout.match(/store migrate: done: (\d+) copied, (\d+) already there, (\d+) refused/);
  assert.ok(m, `a summary line: ${r.stdout} ${r.stderr}`);
  return { copied: +m[1], there: +m[2], refused: +m[3] };
};

before(async () => {
  pg = await startPostgres();
  dir = mkdtempSync(join(tmpdir(), 'hm-migrate-'));
  const init = store(['init'], envFor(join(dir, 'unused')));
  assert.equal(init.status, 0, init.stderr);
  fake = await startFake();
  agent = agentEnv(fake);
  // The files store, as a deployment has it today: sync and async tasks, one with SQL in it.
  tasksDir = join(dir, 'tasks');
  const files = await startHermes({ MCP_AUTH_TOKEN: token, HERMES_ENV_PATH: agent, TASKS_DIR: tasksDir,
    HERMES_POLL_MS: '100' });
  files.auth = { Authorization: `Bearer ${token}` };
  const c = await connectClient(files, { name: 'files', listTools: true });
  for (const [id, task] of [['sync-1', 'plain sync'], ['sync-sql', SQLISH], ['sync-2', 'another sync']]) {
    const r = await call(c, 'hermes_task', { task, mode: 'sync', id });
    assert.notEqual(r.isError, true, JSON.stringify(r));
  }
  for (const id of ['async-1', 'async-2']) {
    const r = await call(c, 'hermes_task', { task: `async ${id} [delay=200]`, mode: 'async', id });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    made[id] = { run_id: r.structuredContent.run_id };
    assert.ok(made[id].run_id);
  }
  // A run still under way when the server stops: its run.json without a result.
  const open = await call(c, 'hermes_task', { task: 'still running [delay=4000]', mode: 'async', id: 'async-open' });
  assert.notEqual(open.isError, true, JSON.stringify(open));
  openRun = open.structuredContent.run_id;
  for (const id of ['sync-1', 'sync-sql', 'sync-2', 'async-1', 'async-2']) {
    await until(async () => (await call(c, 'hermes_result', { id })).isError !== true, `the result of ${id}`, 15000);
    made[id] = { ...made[id], result: (await call(c, 'hermes_result', { id })).structuredContent };
  }
  await c.close();
  await files.stop();
  assert.ok(!existsSync(join(tasksDir, 'async-open', 'result.json')), 'the run was under way when the server stopped');
});
after(async () => {
  await fake?.stop();
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('migrate, then every task is read through either of two replicas; a second migrate finds all there', async () => {
  const r = migrate(tasksDir);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(summary(r), { copied: 6, there: 0, refused: 0 });
  assert.match(r.stdout, /store migrate: 6\/6: 6 copied/);
  // The text is the file's, unchanged; a run with its result has no follower.
  const req = await sql("SELECT request FROM hm_task WHERE id = 'sync-sql'");
  assert.equal(req, readFileSync(join(tasksDir, 'sync-sql', 'request.json'), 'utf8').trim());
  assert.equal(await sql("SELECT to_regclass('hm_task') IS NOT NULL"), 't');
  assert.equal(await sql(`SELECT run_id FROM hm_task WHERE id = 'async-1'`), made['async-1'].run_id);
  assert.equal(await sql("SELECT string_agg(id, ',') FROM hm_task WHERE follower IS NOT NULL OR finished_at IS NULL"), 'async-open');

  const replica = async () => {
    const s = await startHermes({ STORE_URL: pg.url, MCP_AUTH_TOKEN: token, HERMES_ENV_PATH: agent,
      TASKS_DIR: join(dir, 'replica-files'), HERMES_POLL_MS: '100' });
    s.auth = { Authorization: `Bearer ${token}` };
    return s;
  };
  const [a, b] = await Promise.all([replica(), replica()]);
  try {
    const ca = await connectClient(a, { name: 'on-a', listTools: true });
    const cb = await connectClient(b, { name: 'on-b', listTools: true });
    for (const [id, t] of Object.entries(made)) {
      for (const c of [ca, cb]) {
        const got = await call(c, 'hermes_result', { id });
        assert.notEqual(got.isError, true, `${id}: ${JSON.stringify(got)}`);
        assert.deepEqual(got.structuredContent, t.result, id);
      }
      if (t.run_id) {
        const st = await call(cb, 'hermes_status', { run_id: t.run_id });
        assert.notEqual(st.isError, true, JSON.stringify(st));
        assert.equal(st.structuredContent.task_id, id);
      }
    }
    assert.ok(made['sync-sql'].result.summary.includes(SQLISH), 'the SQL-looking text read back as text');
    // The run under way when the files server stopped is followed by a replica: its result arrives.
    const st = await call(ca, 'hermes_status', { run_id: openRun });
    assert.equal(st.structuredContent.task_id, 'async-open', JSON.stringify(st));
    await until(async () => (await call(cb, 'hermes_result', { id: 'async-open' })).isError !== true, 'the taken-over result', 15000);
    assert.equal((await call(ca, 'hermes_result', { id: 'async-open' })).structuredContent.status, 'completed');
    // A migrated id is taken on every replica.
    const dup = await call(ca, 'hermes_task', { task: 'something else', mode: 'sync', id: 'sync-1' });
    assert.equal(dup.isError, true);
    await Promise.all([ca.close(), cb.close()]);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }

  const again = migrate(tasksDir);
  assert.equal(again.status, 0, again.stderr);
  assert.deepEqual(summary(again), { copied: 0, there: 6, refused: 0 });
  assert.equal(await sql("SELECT count(*) FROM hm_task WHERE id IN ('sync-1','sync-sql','sync-2','async-1','async-2')"), '5');
});

test('a broken task is refused with the reason and the rest copied', async () => {
  const d = join(dir, 'broken');
  cpSync(tasksDir, d, { recursive: true });
  const rename = (from, to) => { cpSync(join(d, from), join(d, to), { recursive: true }); rmSync(join(d, from), { recursive: true }); };
  rmSync(join(d, 'async-open'), { recursive: true });
  rename('sync-1', 'b-ok');
  rename('sync-2', 'b-notjson');
  writeFileSync(join(d, 'b-notjson', 'result.json'), '{"status": "completed", ');
  rename('sync-sql', 'b-dup');
  writeFileSync(join(d, 'b-dup', 'run.json'), '{"run_id": "r1", "run_id": "r2"}\n');
  rename('async-1', 'b-big');
  writeFileSync(join(d, 'b-big', 'result.json'), JSON.stringify({ summary: 'x'.repeat(210 * 1024) }));
  rename('async-2', 'b-sqlish');
  writeFileSync(join(d, 'b-sqlish', 'result.json'), JSON.stringify({ status: 'completed', summary: SQLISH }) + '\n');
  writeFileSync(join(d, 'b-sqlish', 'run.json'), JSON.stringify({ run_id: SQLISH }) + '\n');
  mkdirSync(join(d, '.not-a-task'));
  const r = migrate(d);
  assert.equal(r.status, 1, 'a refused task makes it exit 1');
  assert.deepEqual(summary(r), { copied: 2, there: 0, refused: 3 });
  assert.match(r.stderr, /task b-notjson refused: result\.json: not JSON/);
  assert.match(r.stderr, /task b-dup refused: run\.json: not JSON/);
  assert.match(r.stderr, /task b-big refused: result\.json: too big/);
  assert.match(r.stdout, /1 other entry left alone/);
  assert.equal(await sql("SELECT string_agg(id, ',' ORDER BY id) FROM hm_task WHERE id LIKE 'b-%'"), 'b-ok,b-sqlish');
  assert.equal(await sql("SELECT result FROM hm_task WHERE id = 'b-sqlish'"),
    JSON.stringify({ status: 'completed', summary: SQLISH }));
  assert.equal(await sql("SELECT run_id FROM hm_task WHERE id = 'b-sqlish'"), SQLISH);
});

test('killed mid-way on 3000 tasks, then run again: complete, each task once', async () => {
  const d = join(dir, 'many');
  mkdirSync(d);
  const N = 3000;
  const src = join(tasksDir, 'async-1');
  const texts = RECORDS.map((n) => readFileSync(join(src, n), 'utf8'));
  for (let i = 0; i < N; i++) {
    const id = `gen-${String(i).padStart(5, '0')}`;
    mkdirSync(join(d, id));
    RECORDS.forEach((n, k) => writeFileSync(join(d, id, n),
      k === 1 ? texts[k].replace(made['async-1'].run_id, `run-${id}`) : texts[k]));
  }
  const p = spawn(HERMES, ['store', 'migrate', '--from-files', '--env-file', envFor(d)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const ended = new Promise((res) => p.on('close', (code, signal) => res({ code, signal })));
  p.stdout.on('data', (x) => {
    out += x;
    if (/store migrate: 500\/3000/.test(out)) p.kill('SIGKILL');
  });
  const end = await ended;
  assert.equal(end.signal, 'SIGKILL', `killed mid-way: ${out}`);
  const part = Number(await sql("SELECT count(*) FROM hm_task WHERE id LIKE 'gen-%'"));
  assert.ok(part >= 500 && part < N && part % 500 === 0, `whole batches only: ${part}`);

  const t0 = Date.now();
  const r = migrate(d);
  console.log(`migrate of ${N - part} tasks: ${Date.now() - t0} ms`);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(summary(r), { copied: N - part, there: part, refused: 0 });
  assert.equal(await sql("SELECT count(*) FROM hm_task WHERE id LIKE 'gen-%'"), String(N));
  assert.equal(await sql("SELECT count(DISTINCT run_id) FROM hm_task WHERE id LIKE 'gen-%' AND run_id = 'run-' || id"), String(N));
});

test('export writes every task back byte for byte; again, only what differs; a folder of other tasks is refused', async () => {
  const out = join(dir, 'exported');
  const env = envFor(join(dir, 'unused'));
  const t0 = Date.now();
  const r = store(['export', '--to', out], env);
  console.log(`export of the tasks: ${Date.now() - t0} ms`);
  assert.equal(r.status, 0, r.stderr);
  const total = Number(await sql('SELECT count(*) FROM hm_task'));
  assert.match(r.stdout, new RegExp(`store export: done: ${total} written, 0 already there`));
  for (const [from, ids] of [[tasksDir, Object.keys(made)], [join(dir, 'many'), ['gen-00000', 'gen-01234', 'gen-02999']]]) {
    for (const id of ids) {
      const have = RECORDS.filter((n) => existsSync(join(from, id, n)));
      assert.deepEqual(RECORDS.filter((n) => existsSync(join(out, id, n))), have, `${id}: the same files`);
      for (const n of have) {
        assert.ok(readFileSync(join(out, id, n)).equals(readFileSync(join(from, id, n))), `${id}/${n} byte for byte`);
      }
    }
  }
  assert.equal(readdirSync(out).length, total);
  // The exported folder serves as a files store: a server on it reads the tasks.
  const files = await startHermes({ MCP_AUTH_TOKEN: token, HERMES_ENV_PATH: agent, TASKS_DIR: out });
  files.auth = { Authorization: `Bearer ${token}` };
  try {
    const c = await connectClient(files, { name: 'back', listTools: true });
    const got = await call(c, 'hermes_result', { id: 'sync-sql' });
    assert.deepEqual(got.structuredContent, made['sync-sql'].result);
    await c.close();
  } finally {
    await files.stop();
  }

  const again = store(['export', '--to', out], env);
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stdout, new RegExp(`store export: done: 0 written, ${total} already there`));
  // A record file that is not the database's is replaced by it; the agent's files stay.
  writeFileSync(join(out, 'sync-1', 'request.json'), '{"task": "edited"}\n');
  writeFileSync(join(out, 'sync-1', 'notes.txt'), 'the agent wrote this');
  const fix = store(['export', '--to', out], env);
  assert.equal(fix.status, 0, fix.stderr);
  assert.match(fix.stdout, new RegExp(`store export: done: 1 written, ${total - 1} already there`));
  assert.ok(readFileSync(join(out, 'sync-1', 'request.json')).equals(readFileSync(join(tasksDir, 'sync-1', 'request.json'))));
  assert.equal(readFileSync(join(out, 'sync-1', 'notes.txt'), 'utf8'), 'the agent wrote this');
  // A folder holding a task the database does not hold, or anything else: refused, nothing written.
  const other = join(dir, 'other');
  mkdirSync(join(other, 'elsewhere-1'), { recursive: true });
  writeFileSync(join(other, 'elsewhere-1', 'request.json'), '{"task": "not this database\'s"}\n');
  const refused = store(['export', '--to', other], env);
  assert.equal(refused.status, 1);
  assert.match(refused.stderr, /elsewhere-1\/request\.json is a task the database does not hold/);
  assert.deepEqual(readdirSync(other), ['elsewhere-1']);
  rmSync(join(other, 'elsewhere-1'), { recursive: true });
  writeFileSync(join(other, 'stray.txt'), 'x');
  const stray = store(['export', '--to', other], env);
  assert.equal(stray.status, 1);
  assert.match(stray.stderr, /holds 'stray\.txt', which is not a task directory/);
  assert.deepEqual(readdirSync(other), ['stray.txt']);
});

test('migrate and export refuse a database whose schema is not current', async () => {
  await pg.psql('CREATE DATABASE bare');
  const f = join(dir, 'bare.env');
  writeFileSync(f, `STORE_URL=${pg.url.replace(/\/[^/]*$/, '/bare')}\nTASKS_DIR=${tasksDir}\n`, { mode: 0o600 });
  for (const args of [['migrate', '--from-files'], ['export', '--to', join(dir, 'bare-out')]]) {
    const r = store(args, f);
    assert.equal(r.status, 1, r.stdout);
    assert.match(r.stderr, /run hermes-mcp store init/);
  }
  const u = spawnSync(HERMES, ['store', 'migrate', '--env-file', f], { encoding: 'utf8' });
  assert.equal(u.status, 2);
  assert.match(u.stderr, /--from-files/);
});

test('the OAuth consent passphrase is copied into the store once, never shown', async () => {
  const d = mkdtempSync(join(dir, 'pass-'));
  mkdirSync(join(d, 'tasks'));
  const files = join(d, 'files.env');
  writeFileSync(files, `TASKS_DIR=${join(d, 'tasks')}\n`, { mode: 0o600 });
  const pass = spawnSync(HERMES, ['oauth', 'passwd', '--env-file', files], { input: 'correct horse battery staple\n', encoding: 'utf8' });
  assert.equal(pass.status, 0, pass.stderr);
  const line = readFileSync(join(d, 'oauth-passphrase'), 'utf8').trim();
  assert.match(line, /^scrypt\$/);
  writeFileSync(files, `TASKS_DIR=${join(d, 'tasks')}\nSTORE_URL=${pg.url}\n`, { mode: 0o600 });
  const r = spawnSync(HERMES, ['store', 'migrate', '--from-files', '--env-file', files], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /the OAuth consent passphrase copied from/);
  assert.ok(!(r.stdout + r.stderr).includes(line.split('$').pop()), 'the hash never shown');
  assert.equal(await sql("SELECT value FROM hm_secret WHERE name = 'passphrase'"), line);
  const again = spawnSync(HERMES, ['store', 'migrate', '--from-files', '--env-file', files], { encoding: 'utf8' });
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stdout, /has an OAuth consent passphrase already: kept/);
});

test('a run that ended after a first migrate: migrating again brings its result, and nothing else changes', async () => {
  const d = join(dir, 'later');
  mkdirSync(join(d, 'late-1'), { recursive: true });
  writeFileSync(join(d, 'late-1', 'request.json'), '{"id": "late-1", "agent": "hermes"}\n');
  writeFileSync(join(d, 'late-1', 'run.json'), '{"run_id": "late-run", "agent": "hermes"}\n');
  let r = migrate(d);
  assert.deepEqual(summary(r), { copied: 1, there: 0, refused: 0 });
  assert.equal(await sql("SELECT result IS NULL FROM hm_task WHERE id = 'late-1'"), 't');
  // The run ended (the files server wrote its result); a second migrate brings it.
  writeFileSync(join(d, 'late-1', 'result.json'), '{"id": "late-1", "status": "completed"}\n');
  r = migrate(d);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(await sql("SELECT result FROM hm_task WHERE id = 'late-1'"), '{"id": "late-1", "status": "completed"}\n'.trimEnd());
  assert.equal(await sql("SELECT follower IS NULL AND finished_at IS NOT NULL FROM hm_task WHERE id = 'late-1'"), 't');
  // A third run: nothing more to bring.
  r = migrate(d);
  assert.deepEqual(summary(r), { copied: 0, there: 1, refused: 0 });
});

test('export never writes through a task directory that is a link', async () => {
  const out = join(dir, 'linked');
  const elsewhere = join(dir, 'elsewhere');
  mkdirSync(out);
  mkdirSync(elsewhere);
  symlinkSync(elsewhere, join(out, 'late-1'));
  const r = store(['export', '--to', out], envFor(join(dir, 'unused')));
  assert.notEqual(r.status, 0, r.stdout);
  assert.deepEqual(readdirSync(elsewhere), [], 'nothing written through the link');
});

test('the OAuth clients and unexpired tokens come along: the token works with the store, the client refreshes', async () => {
  const REDIRECT = 'http://127.0.0.1:7777/callback';
  const post = async (issuer, params) => {
    const res = await fetch(`${issuer}/token`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(params).toString() });
    return { status: res.status, body: await res.json() };
  };
  // A files server with its authorization server: a client (SQL in its name), a grant, one refresh.
  const { srv, issuer } = await startOAuth();
  const clientId = await registerPublic(issuer, REDIRECT, SQLISH);
  const { verifier, challenge } = pkce();
  const { code } = await approveConsent(issuer, `${issuer}/authorize?${new URLSearchParams({ response_type: 'code',
    client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 's',
    scope: 'hermes:read' })}`);
  assert.ok(code, 'a code');
  const first = await post(issuer, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId,
    code_verifier: verifier });
  assert.equal(first.status, 200, JSON.stringify(first.body));
  const second = await post(issuer, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: clientId });
  assert.equal(second.status, 200, JSON.stringify(second.body));
  assert.equal((await rpc(srv, second.body.access_token, 'tools/list')).status, 200);
  const odir = join(dir, 'oauth-files');
  mkdirSync(join(odir, 'tasks'), { recursive: true });
  for (const f of ['oauth-clients.json', 'oauth-tokens.json']) cpSync(join(srv.dir, f), join(odir, f));
  await srv.stop();
  // An expired token in the file stays behind.
  const tokens = JSON.parse(readFileSync(join(odir, 'oauth-tokens.json'), 'utf8'));
  const live = tokens.tokens.length;
  assert.equal(live, 4, 'two pairs in the file');
  tokens.tokens.push({ sha256: 'e'.repeat(64), kind: 'access', client_id: clientId, scope: 'hermes:read',
    resource: tokens.tokens[0].resource, expires: 1000, issued: 900 });
  writeFileSync(join(odir, 'oauth-tokens.json'), JSON.stringify(tokens), { mode: 0o600 });
  const env = join(odir, 'env');
  writeFileSync(env, `STORE_URL=${pg.url}\nTASKS_DIR=${join(odir, 'tasks')}\n`, { mode: 0o600 });
  let r = store(['migrate', '--from-files'], env);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /OAuth: 1 clients, 4 tokens copied \(0 already there, 1 expired left out\)/);
  // The rows hold what the files held, as the server writes them.
  const file = JSON.parse(readFileSync(join(odir, 'oauth-clients.json'), 'utf8')).clients[0];
  assert.deepEqual(JSON.parse(await sql(`SELECT doc FROM hm_oauth_client WHERE id = '${clientId}'`)), file);
  assert.equal(file.client_name, SQLISH);
  const rows = (await sql(`SELECT sha256 || ' ' || used FROM hm_oauth_token WHERE client_id = '${clientId}' ORDER BY 1`))
    .split('\n').map((l) => l.trim());
  assert.deepEqual(rows, tokens.tokens.filter((t) => t.expires > 1000).map((t) => `${t.sha256} ${t.used ? 'true' : 'false'}`).sort());
  // Again: everything already there.
  r = store(['migrate', '--from-files'], env);
  assert.match(r.stdout, /OAuth: 0 clients, 0 tokens copied \(5 already there, 1 expired left out\)/);
  // A server with the store, on the same issuer: the migrated token is accepted, the client refreshes.
  const withStore = await startHermes({ STORE_URL: pg.url, OAUTH_ISSUER_URL: issuer, MCP_PORT: new URL(issuer).port });
  try {
    await until(async () => (await rpc(withStore, second.body.access_token, 'tools/list')).status === 200,
      'the migrated access token accepted', 10000);
    const third = await post(issuer, { grant_type: 'refresh_token', refresh_token: second.body.refresh_token, client_id: clientId });
    assert.equal(third.status, 200, JSON.stringify(third.body));
    assert.equal((await rpc(withStore, third.body.access_token, 'tools/list')).status, 200);
    // The refresh token rotated before the migration is still known as used: its reuse is refused.
    const reuse = await post(issuer, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: clientId });
    assert.equal(reuse.status, 400, JSON.stringify(reuse.body));
  } finally {
    await withStore.stop();
  }
  // A tokens file that is not one the server writes: nothing of the pair copied, exit 1.
  const bad = join(dir, 'oauth-bad');
  mkdirSync(join(bad, 'tasks'), { recursive: true });
  const other = { ...file, client_id: 'b'.repeat(32) };
  writeFileSync(join(bad, 'oauth-clients.json'), JSON.stringify({ version: 1, clients: [other] }), { mode: 0o600 });
  writeFileSync(join(bad, 'oauth-tokens.json'), '{"version": 1, "tokens": [{"sha256": "nope"}]}', { mode: 0o600 });
  const benv = join(bad, 'env');
  writeFileSync(benv, `STORE_URL=${pg.url}\nTASKS_DIR=${join(bad, 'tasks')}\n`, { mode: 0o600 });
  r = store(['migrate', '--from-files'], benv);
  assert.equal(r.status, 1, r.stdout);
  assert.match(r.stderr, /OAuth clients and tokens not copied: .*oauth-tokens\.json/);
  assert.equal(await sql(`SELECT count(*) FROM hm_oauth_client WHERE id = '${'b'.repeat(32)}'`), '0');
});

test('migrate reads each record through the task directory it checked: a link, a FIFO or another user\'s file is refused with its reason', async () => {
  const d = join(dir, 'hostile');
  const outside = join(dir, 'outside.json');
  writeFileSync(outside, '{"task": "not in the task directory"}\n');
  const task = (id, files) => {
    mkdirSync(join(d, id), { recursive: true });
    for (const [n, text] of Object.entries(files)) writeFileSync(join(d, id, n), text);
  };
  task('h-ok', { 'request.json': '{"id": "h-ok"}\n' });
  task('h-link', { 'run.json': '{"run_id": "h"}\n' });
  symlinkSync(outside, join(d, 'h-link', 'request.json'));
  task('h-fifo', {});
  const fifo = spawnSync('mkfifo', [join(d, 'h-fifo', 'result.json')]);
  assert.equal(fifo.status, 0, String(fifo.stderr));
  const root = process.getuid() === 0;
  if (root) { // only root can give a file away: another user's record is refused too
    task('h-theirs', { 'request.json': '{"id": "h-theirs"}\n' });
    chownSync(join(d, 'h-theirs', 'request.json'), 65534, 65534);
  }
  // A FIFO opened for reading waits for a writer: without care the migrate never ends.
  const r = spawnSync(HERMES, ['store', 'migrate', '--from-files', '--env-file', envFor(d)], { encoding: 'utf8', timeout: 20000 });
  assert.equal(r.signal, null, `migrate ended by itself: ${r.stdout} ${r.stderr}`);
  assert.equal(r.status, 1, r.stdout);
  assert.deepEqual(summary(r), { copied: 1, there: 0, refused: root ? 3 : 2 });
  assert.match(r.stderr, /task h-link refused: request\.json: a symbolic link/);
  assert.match(r.stderr, /task h-fifo refused: result\.json: not a regular file/);
  if (root) assert.match(r.stderr, /task h-theirs refused: request\.json: another user's file/);
  assert.equal(await sql("SELECT string_agg(id, ',' ORDER BY id) FROM hm_task WHERE id LIKE 'h-%'"), 'h-ok');
});

test('migrate run by root (sudo) on a task directory of the service user: the service user\'s records copied, anybody else\'s refused', async () => {
  // The task directory and its records belong to the service user (65534 here); the migrate
  // runs as whoever runs it. Without root, no file can be given away: the same run as the owner.
  const svc = process.getuid() === 0 ? 65534 : process.getuid();
  const d = join(dir, 'service');
  const task = (id, uid, files) => {
    mkdirSync(join(d, id), { recursive: true });
    for (const [n, text] of Object.entries(files)) {
      writeFileSync(join(d, id, n), text);
      if (process.getuid() === 0) chownSync(join(d, id, n), uid, uid);
    }
    if (process.getuid() === 0) chownSync(join(d, id), uid, uid);
  };
  task('s-ok', svc, { 'request.json': '{"id": "s-ok"}\n', 'run.json': '{"run_id": "s-ok-run"}\n' });
  if (process.getuid() === 0) {
    task('s-file', svc, { 'request.json': '{"id": "s-file"}\n' });
    chownSync(join(d, 's-file', 'request.json'), 0, 0); // root's, not the service user's
    task('s-dir', 65533, { 'request.json': '{"id": "s-dir"}\n' }); // another user's task, all of it
    chownSync(d, svc, svc);
  }
  const r = spawnSync(HERMES, ['store', 'migrate', '--from-files', '--env-file', envFor(d)], { encoding: 'utf8', timeout: 20000 });
  const root = process.getuid() === 0;
  assert.equal(r.status, root ? 1 : 0, r.stdout + r.stderr);
  assert.deepEqual(summary(r), { copied: 1, there: 0, refused: root ? 2 : 0 });
  if (root) {
    assert.match(r.stderr, /task s-file refused: request\.json: another user's file/);
    assert.match(r.stderr, /task s-dir refused: its directory: another user's/);
  }
  assert.equal(await sql("SELECT string_agg(id, ',' ORDER BY id) FROM hm_task WHERE id LIKE 's-%'"), 's-ok');
});

test('export skips a row bigger than the files hold, without fetching it whole, says which, and exits 1', async () => {
  // Rows a files server could never have written (written by hand, or by a newer version).
  await sql("INSERT INTO hm_task (id, request, result) VALUES ('huge-result', '{\"id\": \"huge-result\"}', '\"' || repeat('x', 210 * 1024) || '\"')," +
    " ('huge-request', '\"' || repeat('y', 64 * 1024) || '\"', NULL)," +
    // Exactly at the cap once the file's newline is added: kept.
    " ('edge-request', '\"' || repeat('z', 64 * 1024 - 3) || '\"', NULL)");
  try {
    const out = join(dir, 'capped');
    const r = store(['export', '--to', out], envFor(join(dir, 'unused')));
    assert.equal(r.status, 1, r.stdout);
    assert.match(r.stderr, /task huge-result skipped: its result\.json is bigger than the server reads \(204800 bytes\)/);
    assert.match(r.stderr, /task huge-request skipped: its request\.json is bigger than the server reads \(65536 bytes\)/);
    assert.match(r.stderr, /2 task\(s\) skipped/);
    const total = Number(await sql('SELECT count(*) FROM hm_task'));
    assert.match(r.stdout, new RegExp(`store export: done: ${total - 2} written, 0 already there`));
    assert.ok(!existsSync(join(out, 'huge-result')) && !existsSync(join(out, 'huge-request')), 'nothing written for them');
    assert.equal(readFileSync(join(out, 'edge-request', 'request.json')).length, 64 * 1024);
    assert.ok(existsSync(join(out, 'sync-1', 'result.json')), 'the others written');
  } finally {
    await sql("DELETE FROM hm_task WHERE id IN ('huge-result', 'huge-request', 'edge-request')");
  }
});
