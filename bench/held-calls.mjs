// Held calls (issue 5): N concurrent sync hermes_task calls held open against hermes-mcp, whose
// fake agent takes DELAY_MS per task, while a second client measures tools/list latency on its
// own keep-alive connection. Reports the server's RSS per held call, the second client's
// latency, and that every held call completed with a correct result.
//
// Run by bench/run.sh:  node held-calls.mjs
// Environment: URL (hermes-mcp's /mcp), TOKEN, PID (hermes-mcp's pid), N, DELAY_MS, PREFIX
// (task id prefix), PROBES (tools/list requests of the second client).
// Prints one JSON line.
import http from 'node:http';
import { readFileSync } from 'node:fs';

const url = new URL(process.env.URL);
const token = process.env.TOKEN;
const pid = process.env.PID;
const n = Number(process.env.N || 10000);
const delay = Number(process.env.DELAY_MS || 200);
const prefix = process.env.PREFIX || 'held';
const probes = Number(process.env.PROBES || 200);

const held = new http.Agent({ keepAlive: false, maxSockets: Infinity });
const probe = new http.Agent({ keepAlive: true, maxSockets: 1 });
const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
  Authorization: `Bearer ${token}` };

function request(agent, method, path, body) {
  return new Promise((resolve) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path, agent, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
      res.on('error', (e) => resolve({ status: 0, text: String(e) }));
    });
    req.on('error', (e) => resolve({ status: 0, text: String(e) }));
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

const rssKb = () => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]);
const jobs = async () => {
  const r = await request(probe, 'GET', '/health');
  try { return JSON.parse(r.text).jobs ?? -1; } catch { return -1; }
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const rss0 = rssKb();
const t0 = Date.now();
let answered = 0;
const calls = [];
for (let i = 0; i < n; i++) {
  const body = { jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'hermes_task',
    arguments: { task: `held call ${i} [delay=${delay}]`, mode: 'sync', id: `${prefix}-${i}` } } };
  calls.push(request(held, 'POST', url.pathname, body).then((r) => { answered++; return r; }));
  if (i % 500 === 499) await sleep(5); // let the accept queue drain
}

// Held: every call is accepted (a job in the bridge) or already answered.
let maxJobs = 0;
for (let i = 0; i < 600; i++) {
  const j = await jobs();
  maxJobs = Math.max(maxJobs, j);
  if (j + answered >= n) break;
  await sleep(50);
}
const accepted_ms = Date.now() - t0;
// RSS per held call: the growth over idle, divided by the calls open at that moment.
const rssAccepted = rssKb();
const heldAtSample = n - answered;
let rssHeld = rssAccepted;

// The second client, while the calls are held.
const lat = [];
let probeFailures = 0;
for (let i = 0; i < probes; i++) {
  const s = process.hrtime.bigint();
  const r = await request(probe, 'POST', url.pathname, { jsonrpc: '2.0', id: `p${i}`, method: 'tools/list' });
  lat.push(Number(process.hrtime.bigint() - s) / 1e6);
  if (r.status !== 200 || !r.text.includes('"tools"')) probeFailures++;
  if (i % 20 === 0) rssHeld = Math.max(rssHeld, rssKb());
}
const stillHeld = n - answered;
lat.sort((a, b) => a - b);
const pct = (p) => lat[Math.min(lat.length - 1, Math.ceil((p / 100) * lat.length) - 1)];

const results = await Promise.all(calls);
let ok = 0;
let firstBad = null;
for (const r of results) {
  let good = false;
  try {
    const m = JSON.parse(r.text);
    good = r.status === 200 && m.result && m.result.isError === false &&
      m.result.structuredContent?.status === 'completed';
  } catch { /* not JSON */ }
  if (good) ok++;
  else firstBad ??= `${r.status} ${r.text.slice(0, 200)}`;
}
console.log(JSON.stringify({
  held: n, ok, max_jobs: maxJobs, still_held_after_probes: stillHeld, accepted_ms,
  rss_idle_kb: rss0, rss_accepted_kb: rssAccepted, held_at_sample: heldAtSample, rss_max_kb: rssHeld,
  per_call_kb: Number(((rssAccepted - rss0) / Math.max(1, heldAtSample)).toFixed(2)),
  list_p50_ms: Number(pct(50).toFixed(3)), list_p99_ms: Number(pct(99).toFixed(3)),
  list_max_ms: Number(lat[lat.length - 1].toFixed(3)), probe_failures: probeFailures,
  total_ms: Date.now() - t0, first_bad: firstBad,
}));
