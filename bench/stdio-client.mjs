// stdio-client.mjs — the "direct" baseline of bench/gateway.sh: a minimal MCP client that starts
// a stdio server as its child, initializes it (2025-11-25) and then keeps CONNS tools/call
// requests in flight for SECONDS, one new request the moment an answer comes back, as wrk does
// with CONNS connections. Nothing but newline-delimited JSON-RPC over the child's stdin/stdout:
// what hermes-mcp's gateway does with the same child, without HTTP, so the difference between
// the two is what the gateway adds. An answer counts as good when it is a result without
// isError:true; the latency of each call is measured from its write to its answer.
// Usage: node stdio-client.mjs CONNS SECONDS TOOL ARGS_JSON -- COMMAND [ARG...]
// Prints the line bench/run.sh reads from wrk (see bench/lua/common.lua), and the CPU the server
// used over the run (per cent of one core, from /proc; - when unreadable):
//   BENCH requests=N duration_us=N rps=X p50_us=N p99_us=N failures=N socket_errors=N upstream_cpu_pct=X
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

const [connsArg, secondsArg, tool, argsJson, dashes, command, ...commandArgs] = process.argv.slice(2);
if (dashes !== '--' || !command) {
  console.error('usage: stdio-client.mjs CONNS SECONDS TOOL ARGS_JSON -- COMMAND [ARG...]');
  process.exit(2);
}
const conns = Number(connsArg);
const seconds = Number(secondsArg);
const args = JSON.parse(argsJson);

const child = spawn(command, commandArgs, { stdio: ['pipe', 'pipe', 'inherit'] });
child.on('exit', (code, signal) => {
  if (!finished) {
    console.error(`stdio-client: the server exited (${code ?? signal}) during the run`);
    process.exit(1);
  }
});

const pending = new Map();   // id -> [resolve, start time]
let nextId = 1;
let finished = false;
let buffer = '';
child.stdout.setEncoding('utf8');
child.stdout.on('data', (chunk) => {
  buffer += chunk;
  let nl;
  while ((nl = buffer.indexOf('\n')) >= 0) {
    const line = buffer.slice(0, nl);
    buffer = buffer.slice(nl + 1);
    if (!line.trim()) continue;
    const msg = JSON.parse(line);
    const waiter = msg.id !== undefined && pending.get(msg.id);
    if (!waiter) continue;   // a notification or a request of the server's: not ours
    pending.delete(msg.id);
    waiter(msg);
  }
});

function call(method, params) {
  const id = nextId++;
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
  return new Promise((resolve) => pending.set(id, resolve));
}

const init = await call('initialize', { protocolVersion: '2025-11-25', capabilities: {},
  clientInfo: { name: 'bench-stdio-client', version: '1' } });
if (!init.result) {
  console.error(`stdio-client: initialize failed: ${JSON.stringify(init).slice(0, 200)}`);
  process.exit(1);
}
child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');

// utime + stime of the child, in clock ticks (fields 14 and 15 of /proc/PID/stat, counted after
// the command name's closing parenthesis).
function cpuTicks(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]);
  } catch { return NaN; }
}
const ticksPerSecond = 100;   // USER_HZ, 100 on Linux for every architecture we build on

const latencies = [];
let failures = 0;
let firstFailure = null;
const ticks0 = cpuTicks(child.pid);
const t0 = process.hrtime.bigint();
const deadline = t0 + BigInt(Math.round(seconds * 1e9));

async function worker() {
  while (process.hrtime.bigint() < deadline) {
    const start = process.hrtime.bigint();
    const msg = await call('tools/call', { name: tool, arguments: args });
    latencies.push(Number(process.hrtime.bigint() - start) / 1000);
    if (!msg.result || msg.result.isError === true) {
      failures++;
      firstFailure ??= JSON.stringify(msg).slice(0, 200);
    }
  }
}
await Promise.all(Array.from({ length: conns }, worker));
const durationUs = Number(process.hrtime.bigint() - t0) / 1000;
const cpuPct = (cpuTicks(child.pid) - ticks0) / ticksPerSecond / (durationUs / 1e6) * 100;
finished = true;
child.kill('SIGTERM');

latencies.sort((a, b) => a - b);
const pct = (p) => (latencies.length ? Math.round(latencies[Math.min(latencies.length - 1,
  Math.floor((p / 100) * latencies.length))]) : 0);
console.log(`BENCH requests=${latencies.length} duration_us=${Math.round(durationUs)} ` +
  `rps=${(latencies.length / (durationUs / 1e6)).toFixed(1)} p50_us=${pct(50)} p99_us=${pct(99)} ` +
  `failures=${failures} socket_errors=0 upstream_cpu_pct=${Number.isFinite(cpuPct) ? cpuPct.toFixed(0) : '-'}`);
if (firstFailure) console.log(`BENCH_FIRST_FAILURE ${firstFailure}`);
