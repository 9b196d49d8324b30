// With STORE_URL, hermes_files answers on every replica: the files an agent left in a task's
// directory on replica A's machine are copied into the store when A writes the task's result,
// and replica B (another TASKS_DIR, as on another machine) lists and reads them with the same
// rules as A: no links, UTF-8 text only, 200 KiB a file, 500 entries a listing, only for the
// task's owner. Real PostgreSQL 15, two real servers, one fake agent, SDK clients that list
// the tools before calling them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHermes, startFake, agentEnv, connectClient, tokensFile, until, sleep } from '../../lib/lib.mjs';
import { startPostgres, storeInit } from '../../lib/pg.mjs';

let pg, dir, fake, a, b, tokens;
const hex = (n) => randomBytes(n).toString('hex');
const tok = { alice: hex(32), bob: hex(32) };
const sql = (q) => pg.psql(q);

async function replica(name) {
  const tasksDir = join(dir, `tasks-${name}`);
  mkdirSync(tasksDir, { mode: 0o700 });
  const s = await startHermes({ STORE_URL: pg.url, HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '100',
    TOKENS_FILE: tokens, TASKS_DIR: tasksDir });
  s.tasksDir = tasksDir;
  return s;
}

async function connect(srv, who) {
  const client = await connectClient(srv, { name: `${who}-files`, headers: { Authorization: `Bearer ${tok[who]}` },
    listTools: true });
  return { call: (tool, args) => client.callTool({ name: tool, arguments: args }, undefined, { timeout: 60000 }),
    close: () => client.close() };
}

before(async () => {
  pg = await startPostgres();
  dir = mkdtempSync(join(tmpdir(), 'hm-storefiles-'));
  const init = storeInit(pg, dir);
  assert.equal(init.status, 0, init.stderr);
  tokens = tokensFile(dir, { alice: [tok.alice, 'hermes:read, hermes:task'], bob: [tok.bob, 'hermes:read, hermes:task'] });
  fake = await startFake();
  [a, b] = await Promise.all([replica('a'), replica('b')]);
});
after(async () => {
  await Promise.all([a, b].map((s) => s?.stop()));
  await fake?.stop();
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
});

// What a caller can tell from an answer: error or not, its code and message.
const seen = (r) => JSON.stringify({ isError: r.isError === true, error: r.structuredContent?.error,
  message: r.structuredContent?.message });

test('files an agent left on A are listed and read through B, with A\'s refusals, for the owner only', async () => {
  const [aliceA, aliceB, bobB] = await Promise.all([connect(a, 'alice'), connect(b, 'alice'), connect(b, 'bob')]);
  const acc = await aliceA.call('hermes_task', { task: 'write a report [delay=1500]', mode: 'async', id: 'files-1' });
  assert.notEqual(acc.isError, true, JSON.stringify(acc));
  // The agent, on A's machine, leaves its files while the run goes on.
  const d = join(a.tasksDir, 'files-1');
  mkdirSync(join(d, 'out'), { recursive: true });
  writeFileSync(join(d, 'out', 'report.md'), '# Report\nhello\n');
  const weird = "x'); DROP TABLE hm_task_file; -- $1.txt";
  const weirdText = "'); DELETE FROM hm_task; -- \\\" $$ é";
  writeFileSync(join(d, weird), weirdText);
  writeFileSync(join(d, 'big.txt'), 'x'.repeat(200 * 1024 + 1));
  writeFileSync(join(d, 'bin.dat'), Buffer.from([0, 1, 2, 3]));
  writeFileSync(join(d, 'result.json'), '{"the agent": "wrote this"}');
  writeFileSync(join(d, '.partial'), 'a temp file');
  writeFileSync(Buffer.concat([Buffer.from(d + '/'), Buffer.from([0xff, 0xfe, 0x2e, 0x74])]), 'a name JSON cannot carry');
  symlinkSync('/etc/passwd', join(d, 'escape'));
  symlinkSync(join(d, 'out'), join(d, 'linked'));

  await until(async () => (await aliceB.call('hermes_result', { id: 'files-1' })).isError !== true, 'the result through B', 15000);
  // The files were stored before the result: seen through B as soon as the result is.
  const list = (await aliceB.call('hermes_files', { id: 'files-1' })).structuredContent;
  const paths = list.entries.map((e) => e.path).sort();
  assert.deepEqual(paths, ['big.txt', 'bin.dat', 'out', 'out/report.md', 'result.json', weird].sort());
  assert.equal(list.count, 6);
  assert.equal(list.truncated, false);
  const listA = (await aliceA.call('hermes_files', { id: 'files-1' })).structuredContent;
  assert.deepEqual(listA.entries.map((e) => e.path).sort(), paths, 'A lists the same entries');
  assert.equal(list.entries.find((e) => e.path === 'out').type, 'dir');
  assert.equal(list.entries.find((e) => e.path === 'big.txt').size, 200 * 1024 + 1);
  const sub = (await aliceB.call('hermes_files', { id: 'files-1', path: 'out' })).structuredContent;
  assert.deepEqual(sub.entries.map((e) => e.path), ['out/report.md']);

  const f = (await aliceB.call('hermes_files', { id: 'files-1', path: 'out/report.md' })).structuredContent;
  assert.equal(f.content, '# Report\nhello\n');
  assert.equal(f.encoding, 'utf-8');
  assert.equal(f.size, 15);
  const w = (await aliceB.call('hermes_files', { id: 'files-1', path: weird })).structuredContent;
  assert.equal(w.content, weirdText, 'SQL-looking names and text are kept as data');
  assert.equal((await aliceB.call('hermes_files', { id: 'files-1', path: 'result.json' })).structuredContent.content,
    '{"the agent": "wrote this"}', 'a file of the agent\'s, though named as a record');
  assert.equal((await sql("SELECT to_regclass('hm_task_file') IS NOT NULL")).trim(), 't');

  // B refuses what A refuses, with the same answer.
  for (const [path, error] of [['big.txt', 'invalid_arguments'], ['bin.dat', 'invalid_arguments'],
    ['escape', 'invalid_arguments'], ['linked/report.md', 'invalid_arguments'], ['nope.txt', 'not_found'],
    ['.partial', 'not_found'], ['../files-1/out/report.md', 'invalid_arguments']]) {
    const [onA, onB] = await Promise.all([aliceA.call('hermes_files', { id: 'files-1', path }),
      aliceB.call('hermes_files', { id: 'files-1', path })]);
    assert.equal(onB.isError, true, path);
    assert.equal(onB.structuredContent.error, error, path);
    assert.equal(seen(onB), seen(onA), path);
    assert.ok(!JSON.stringify(onB).includes('root:'), 'nothing leaked');
  }
  // A reads its own directory, as without a store: a file left after the result is there, not on B.
  writeFileSync(join(d, 'late.txt'), 'after the result');
  assert.equal((await aliceA.call('hermes_files', { id: 'files-1', path: 'late.txt' })).structuredContent.content, 'after the result');
  assert.equal((await aliceB.call('hermes_files', { id: 'files-1', path: 'late.txt' })).structuredContent.error, 'not_found');

  // Another principal gets what an unknown id gets.
  const [bobs, unknown] = await Promise.all([bobB.call('hermes_files', { id: 'files-1' }),
    bobB.call('hermes_files', { id: 'files-none' })]);
  assert.equal(bobs.isError, true);
  assert.equal(bobs.structuredContent.error, 'not_found');
  assert.equal(seen(bobs).replace('files-1', 'X'), seen(unknown).replace('files-none', 'X'));

  // The rows (the links kept as refused entries) go with their task.
  assert.equal((await sql("SELECT count(*) FROM hm_task_file WHERE task_id = 'files-1'")).trim(), '8');
  await sql("DELETE FROM hm_task WHERE id = 'files-1'");
  assert.equal((await sql("SELECT count(*) FROM hm_task_file WHERE task_id = 'files-1'")).trim(), '0');
  await Promise.all([aliceA.close(), aliceB.close(), bobB.close()]);
});

test('many files: listings stop at 500 (a folder\'s too), the text kept at 8 MiB a task', async () => {
  const [aliceA, aliceB] = await Promise.all([connect(a, 'alice'), connect(b, 'alice')]);
  // Left before the tasks run (the agent's directory may exist before its result).
  mkdirSync(join(a.tasksDir, 'files-2', 'large'), { recursive: true });
  for (let i = 0; i < 42; i++) writeFileSync(join(a.tasksDir, 'files-2', 'large', `f${i}.txt`), 'y'.repeat(200 * 1024));
  for (let i = 0; i < 40; i++) writeFileSync(join(a.tasksDir, 'files-2', `bin${i}.dat`), Buffer.alloc(200 * 1024, 0));
  mkdirSync(join(a.tasksDir, 'files-3', 'many'), { recursive: true });
  for (let i = 0; i < 510; i++) writeFileSync(join(a.tasksDir, 'files-3', 'many', `small${i}.txt`), `file ${i}\n`);
  const rs = await Promise.all([aliceA.call('hermes_task', { task: 'large files', mode: 'sync', id: 'files-2' }),
    aliceA.call('hermes_task', { task: 'many files', mode: 'sync', id: 'files-3' })]);
  for (const r of rs) assert.notEqual(r.isError, true, JSON.stringify(r));
  // A sync call is answered once its result is stored, and that waits for the files.

  for (const path of ['', 'many']) {
    const onB = (await aliceB.call('hermes_files', { id: 'files-3', path })).structuredContent;
    const onA = (await aliceA.call('hermes_files', { id: 'files-3', path })).structuredContent;
    assert.equal(onB.count, 500, path);
    assert.equal(onB.truncated, true, path);
    assert.equal(onA.truncated, true, path);
  }
  const whole = (await aliceB.call('hermes_files', { id: 'files-2' })).structuredContent;
  assert.equal(whole.count, 83);
  assert.equal(whole.truncated, false);

  // Binary files do not use up the task's text: 40 of them, then 42 texts of 200 KiB.
  const kept = Number((await sql("SELECT coalesce(sum(octet_length(content)), 0) FROM hm_task_file WHERE task_id = 'files-2'")).trim());
  assert.ok(kept > 7 * 1024 * 1024 && kept <= 8 * 1024 * 1024, `text kept: ${kept}`);
  assert.equal((await sql("SELECT count(*) FROM hm_task_file WHERE task_id = 'files-2' AND path LIKE 'bin%' AND content IS NULL")).trim(), '40');
  assert.ok(Number((await sql("SELECT count(*) FROM hm_task_file WHERE task_id = 'files-2' AND refusal = 'binary'")).trim()) > 0);
  const capped = (await sql("SELECT path FROM hm_task_file WHERE task_id = 'files-2' AND refusal = 'cap' LIMIT 1")).trim();
  assert.ok(capped, 'a file over the task\'s cap is listed without its text');
  const res = await aliceB.call('hermes_files', { id: 'files-2', path: capped });
  assert.equal(res.isError, true);
  assert.match(res.structuredContent.message, /8 MiB/);
  const first = (await sql("SELECT path FROM hm_task_file WHERE task_id = 'files-2' AND content IS NOT NULL LIMIT 1")).trim();
  const served = await aliceB.call('hermes_files', { id: 'files-2', path: first });
  assert.equal(served.structuredContent.content.length, 200 * 1024, first);
  await Promise.all([aliceA.close(), aliceB.close()]);
});

test('the database away when the result is written: the copy waits, then reaches the store once', async () => {
  const [aliceA] = await Promise.all([connect(a, 'alice')]);
  mkdirSync(join(a.tasksDir, 'files-4'), { recursive: true });
  writeFileSync(join(a.tasksDir, 'files-4', 'notes.txt'), 'kept through the outage');
  const acc = await aliceA.call('hermes_task', { task: 'outlives the database [delay=2000]', mode: 'async', id: 'files-4' });
  assert.notEqual(acc.isError, true, JSON.stringify(acc));
  await pg.kill();
  await sleep(3000); // the run ends meanwhile: its result and the copy wait for the database
  await pg.restart();
  await until(async () => (await sql("SELECT count(*) FROM hm_task WHERE id = 'files-4' AND result IS NOT NULL")).trim() === '1',
    'the result stored once the database is back', 30000);
  await until(async () => (await sql("SELECT content FROM hm_task_file WHERE task_id = 'files-4' AND path = 'notes.txt'")).trim()
    === 'kept through the outage', 'the copy stored once the database is back', 30000);
  const aliceB = await connect(b, 'alice');
  const f = await aliceB.call('hermes_files', { id: 'files-4', path: 'notes.txt' });
  assert.equal(f.structuredContent.content, 'kept through the outage');
  await Promise.all([aliceA.close(), aliceB.close()]);
});
