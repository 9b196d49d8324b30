#!/usr/bin/env node
// bench/store.mjs — what the PostgreSQL store costs per request (make bench-store).
//
// One fake agent (answering at once), one real PostgreSQL 15 (tests/lib/pg.mjs: its own cluster
// on this disk, durability settings left at PostgreSQL's defaults), and these servers, all the
// release build, all on these 2 cores:
//   files    one hermes-mcp, tasks in TASKS_DIR on disk (the default store)
//   pg       one hermes-mcp with STORE_URL (the records in PostgreSQL)
//   pg-nginx one hermes-mcp with STORE_URL behind the nginx block of docs/guides/replicas.md
//   pg-2     two replicas (REPLICAS=2) on the same database behind the same block
// Loads (wrk, bench/lua): tools/call hermes_result of a stored task (a read: PostgreSQL is asked
// for the task on every call) and sync hermes_task through the fake agent (request and result
// written: a durable commit each). Servers are rotated between runs; each run records the load
// average before it and the CPU time hermes-mcp and PostgreSQL used during it.
//
// Usage: node bench/store.mjs > section.md (or make bench-store). Settings: BENCH_SECONDS=5,
// BENCH_RUNS=3, BENCH_CONNS="1 16 64", BENCH_LOADS="hermes_result hermes_task",
// BENCH_TIMEOUT=10s. Needs wrk, nginx (nginx-light) and PostgreSQL 15 (deps.apt); builds with
// make before. Everything it starts is stopped, and its directories removed, on exit.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROOT, HERMES, FAKE, startHermes, agentEnv, sleep } from '../tests/lib/lib.mjs';
import { startPostgres } from '../tests/lib/pg.mjs';
import { nginxBlocks, substitute, startNginx } from '../tests/lib/nginx.mjs';

const SECONDS = Number(process.env.BENCH_SECONDS || 5);
const RUNS = Number(process.env.BENCH_RUNS || 3);
const CONNS = (process.env.BENCH_CONNS || '1 16 64').split(/\s+/).filter(Boolean).map(Number);
const LOADS = (process.env.BENCH_LOADS || 'hermes_result hermes_task').split(/\s+/).filter(Boolean);
const TIMEOUT = process.env.BENCH_TIMEOUT || '10s';
const TICK_US = 1e6 / Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);
const log = (...a) => console.error('bench-store:', ...a);

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
// CPU time (us) of pids and, for a postmaster, of its backends too.
function cpuUs(pids) {
  let ticks = 0;
  for (const p of pids) {
    try {
      const s = readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' '); // from field 3 (state) on
      ticks += Number(f[11]) + Number(f[12]); // utime, stime
    } catch { /* gone */ }
  }
  return ticks * TICK_US;
}
function children(ppid) {
  const out = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[1]) === ppid) out.push(Number(d));
    } catch { /* gone */ }
  }
  return out;
}

function wrk(script, url, conns, token, nonce) {
  const r = spawnSync('wrk', ['--latency', `-t${Math.min(conns, 2)}`, `-c${conns}`, `-d${SECONDS}s`, '--timeout', TIMEOUT,
    '-s', join(ROOT, 'bench/lua', script), url],
  { encoding: 'utf8', env: { ...process.env, BENCH_TOKEN: token, BENCH_NONCE: nonce } });
  const m = (r.stdout || '').match(/^BENCH (.*)$/m);
  if (!m) return { rps: 0, p50_us: 0, p99_us: 0, failures: -1, socket_errors: -1, text: r.stdout + r.stderr };
  return Object.fromEntries(m[1].split(' ').map((kv) => kv.split('=')).map(([k, v]) => [k, Number(v)]));
}

async function post(url, token, body) {
  const res = await fetch(url, { method: 'POST', body: JSON.stringify(body),
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' } });
  return res.text();
}

const work = mkdtempSync(join(ROOT, 'bench/.work/store-'));
const stops = [];
process.on('exit', () => rmSync(work, { recursive: true, force: true }));
for (const s of ['SIGINT', 'SIGTERM']) process.on(s, () => process.exit(130));

async function main() {
  const token = randomBytes(32).toString('hex');
  // The fake agent, not recording (its own writes would share the disk with the task files).
  const key = randomBytes(24).toString('hex');
  writeFileSync(join(work, 'agent.key'), key + '\n', { mode: 0o600 });
  const fakeProc = spawn(FAKE, ['--port', '0', '--key-file', join(work, 'agent.key'), '--max-concurrent', '0', '--delay-scale', '0'],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  stops.push(async () => { fakeProc.kill('SIGTERM'); });
  const fakePort = await new Promise((res, rej) => {
    let out = '';
    fakeProc.stdout.on('data', (d) => { out += d; const m = out.match(/listening on http:\/\/[^\s/]+:(\d+)/); if (m) res(Number(m[1])); });
    fakeProc.on('exit', (c) => rej(new Error(`fake agent exited ${c}`)));
  });
  const agent = agentEnv({ port: fakePort, key });
  stops.push(async () => rmSync(dirname(agent), { recursive: true, force: true }));

  const pg = await startPostgres();
  stops.push(() => pg.stop());
  const initEnv = join(work, 'init.env');
  writeFileSync(initEnv, `STORE_URL=${pg.url}\n`, { mode: 0o600 });
  const init = spawnSync(HERMES, ['store', 'init', '--env-file', initEnv], { encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`store init: ${init.stderr}`);
  const postmaster = Number(readFileSync(join(pg.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);

  const common = { MCP_AUTH_TOKEN: token, RATE_LIMIT_PER_MIN: '0', RATE_LIMIT_AUTH_PER_MIN: '0',
    HERMES_ENV_PATH: agent, LOG_LEVEL: 'warn' };
  const start = async (name, extra) => {
    const tasks = join(work, `tasks-${name}`);
    mkdirSync(tasks);
    const srv = await startHermes({ ...common, TASKS_DIR: tasks, ...extra });
    stops.push(() => srv.stop());
    return srv;
  };
  const files = await start('files', {});
  const pg1 = await start('pg', { STORE_URL: pg.url });
  const pgA = await start('pg-a', { STORE_URL: pg.url, REPLICA_NAME: 'a', REPLICAS: '2', TRUSTED_PROXIES: '127.0.0.1,::1' });
  const pgB = await start('pg-b', { STORE_URL: pg.url, REPLICA_NAME: 'b', REPLICAS: '2', TRUSTED_PROXIES: '127.0.0.1,::1' });
  // The guide's block edited for two replicas as the guide says; for pg-nginx both of its
  // addresses are the one replica's (pg1), so the path is the same and only the second replica
  // differs.
  const block = (a, b) => (port) => {
    let t = substitute(nginxBlocks('docs/guides/replicas.md')[0], [['    server 10.0.0.13:8765;\n', ''],
      ['server 10.0.0.13:8765 backup;', 'server 10.0.0.11:8765 backup;']]);
    t = t.split('\n').filter((l) => !/^upstream hermes_mcp_c |^\s*~\^c\\\./.test(l)).join('\n');
    return substitute(t, [['listen 443 ssl;', `listen 127.0.0.1:${port};`],
      ['10.0.0.11:8765', `127.0.0.1:${a}`], ['10.0.0.12:8765', `127.0.0.1:${b}`]]);
  };
  const nx1 = await startNginx(block(pg1.port, pg1.port));
  stops.push(() => nx1.stop());
  const nx2 = await startNginx(block(pgA.port, pgB.port));
  stops.push(() => nx2.stop());
  const nginxPid = (nx) => [Number(readFileSync(join(nx.dir, 'nginx.pid'), 'utf8')), ...children(Number(readFileSync(join(nx.dir, 'nginx.pid'), 'utf8')))];

  const servers = {
    files: { url: files.url, pids: () => [files.proc.pid], label: 'files (disk)' },
    pg: { url: pg1.url, pids: () => [pg1.proc.pid], label: 'PostgreSQL' },
    'pg-nginx': { url: `${nx1.base}/mcp`, pids: () => [pg1.proc.pid], nginx: () => nginxPid(nx1), label: 'PostgreSQL, nginx, 1 replica' },
    'pg-2': { url: `${nx2.base}/mcp`, pids: () => [pgA.proc.pid, pgB.proc.pid], nginx: () => nginxPid(nx2), label: 'PostgreSQL, nginx, 2 replicas' },
  };
  // The task every hermes_result reads, stored through each store once.
  const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'hermes_task', arguments: { task: 'what is 6 * 7', mode: 'sync', id: 'bench-result' } } };
  for (const u of [files.url, pg1.url]) {
    const t = await post(u, token, call);
    if (!t.includes('"completed"')) throw new Error(`bench-result not stored: ${t.slice(0, 300)}`);
  }
  log(`servers up; PostgreSQL ${pg.url.replace(/\/\/[^@]*@/, '//')}`);

  const rows = [];
  const order = Object.keys(servers);
  for (const load of LOADS) {
    for (const c of CONNS) {
      for (let r = 0; r < RUNS; r++) {
        for (let i = 0; i < order.length; i++) {
          const name = order[(i + r) % order.length];
          const s = servers[name];
          if (load === 'hermes_task') spawnSync('sync');
          const la = loadavg();
          const pgPids = [postmaster, ...children(postmaster)];
          const hp = s.pids();
          const c0 = cpuUs(hp), p0 = cpuUs(pgPids), n0 = s.nginx ? cpuUs(s.nginx()) : 0;
          const w = wrk(`${load}.lua`, s.url, c, token, `${r}${name}${randomBytes(4).toString('hex')}`);
          const pgNow = [postmaster, ...children(postmaster)];
          const row = { load, c, r, name, la, ...w,
            hermes_us: cpuUs(hp) - c0, pg_us: cpuUs(pgNow) - p0, nginx_us: s.nginx ? cpuUs(s.nginx()) - n0 : 0 };
          rows.push(row);
          log(`${load} c=${c} run ${r + 1}/${RUNS} ${name}: ${w.rps} req/s p50 ${w.p50_us} us p99 ${w.p99_us} us` +
            ` failures ${w.failures} socket errors ${w.socket_errors} (load ${la})${w.text ? `\n${w.text}` : ''}`);
        }
      }
    }
  }
  writeFileSync(join(ROOT, 'bench/.work/store-rows.json'), JSON.stringify(rows, null, 1));
  report(rows, servers);
}

const med = (v) => { const s = [...v].sort((a, b) => a - b); const n = s.length; return n === 0 ? NaN : n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
const f0 = (x) => (Number.isFinite(x) ? x.toFixed(0) : '-');
const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '-');
const f3 = (x) => (Number.isFinite(x) ? x.toFixed(3) : '-');

function report(rows, servers) {
  const out = [];
  const p = (s = '') => out.push(s);
  const valid = (l, c, n) => rows.filter((x) => x.load === l && x.c === c && x.name === n && x.failures === 0 && x.socket_errors === 0);
  const title = { hermes_result: 'tools/call hermes_result (a stored task read)', hermes_task: 'tools/call hermes_task, sync, through the fake agent' };
  const names = Object.keys(servers);
  const las = rows.map((x) => Number(x.la.split(' ')[0]));
  p(`${RUNS} runs × ${SECONDS} s per cell (wrk, at most 2 threads), servers rotated between runs; each cell the median of the valid runs, with the lowest and highest req/s in brackets; the load average (1 min) before the runs of this table ranged ${f2(Math.min(...las))}–${f2(Math.max(...las))}.`);
  for (const l of LOADS) {
    p();
    p(`### ${title[l]}`);
    p();
    p(`| conns | ${names.map((n) => `${servers[n].label} req/s [min–max] | p50 | p99`).join(' | ')} | load avg | valid |`);
    p(`|---:|${names.map(() => '---:|---:|---:').join('|')}|---:|---:|`);
    for (const c of CONNS) {
      const cells = names.map((n) => {
        const v = valid(l, c, n);
        if (v.length === 0) return '- | - | -';
        const rps = v.map((x) => x.rps);
        return `${f0(med(rps))} [${f0(Math.min(...rps))}–${f0(Math.max(...rps))}] | ${f3(med(v.map((x) => x.p50_us)) / 1000)} | ${f3(med(v.map((x) => x.p99_us)) / 1000)}`;
      });
      const la = rows.filter((x) => x.load === l && x.c === c).map((x) => Number(x.la.split(' ')[0]));
      p(`| ${c} | ${cells.join(' | ')} | ${f2(Math.min(...la))}–${f2(Math.max(...la))} | ${names.map((n) => `${valid(l, c, n).length}/${rows.filter((x) => x.load === l && x.c === c && x.name === n).length}`).join(' ')} |`);
    }
    p();
    p('CPU per request, us (median over the valid runs; hermes-mcp: every replica; PostgreSQL: the postmaster and its backends; nginx: its master and worker):');
    p();
    p(`| conns | ${names.map((n) => `${servers[n].label}: hermes-mcp | PostgreSQL | nginx`).join(' | ')} |`);
    p(`|---:|${names.map(() => '---:|---:|---:').join('|')}|`);
    for (const c of CONNS) {
      const cells = names.map((n) => {
        const v = valid(l, c, n);
        const per = (k) => med(v.map((x) => x[k] / Math.max(1, x.requests)));
        return `${f0(per('hermes_us'))} | ${n === 'files' ? '-' : f0(per('pg_us'))} | ${servers[n].nginx ? f0(per('nginx_us')) : '-'}`;
      });
      p(`| ${c} | ${cells.join(' | ')} |`);
    }
  }
  process.stdout.write(out.join('\n') + '\n');
}

main().then(async () => {
  for (const s of stops.reverse()) await s().catch(() => {});
  process.exit(0);
}, async (e) => {
  console.error(e);
  for (const s of stops.reverse()) await s().catch(() => {});
  process.exit(1);
});
