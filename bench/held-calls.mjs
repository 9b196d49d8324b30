// Holds N concurrent tools/call test_wait(ms) calls open against build/conformance-server,
// measures a second client's tools/list latency meanwhile, the server's RSS per held call, and
// checks every held call completes correctly. Run through bench/held-calls.sh.
import http from 'node:http';
import { readFileSync } from 'node:fs';
const [port, n, ms] = process.argv.slice(2).map(Number);
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
function post(body, headers = {}) {
  return new Promise((res, rej) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', agent,
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', ...headers } }, (r) => {
      let d = ''; r.on('data', (c) => d += c); r.on('end', () => res({ status: r.statusCode, headers: r.headers, text: d }));
    });
    req.on('error', rej); req.end(JSON.stringify(body));
  });
}
const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {} } });
const sid = init.headers['mcp-session-id'];
const rss = () => Number(readFileSync(`/proc/${process.env.SPID}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]);
const rss0 = rss();
const t0 = Date.now();
const calls = [];
for (let i = 0; i < n; i++) calls.push(post({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'test_wait', arguments: { ms } } }, { 'Mcp-Session-Id': sid }));
await new Promise((r) => setTimeout(r, ms / 2));
const rss1 = rss();
const lat = [];
for (let i = 0; i < 50; i++) { const s = process.hrtime.bigint(); await post({ jsonrpc: '2.0', id: 'p' + i, method: 'tools/list' }, { 'Mcp-Session-Id': sid }); lat.push(Number(process.hrtime.bigint() - s) / 1e6); }
lat.sort((a, b) => a - b);
const res = await Promise.all(calls);
const ok = res.filter((r) => r.status === 200 && JSON.parse(r.text).result?.content?.[0]?.text === 'waited').length;
console.log(JSON.stringify({ held: n, ok, rss_idle_kb: rss0, rss_held_kb: rss1, per_call_kb: ((rss1 - rss0) / n).toFixed(2), list_p50_ms: lat[25].toFixed(2), list_p99_ms: lat[49].toFixed(2), total_ms: Date.now() - t0 }));
