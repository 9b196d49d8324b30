// A recording shim for the gateway tests: started as the upstream's command, it runs the real
// server (argv after the log path), passes stdin/stdout through unchanged, and appends every
// line the gateway sends to the log (one JSON-RPC message per line). It also writes its own pid
// and the server's to LOG.pids, so a test can check that none outlives the gateway.
// Usage: node gwtee.mjs LOG SERVER.js [ARGS...]
import { spawn } from 'node:child_process';
import { appendFileSync, writeFileSync } from 'node:fs';

const [log, ...server] = process.argv.slice(2);
const child = spawn(process.execPath, server, { stdio: ['pipe', 'inherit', 'inherit'] });
writeFileSync(`${log}.pids`, `${process.pid} ${child.pid}\n`);
let pending = '';
process.stdin.on('data', (d) => {
  child.stdin.write(d);
  pending += d;
  const lines = pending.split('\n');
  pending = lines.pop();
  if (lines.length) appendFileSync(log, lines.map((l) => l + '\n').join(''));
});
process.stdin.on('end', () => child.stdin.end());
child.on('exit', (code) => process.exit(code ?? 1));
