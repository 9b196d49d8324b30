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
import { startHermes, startFake, agentEnv, connectClient, tokensFile, until } from '../../lib/lib.mjs';
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

test('files an agent left on A are listed and read through B, with the same refusals, for the owner only', async () => {
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
  writeFileSync(join(d, '.partial'), 'a temp file');
  symlinkSync('/etc/passwd', join(d, 'escape'));

  await until(async () => (await aliceB.call('hermes_result', { id: 'files-1' })).isError !== true, 'the result through B', 15000);
  await until(async () => (await aliceB.call('hermes_files', { id: 'files-1' })).structuredContent?.count > 0,
    'the files copied to the store', 10000);
  const list = (await aliceB.call('hermes_files', { id: 'files-1' })).structuredContent;
  const paths = list.entries.map((e) => e.path).sort();
  assert.deepEqual(paths, ['big.txt', 'bin.dat', 'out', 'out/report.md', weird].sort());
  assert.equal(list.count, 5);
  assert.equal(list.truncated, false);
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
  assert.equal((await sql("SELECT to_regclass('hm_task_file') IS NOT NULL")).trim(), 't');

  // The same refusals as on the replica that holds the directory.
  for (const [path, error, message] of [['big.txt', 'invalid_arguments', /larger than 200 KiB/],
    ['bin.dat', 'invalid_arguments', /UTF-8/], ['escape', 'not_found', /no such file/], ['nope.txt', 'not_found', /no such file/],
    ['.partial', 'not_found', /no such file/], ['../files-1/out/report.md', 'invalid_arguments', /./]]) {
    const onB = await aliceB.call('hermes_files', { id: 'files-1', path });
    assert.equal(onB.isError, true, path);
    assert.equal(onB.structuredContent.error, error, path);
    assert.match(onB.structuredContent.message, message, path);
    assert.ok(!JSON.stringify(onB).includes('root:'), 'nothing leaked');
  }
  // A reads its own directory, as without a store (the records are not there: they are hm_task's).
  const onA = (await aliceA.call('hermes_files', { id: 'files-1', path: 'out/report.md' })).structuredContent;
  assert.equal(onA.content, f.content);

  // Another principal gets what an unknown id gets.
  const bobs = await bobB.call('hermes_files', { id: 'files-1' });
  assert.equal(bobs.isError, true);
  assert.equal(bobs.structuredContent.error, 'not_found');

  // The rows go with their task.
  assert.equal((await sql("SELECT count(*) FROM hm_task_file WHERE task_id = 'files-1'")).trim(), '5');
  await sql("DELETE FROM hm_task WHERE id = 'files-1'");
  assert.equal((await sql("SELECT count(*) FROM hm_task_file WHERE task_id = 'files-1'")).trim(), '0');
  await Promise.all([aliceA.close(), aliceB.close(), bobB.close()]);
});

test('sync tasks\' many files: the listing stops at 500, the text kept at 8 MiB a task', async () => {
  const [aliceA, aliceB] = await Promise.all([connect(a, 'alice'), connect(b, 'alice')]);
  const large = aliceA.call('hermes_task', { task: 'large files [delay=2500]', mode: 'sync', id: 'files-2' });
  const many = aliceA.call('hermes_task', { task: 'many files [delay=2500]', mode: 'sync', id: 'files-3' });
  mkdirSync(join(a.tasksDir, 'files-2', 'large'), { recursive: true });
  for (let i = 0; i < 42; i++) writeFileSync(join(a.tasksDir, 'files-2', 'large', `f${i}.txt`), 'y'.repeat(200 * 1024));
  mkdirSync(join(a.tasksDir, 'files-3'));
  for (let i = 0; i < 510; i++) writeFileSync(join(a.tasksDir, 'files-3', `small${i}.txt`), `file ${i}\n`);
  for (const r of await Promise.all([large, many])) assert.notEqual(r.isError, true, JSON.stringify(r));
  for (const id of ['files-2', 'files-3'])
    await until(async () => (await aliceB.call('hermes_files', { id })).structuredContent?.count > 0,
      `the files of ${id} copied to the store`, 10000);

  const list = (await aliceB.call('hermes_files', { id: 'files-3' })).structuredContent;
  assert.equal(list.count, 500);
  assert.equal(list.truncated, true);
  const notTruncated = (await aliceB.call('hermes_files', { id: 'files-2' })).structuredContent;
  assert.equal(notTruncated.count, 43);
  assert.equal(notTruncated.truncated, false);

  const kept = Number((await sql("SELECT coalesce(sum(octet_length(content)), 0) FROM hm_task_file WHERE task_id = 'files-2'")).trim());
  assert.ok(kept > 7 * 1024 * 1024 && kept <= 8 * 1024 * 1024, `text kept: ${kept}`);
  const capped = (await sql("SELECT path FROM hm_task_file WHERE task_id = 'files-2' AND refusal = 'cap' LIMIT 1")).trim();
  assert.ok(capped, 'a file over the task\'s cap is listed without its text');
  const res = await aliceB.call('hermes_files', { id: 'files-2', path: capped });
  assert.equal(res.isError, true);
  assert.match(res.structuredContent.message, /8 MiB/);
  const first = (await sql("SELECT path FROM hm_task_file WHERE task_id = 'files-2' AND content IS NOT NULL AND NOT is_dir LIMIT 1")).trim();
  const served = await aliceB.call('hermes_files', { id: 'files-2', path: first });
  assert.equal(served.structuredContent.content.length, 200 * 1024, first);
  await Promise.all([aliceA.close(), aliceB.close()]);
});
