// The task journal (group commit of the task files): a server killed with SIGKILL under load
// keeps every task whose call was answered, with its exact result; task files damaged after a
// crash while the journal still names them are restored at start (by the server, and by the
// offline `tasks list`); a batch costs one fdatasync of the journal, no fsync of a task
// file (watched with strace); a failed flush stops the server and its restart has every
// answered task; a crafted journal never writes through a link; a second server on the same
// TASKS_DIR is refused; pruned tasks stay pruned after a crash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHermes, restartHermes, startFake, agentEnv, until, sleep, connectClient, hermesCli, BUILD, HERMES } from '../../lib/lib.mjs';
const connect = (srv, name = 'journal-it') => connectClient(srv, { name, version: '1', capabilities: {} });
const call = (client, name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 30000 });

async function rig(extra = {}, opts = {}) {
  const fake = await startFake();
  const root = mkdtempSync(join(tmpdir(), 'hm-journal-'));
  const tasks = join(root, 'tasks');
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50', TASKS_DIR: tasks, ...extra }, opts);
  return { fake, root, tasks, srv };
}

async function kill9(srv) {
  srv.proc.kill('SIGKILL');
  if (srv.proc.exitCode === null && srv.proc.signalCode === null)
    await new Promise((res) => srv.proc.on('close', res));
}

// The records the journal still names (after its checkpoint): [{ seq, kind, path, data }],
// decoded as taskjournal.h describes (records: magic, format|kind<<16, seq, path length, data
// length, crc, reserved; control: two slots of magic, format, generation, checkpoint).
function journalRecords(tasks) {
  const dir = join(tasks, '.journal');
  const ctl = readFileSync(join(dir, 'control'));
  let gen = -1n, ckpt = 0n;
  for (const at of [0, 4096]) {
    if (ctl.readUInt32LE(at) !== 0x434a4d48) continue;
    const g = ctl.readBigUInt64LE(at + 8);
    if (g > gen) { gen = g; ckpt = ctl.readBigUInt64LE(at + 16); }
  }
  const out = [];
  for (const name of readdirSync(dir).filter((n) => /^seg\.\d+$/.test(n))) {
    const b = readFileSync(join(dir, name));
    let off = 0, prev = 0n;
    while (off + 32 <= b.length && b.readUInt32LE(off) === 0x524a4d48) {
      const seq = b.readBigUInt64LE(off + 8), pl = b.readUInt32LE(off + 16), dl = b.readUInt32LE(off + 20);
      if (prev && seq !== prev + 1n) break;
      if (seq > ckpt) {
        out.push({ seq, kind: b.readUInt32LE(off + 4) >> 16, path: b.subarray(off + 32, off + 32 + pl).toString(),
          data: b.subarray(off + 32 + pl, off + 32 + pl + dl).toString() });
      }
      prev = seq;
      off += 32 + pl + dl;
    }
  }
  return out.sort((x, y) => (x.seq < y.seq ? -1 : 1));
}

// hermes_result's view of a finished task, for comparing before and after.
const view = (res) => JSON.stringify({ isError: res.isError, sc: res.structuredContent, text: res.content?.[0]?.text });

test('kill -9 under load: every task whose call was answered is there after a restart, with its exact result', async () => {
  const { fake, root, tasks, srv } = await rig();
  let srv2;
  try {
    const clients = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => connect(srv, `load-${i}`)));
    const answered = new Map(); // id -> the sync answer, or 'async'
    let stop = false;
    const worker = async (client, w) => {
      for (let i = 0; !stop; i++) {
        const id = `w${w}-${i}`;
        const async = i % 3 === 2;
        try {
          const res = await call(client, 'hermes_task', { task: `job ${id} [json]`, mode: async ? 'async' : 'sync', id });
          if (stop) return; // answered after the kill was decided: not counted
          assert.equal(res.isError, false, JSON.stringify(res));
          answered.set(id, async ? 'async' : res);
        } catch { return; } // the server is gone
      }
    };
    const load = clients.map((c, w) => worker(c, w));
    await until(() => answered.size >= 60, 'sixty answered calls', 30000);
    stop = true;
    await kill9(srv);
    await Promise.allSettled(load);
    for (const c of clients) await c.close().catch(() => {});

    // Offline first: tasks list replays what the journal holds and lists every answered task.
    const list = await hermesCli(srv, 'tasks', 'list', '--json');
    assert.equal(list.code, 0, list.stderr);
    const listed = new Set(JSON.parse(list.stdout).map((t) => t.id));
    for (const id of answered.keys()) assert.ok(listed.has(id), `tasks list shows ${id}`);

    srv2 = await restartHermes(srv);
    const c2 = await connect(srv2);
    for (const [id, ans] of answered) {
      const got = await call(c2, 'hermes_result', { id });
      if (ans === 'async') {
        assert.notEqual(got.structuredContent?.error, 'not_found', `${id}: ${JSON.stringify(got)}`);
        continue;
      }
      assert.equal(got.structuredContent.status, 'completed', `${id}: ${JSON.stringify(got)}`);
      assert.deepEqual(got.structuredContent.summary, ans.structuredContent.summary, id);
      assert.equal(JSON.parse(readFileSync(join(tasks, id, 'result.json'), 'utf8')).summary ?? ans.structuredContent.summary,
        ans.structuredContent.summary, id);
    }
    await c2.close();
  } finally {
    if (srv2) await srv2.stop(); else await srv.stop();
    await fake.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

// Sync calls from four clients without a pause, SIGKILL once a dozen were answered: the last
// ones are journaled and not yet checkpointed (a checkpoint comes once a second of writing). Returns the answers by id and the answered tasks the journal still names whole
// (request.json and result.json); tries again if a checkpoint happened to cover them all.
async function answeredThenKilled(srv, tasks, round) {
  for (let attempt = 0; attempt < 5; attempt++) {
    const clients = await Promise.all([0, 1, 2, 3].map((i) => connect(srv, `crash-${round}-${attempt}-${i}`)));
    const answers = new Map();
    let stop = false;
    const worker = async (c, w) => {
      for (let i = 0; !stop; i++) {
        const id = `crash-${round}-${attempt}-${w}-${i}`;
        try {
          const res = await call(c, 'hermes_task', { task: `keep ${id} [json]`, mode: 'sync', id });
          if (!stop) answers.set(id, res);
        } catch { return; }
      }
    };
    const load = clients.map((c, w) => worker(c, w));
    await until(() => answers.size >= 12, 'a dozen answers', 30000);
    stop = true;
    await kill9(srv);
    await Promise.allSettled(load);
    for (const c of clients) await c.close().catch(() => {});
    const named = new Set(journalRecords(tasks).map((r) => r.path));
    const kept = [...answers.keys()].filter((id) => named.has(`${id}/request.json`) && named.has(`${id}/result.json`));
    if (kept.length >= 3) return { srv, answers, kept };
    srv = await restartHermes(srv); // a checkpoint covered them: again
  }
  await srv.stop(); // not left running: the test fails, it does not hang
  throw new Error('every round was checkpointed before the kill');
}

// Checkpoints held back (failsync.so waits in syncfs while the hold file exists): what the
// load wrote stays journaled until the kill. Restarts replay with the hold file gone.
const holdDir = mkdtempSync(join(tmpdir(), 'hm-hold-'));
const hold = join(holdDir, 'hold');
const holdOpts = { env: { LD_PRELOAD: join(BUILD, 'failsync.so'), FAILSYNC_HOLD: hold,
  ASAN_OPTIONS: `${process.env.ASAN_OPTIONS ?? ''}:verify_asan_link_order=0` } };
async function restartHeld(srv) {
  rmSync(hold, { force: true });
  const s = await restartHermes(srv, holdOpts);
  writeFileSync(hold, '');
  return s;
}

test('task files damaged after a crash, while the journal names them, are restored: at start, and by tasks list', async () => {
  writeFileSync(hold, '');
  const { fake, root, tasks, srv } = await rig({}, holdOpts);
  let cur = srv;
  try {
    for (const where of ['server', 'tasks list']) {
      const c0 = await connect(cur);
      await call(c0, 'hermes_task', { task: 'warm up', mode: 'sync', id: `warm-${where === 'server' ? 1 : 2}` });
      await c0.close();
      const crash = await answeredThenKilled(cur, tasks, where === 'server' ? 1 : 2);
      const { answers, kept } = crash;
      cur = crash.srv;
      const journaled = new Map(journalRecords(tasks).map((r) => [r.path, r.data])); // the last of each
      for (const id of kept) assert.equal(readFileSync(join(tasks, id, 'result.json'), 'utf8'), journaled.get(`${id}/result.json`));
      // Damage: one task directory removed whole, one result.json cut short, one emptied.
      rmSync(join(tasks, kept[0]), { recursive: true, force: true });
      truncateSync(join(tasks, kept[1], 'result.json'), 7);
      writeFileSync(join(tasks, kept[2], 'request.json'), '');
      rmSync(hold, { force: true });
      if (where === 'tasks list') {
        const list = await hermesCli(cur, 'tasks', 'list', '--json');
        assert.equal(list.code, 0, list.stderr);
        const listed = new Set(JSON.parse(list.stdout).map((t) => t.id));
        for (const id of kept) assert.ok(listed.has(id), `tasks list restored ${id}`);
        for (const id of kept) JSON.parse(readFileSync(join(tasks, id, 'result.json'), 'utf8'));
        assert.equal(journalRecords(tasks).length, 0, 'the journal is empty after the replay');
      }
      cur = await restartHeld(cur);
      const c = await connect(cur);
      for (const id of kept) {
        const got = await call(c, 'hermes_result', { id });
        assert.equal(view(got), view(await call(c, 'hermes_result', { id })));
        assert.equal(got.structuredContent.status, 'completed', `${id}: ${JSON.stringify(got)}`);
        assert.deepEqual(got.structuredContent.summary, answers.get(id).structuredContent.summary, id);
        for (const name of ['request.json', 'result.json'])
          assert.equal(readFileSync(join(tasks, id, name), 'utf8'), journaled.get(`${id}/${name}`), `${id}/${name}: the bytes journaled`);
      }
      await c.close();
    }
  } finally {
    rmSync(hold, { force: true });
    await cur.stop();
    await fake.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

test('a batch of task files costs one fdatasync of the journal and no fsync of a task file (strace)', async () => {
  assert.equal(spawnSync('strace', ['-V']).status, 0, 'strace is installed (deps.apt)');
  const { fake, root, tasks, srv } = await rig();
  try {
    const clients = await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map((i) => connect(srv, `st-${i}`)));
    await call(clients[0], 'hermes_task', { task: 'warm up', mode: 'sync', id: 'st-warm' }); // seg.0 made
    const out = join(root, 'strace.out');
    const st = spawn('strace', ['-f', '-y', '-e', 'trace=fsync,fdatasync,syncfs', '-o', out, '-p', String(srv.proc.pid)],
      { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    st.stderr.on('data', (d) => { stderr += d; });
    await sleep(500);
    assert.doesNotMatch(stderr, /Operation not permitted|ptrace/i, 'strace attaches');
    const calls = 10;
    await Promise.all(clients.map((c, w) => (async () => {
      for (let i = 0; i < calls; i++)
        assert.equal((await call(c, 'hermes_task', { task: `st ${w}-${i}`, mode: 'sync', id: `st-${w}-${i}` })).isError, false);
    })()));
    await sleep(1500); // a checkpoint (syncfs) may come in the window: it is allowed
    st.kill('SIGINT');
    await new Promise((res) => st.on('close', res));
    const lines = readFileSync(out, 'utf8').split('\n').filter((l) => /(fsync|fdatasync|syncfs)\(/.test(l));
    const files = clients.length * calls * 2; // request.json and result.json of each
    const perFile = lines.filter((l) => /\bfsync\(/.test(l) || (/fdatasync\(/.test(l) && !/\.journal\//.test(l)));
    assert.deepEqual(perFile, [], 'no task file or directory is fsynced: the journal holds them');
    const journal = lines.filter((l) => /fdatasync\(\d+<[^>]*\.journal\/seg\.\d+>\)/.test(l));
    assert.ok(journal.length >= 1, `the journal is flushed (${lines.join('\n')})`);
    assert.ok(journal.length < files, `one fdatasync per batch, not per file: ${journal.length} for ${files} files`);
    for (const c of clients) await c.close();
  } finally {
    await srv.stop();
    await fake.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

const closed = (proc) => (proc.exitCode !== null || proc.signalCode !== null
  ? Promise.resolve({ code: proc.exitCode, signal: proc.signalCode })
  : new Promise((res) => proc.on('close', (code, signal) => res({ code, signal }))));

// Every answered sync call's result, as hermes_result shows it after a restart.
async function assertAnswered(srv, answers) {
  const c = await connect(srv);
  for (const [id, ans] of answers) {
    const got = await call(c, 'hermes_result', { id });
    assert.equal(got.structuredContent.status, 'completed', `${id}: ${JSON.stringify(got)}`);
    assert.deepEqual(got.structuredContent.summary, ans.structuredContent.summary, id);
  }
  await c.close();
}

// tests/fakes/failsync.c, preloaded: once the flag file exists, the next syncfs (a checkpoint)
// or fdatasync (a journal write or the control file) fails with EIO.
for (const fn of ['syncfs', 'fdatasync']) {
  test(`a failed ${fn} stops the server with the reason; restarted, it has every answered result`, async () => {
    const flagDir = mkdtempSync(join(tmpdir(), 'hm-failsync-'));
    const flag = join(flagDir, 'fail');
    const env = { LD_PRELOAD: join(BUILD, 'failsync.so'), FAILSYNC: fn, FAILSYNC_FLAG: flag,
      ASAN_OPTIONS: `${process.env.ASAN_OPTIONS ?? ''}:verify_asan_link_order=0` }; // the shim has no ASan
    const { fake, root, srv } = await rig({}, { env });
    let srv2;
    try {
      const c = await connect(srv);
      const answers = new Map();
      for (let i = 0; i < 6; i++) {
        const id = `fs-${fn}-${i}`;
        answers.set(id, await call(c, 'hermes_task', { task: `keep ${id} [json]`, mode: 'sync', id }));
      }
      await sleep(1500); // checkpointed: the next flush is the one that fails
      writeFileSync(flag, '');
      const last = `fs-${fn}-last`; // its journal write (fdatasync) or the checkpoint after it (syncfs) fails
      const res = await call(c, 'hermes_task', { task: `keep ${last} [json]`, mode: 'sync', id: last }).catch(() => null);
      if (res && !res.isError) answers.set(last, res);
      const end = await Promise.race([closed(srv.proc), sleep(10000).then(() => 'running')]);
      assert.notEqual(end, 'running', 'the server stopped');
      assert.equal(existsSync(flag), false, 'the shim failed a flush');
      assert.equal(end.signal, null, srv.proc.stderrText);
      assert.notEqual(end.code, 0);
      assert.match(srv.proc.stderrText, /Input\/output error; stopping the server: its next start replays the journal/);
      assert.match(srv.proc.stderrText, fn === 'syncfs' ? /syncfs \(a checkpoint\)/ : /fdatasync of the journal|control file/);
      await c.close().catch(() => {});
      srv2 = await restartHermes(srv);
      await assertAnswered(srv2, answers);
    } finally {
      if (srv2) await srv2.stop(); else await srv.stop();
      await fake.stop();
      rmSync(root, { recursive: true, force: true });
      rmSync(flagDir, { recursive: true, force: true });
    }
  });
}

test('a crafted journal whose task directory is a link is refused: nothing is written outside TASKS_DIR', async () => {
  writeFileSync(hold, '');
  const { fake, root, tasks, srv } = await rig({}, holdOpts);
  let cur = srv;
  try {
    const crash = await answeredThenKilled(cur, tasks, 3);
    rmSync(hold, { force: true });
    cur = crash.srv;
    const outside = join(root, 'outside');
    mkdirSync(outside);
    const id = crash.kept[0];
    rmSync(join(tasks, id), { recursive: true, force: true });
    symlinkSync(outside, join(tasks, id));
    const list = await hermesCli(cur, 'tasks', 'list', '--json');
    assert.notEqual(list.code, 0);
    assert.match(list.stderr, new RegExp(`${id} is not a task directory \\(a symbolic link`));
    const serve = spawnSync(HERMES, ['serve', '--env-file', cur.envFile], { encoding: 'utf8', timeout: 20000 });
    assert.notEqual(serve.status, null, `the server refuses to start (${serve.signal} ${serve.error} ${serve.stderr})`);
    assert.notEqual(serve.status, 0);
    assert.match(serve.stderr, /symbolic link is never followed\): refusing to replay/);
    assert.deepEqual(readdirSync(outside), [], 'nothing written through the link');
    // Without the link, the same journal replays.
    rmSync(join(tasks, id));
    cur = await restartHermes(cur);
    await assertAnswered(cur, new Map(crash.kept.map((k) => [k, crash.answers.get(k)])));
  } finally {
    await cur.stop();
    await fake.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

test('a second server on the same TASKS_DIR is refused at start, with the reason', async () => {
  const { fake, root, srv } = await rig();
  try {
    const serve = spawnSync(HERMES, ['serve', '--env-file', srv.envFile], { encoding: 'utf8', timeout: 20000 });
    assert.notEqual(serve.status, null, 'the second server exits');
    assert.notEqual(serve.status, 0);
    assert.match(serve.stderr, /is used by another hermes-mcp server \(it holds .*\.journal\): give each server its own TASKS_DIR/);
    const c = await connect(srv);
    assert.equal((await call(c, 'hermes_task', { task: 'still here', mode: 'sync', id: 'one-server' })).isError, false);
    await c.close();
  } finally {
    await srv.stop();
    await fake.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

// A burst of tasks (well within a checkpoint interval), pruned at once to TASKS_MAX=2, then
// SIGKILL: none of the pruned comes back from the journal at the restart.
async function burst(srv, prefix, n) {
  const c = await connect(srv);
  const ids = [];
  await Promise.all([0, 1, 2, 3].map(async (w) => {
    for (let i = 0; i < n / 4; i++) {
      const id = `${prefix}-${w}-${i}`;
      assert.equal((await call(c, 'hermes_task', { task: `prune ${id}`, mode: 'sync', id })).isError, false);
      ids.push(id);
    }
  }));
  await c.close();
  return ids;
}

async function assertPrunedStayPruned(cur, tasks, ids) {
  const left = ids.filter((id) => existsSync(join(tasks, id)));
  assert.equal(left.length, 2, `TASKS_MAX=2 kept two: ${left}`);
  await kill9(cur);
  const srv2 = await restartHermes(cur);
  const back = ids.filter((id) => existsSync(join(tasks, id)) && !left.includes(id));
  assert.deepEqual(back, [], 'no pruned task came back from the journal');
  return srv2;
}

test('tasks pruned by the server stay pruned after kill -9 and a restart', async () => {
  const { fake, root, tasks, srv } = await rig();
  let cur = srv;
  try {
    const ids = await burst(cur, 'reap', 12);
    writeFileSync(cur.envFile, readFileSync(cur.envFile, 'utf8') + 'TASKS_MAX=2\n');
    cur.proc.kill('SIGHUP');
    await until(() => /retention: pruned 10 tasks/.test(cur.proc.stderrText), 'the reaper pruned', 15000);
    cur = await assertPrunedStayPruned(cur, tasks, ids);
  } finally {
    await cur.stop();
    await fake.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

test('tasks pruned offline while the server runs stay pruned after kill -9 and a restart', async () => {
  const { fake, root, tasks, srv } = await rig({ TASKS_MAX: '2' });
  let cur = srv;
  try {
    const ids = await burst(cur, 'cli', 12);
    const prune = await hermesCli(cur, 'tasks', 'prune');
    assert.equal(prune.code, 0, prune.stderr);
    assert.match(prune.stdout, /pruned 10 of 12 tasks/);
    cur = await assertPrunedStayPruned(cur, tasks, ids);
  } finally {
    await cur.stop();
    await fake.stop();
    rmSync(root, { recursive: true, force: true });
  }
});
