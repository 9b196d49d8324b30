// A real PostgreSQL 15 (Debian's, /usr/lib/postgresql/15/bin) for the store's tests: each
// startPostgres() makes its own cluster in a fresh temporary directory (a copy of one made by
// initdb once per process, trust authentication, with a database for the server), listening on
// 127.0.0.1 only, on a free port, its unix socket in that directory. initdb and postgres refuse
// to run as root: run as root (CI), the clusters belong to nobody and run as nobody (setpriv);
// run as a user, they run as that user. Durability settings stay PostgreSQL's defaults (fsync,
// synchronous_commit, full_page_writes on): the store's durability is what the tests check;
// { durable: false } turns them off for a bench that measures something else.
//
// Nothing outlives the test file: a cluster not stopped is shut down (and its directory removed)
// when the process exits or is ended by SIGINT, SIGTERM or SIGHUP; if the process dies without
// exiting (SIGKILL), the kernel sends the postmaster SIGINT, a fast shutdown (setpriv
// --pdeathsig), and only the directories stay behind.
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { constants as osConstants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERMES, freePort, sleep } from './lib.mjs';

export const PG_BIN = process.env.HM_PG_BIN || '/usr/lib/postgresql/15/bin';
export const PG_USER = 'hermes'; // the cluster's superuser, the one the URL names
export const PG_DB = 'hermes';

const NOBODY = { uid: 65534, gid: 65534 };
const ROOT_USER = process.getuid?.() === 0;
// Runs a command as the cluster's owner (nobody when we are root, else ourselves), signalled
// when its parent dies.
const asOwner = (deathSignal) => ['setpriv', `--pdeathsig=${deathSignal}`,
  ...(ROOT_USER ? [`--reuid=${NOBODY.uid}`, `--regid=${NOBODY.gid}`, '--clear-groups'] : [])];

// The environment of PostgreSQL's programs: none of ours, above all no PG* variable that would
// point psql or postgres at another cluster.
function pgEnv(more = {}) {
  const env = { PATH: '/usr/bin:/bin', LC_ALL: 'C', TZ: 'UTC' };
  if (process.env.HOME && !ROOT_USER) env.HOME = process.env.HOME;
  return { ...env, ...more };
}

// Runs argv; resolves { code, stdout, stderr }; input: written to stdin.
function exec(argv, { input, env = pgEnv() } = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(argv[0], argv.slice(1), { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    p.on('error', reject);
    p.on('close', (code, signal) => resolve({ code: code ?? signal, stdout, stderr }));
    if (input !== undefined) {
      p.stdin.on('error', () => {}); // a program that exits unread: its status says why
      p.stdin.end(input);
    }
  });
}

// Clusters still running, shut down when the process exits, and the template's directory,
// removed then. Once this module made either, SIGINT, SIGTERM and SIGHUP (a runner's timeout,
// ^C) exit the process the same way, so that they are shut down and removed then too.
const live = new Set();
const leftovers = new Set();
process.on('exit', () => {
  for (const c of live) c.exitNow();
  if (process.env.HM_PG_KEEP !== '1') for (const d of leftovers) rmSync(d, { recursive: true, force: true });
});
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];
let guarded = false;
function guard() {
  if (!guarded) for (const s of SIGNALS) process.on(s, (sig) => process.exit(128 + osConstants.signals[sig]));
  guarded = true;
}

// A fresh directory for a cluster (or the template), which the owner can write to.
async function ownerDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (ROOT_USER) {
    chownSync(dir, NOBODY.uid, NOBODY.gid);
    const r = await exec([...asOwner('KILL'), 'test', '-w', dir]);
    if (r.code !== 0) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`nobody cannot write ${dir}: set TMPDIR to a directory every user can reach`);
    }
  }
  return dir;
}

// The data directory every cluster of this process starts from, made once (initdb, then the
// server's database created in single-user mode): a copy of it takes a tenth of an initdb.
// The copies share initdb's system identifier, which only replication would look at.
let template = null;
function templateData() {
  template ??= (async () => {
    const dir = await ownerDir('hm-pg-template-');
    leftovers.add(dir);
    const data = join(dir, 'data');
    let r = await exec([...asOwner('KILL'), join(PG_BIN, 'initdb'), '-D', data, '-A', 'trust', '-N',
      '--no-instructions', '-U', PG_USER, '-E', 'UTF8', '--locale=C']);
    if (r.code !== 0) throw new Error(`initdb exited with ${r.code}: ${r.stderr}`);
    r = await exec([...asOwner('KILL'), join(PG_BIN, 'postgres'), '--single', '-D', data, 'postgres'],
      { input: `CREATE DATABASE ${PG_DB};\n` });
    if (r.code !== 0 || /ERROR/.test(r.stdout + r.stderr)) {
      throw new Error(`postgres --single exited with ${r.code}: ${r.stdout}${r.stderr}`);
    }
    return data;
  })().catch((e) => { template = null; throw e; });
  return template;
}

// A synchronous pause (the 'exit' handler cannot await).
const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

// Starts a cluster. opts: port (default: a free one, another one tried if taken before postgres
// binds it), durable (default true), settings ({name: value} more postgres -c settings).
// Returns { url, port, dataDir, dir, logPath, log(), template (the data directory copied),
// psql(sql, {db}), stop(), kill(), restart() }.
export async function startPostgres({ port, durable = true, settings = {} } = {}) {
  if (!existsSync(join(PG_BIN, 'postgres'))) {
    throw new Error(`no PostgreSQL 15 in ${PG_BIN}: scripts/deps.sh installs it (deps.apt: postgresql)`);
  }
  guard();
  const source = await templateData();
  const dir = await ownerDir('hm-pg-');
  const dataDir = join(dir, 'data');
  const logPath = join(dir, 'postgres.log');
  const fixedPort = port !== undefined;
  const all = { listen_addresses: '127.0.0.1', unix_socket_directories: dir, logging_collector: 'off',
    ...(durable ? {} : { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' }), ...settings };
  let proc = null; // the postmaster
  let removed = false;

  const log = () => { try { return readFileSync(logPath, 'utf8'); } catch { return ''; } };
  const fail = (what, detail) => {
    throw new Error(`postgres (${dir}): ${what}\n${detail}\n--- log ---\n${log().split('\n').slice(-20).join('\n')}`);
  };

  // cp -a keeps the owner (nobody, when we are root) and the modes (700) postgres insists on.
  const copied = await exec(['cp', '-a', source, dataDir]);
  if (copied.code !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`cp -a ${source} ${dataDir}: ${copied.stderr}`);
  }

  // Starts the postmaster on port; resolves once postmaster.pid says it accepts connections
  // (written by this postmaster: after kill() the old file is still there).
  async function launch() {
    const fd = openSync(logPath, 'a');
    const args = ['-D', dataDir, '-p', String(port)];
    for (const [k, v] of Object.entries(all)) args.push('-c', `${k}=${v}`);
    // A process group of its own: kill() reaches the backends too.
    proc = spawn(asOwner('INT')[0], [...asOwner('INT').slice(1), join(PG_BIN, 'postgres'), ...args],
      { stdio: ['ignore', fd, fd], env: pgEnv(), detached: true });
    closeSync(fd);
    proc.unref();
    const me = proc;
    me.exited = new Promise((r) => me.on('exit', r));
    const t0 = Date.now();
    for (;;) {
      if (me.exitCode !== null || me.signalCode !== null) return false;
      let lines = [];
      try { lines = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n'); } catch { /* not yet */ }
      if (Number(lines[0]) === me.pid && lines[7]?.trim() === 'ready') return true;
      if (Date.now() - t0 > 30000) fail('not ready in 30 s', '');
      await sleep(10);
    }
  }
  // The first start may move to another free port if this one was taken in the meantime; a
  // restart keeps its port (the URL the tests hold).
  async function up(first) {
    if (first && !fixedPort) port = await freePort();
    for (let attempt = 0; ; attempt++) {
      if (await launch()) return;
      await proc.exited;
      const taken = /could not bind|Address already in use|could not create any TCP\/IP sockets/.test(log());
      if (!first || fixedPort || !taken || attempt >= 5) fail('exited before it was ready', `port ${port}`);
      port = await freePort();
    }
  }
  // Ends the postmaster: SIGINT is a fast shutdown (sessions rolled back, a checkpoint, exit),
  // SIGQUIT an immediate one, SIGKILL a crash of the postmaster and its backends; one that takes
  // more than 20 s is killed with its backends.
  async function down(signal) {
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const me = proc;
    try { process.kill(signal === 'SIGKILL' ? -me.pid : me.pid, signal); } catch { /* gone */ }
    const late = setTimeout(() => { try { process.kill(-me.pid, 'SIGKILL'); } catch { /* gone */ } }, 20000);
    await me.exited;
    clearTimeout(late);
  }

  const psqlArgs = (db) => [join(PG_BIN, 'psql'), '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1',
    '-d', `postgresql://${PG_USER}@127.0.0.1:${port}/${db}`];
  const pg = {
    dir, dataDir, logPath, log, template: source,
    get port() { return port; },
    get url() { return `postgresql://${PG_USER}@127.0.0.1:${port}/${PG_DB}`; },
    get pid() { return proc?.pid; },
    // Runs sql (any number of statements) through psql in the server's database (or db); resolves
    // its output without the final newline (unaligned, tuples only: "a|b" a row, rows joined by
    // "\n", '' for none), rejects on any error.
    async psql(sql, { db = PG_DB } = {}) {
      const r = await exec(psqlArgs(db), { input: sql });
      if (r.code !== 0) throw new Error(`psql exited with ${r.code}: ${r.stderr.trim()}`);
      return r.stdout.replace(/\n$/, '');
    },
    // The end of the cluster: an immediate shutdown (SIGQUIT: the postmaster ends its backends
    // and exits, no checkpoint for data about to go), then its directory is removed.
    async stop() {
      live.delete(pg);
      await down('SIGQUIT');
      if (!removed && process.env.HM_PG_KEEP !== '1') rmSync(dir, { recursive: true, force: true });
      removed = true;
    },
    // A crash: the postmaster and every backend get SIGKILL; the data stays for restart().
    async kill() { await down('SIGKILL'); },
    // Stops (fast shutdown) if running, then starts again on the same port and data; after
    // kill(), this is crash recovery.
    async restart() {
      await down('SIGINT');
      await up(false);
    },
    // From the 'exit' handler: an immediate shutdown, waited for at most 5 s, then SIGKILL.
    exitNow() {
      if (proc && proc.exitCode === null && proc.signalCode === null) {
        try { process.kill(proc.pid, 'SIGQUIT'); } catch { /* gone */ }
        for (let i = 0; i < 100; i++) {
          try { readFileSync(join(dataDir, 'postmaster.pid')); } catch { break; }
          pause(50);
        }
        try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ }
      }
      if (process.env.HM_PG_KEEP !== '1') rmSync(dir, { recursive: true, force: true });
    },
  };
  live.add(pg);
  try {
    await up(true);
  } catch (e) {
    await pg.stop();
    throw e;
  }
  return pg;
}

// `hermes-mcp store init` on pg's database, as an operator runs it: an env file of its own
// (mode 600, in dir) naming only STORE_URL. Returns spawnSync's result ({status, stdout, stderr}).
export function storeInit(pg, dir) {
  const env = join(dir, 'store-init.env');
  writeFileSync(env, `STORE_URL=${pg.url}\n`, { mode: 0o600 });
  return spawnSync(HERMES, ['store', 'init', '--env-file', env], { encoding: 'utf8' });
}
