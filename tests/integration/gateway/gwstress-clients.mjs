// The client side of gwstress.test.mjs, in its own process so that its sockets (fetch keeps
// connections alive in a pool a test cannot close) are all gone when it exits, and the server's
// fd count can be compared with its level before. argv: URL, the Authorization header, the
// child's pid to kill. 4 official SDK clients send 100 calls in 10 waves 60 ms apart, the child
// is killed (SIGKILL) after the fourth; once echo answers again, 100 more. Prints one JSON line:
// {first: [outcome x100], again: [outcome x100]}, an outcome being "ok" (its own answer),
// a tool error code, "hung" (no answer within 20 s) or "wrong answer".
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, authorization, pid] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function connect() {
  const client = new Client({ name: 'gw-stress', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: authorization } } }));
  await client.listTools();
  return client;
}

async function outcome(client, i) {
  const slow = i % 3 === 0;
  const p = slow
    ? client.callTool({ name: 'busy__slow', arguments: { ms: 200 + (i % 7) * 200 } })
    : client.callTool({ name: 'busy__echo', arguments: { message: `m${i}` } });
  let timer;
  const hung = new Promise((r) => { timer = setTimeout(() => r('hung'), 20000); });
  const r = await Promise.race([p, hung]);
  clearTimeout(timer);
  if (r === 'hung') return r;
  if (r.isError) return r.structuredContent?.error ?? 'tool error without a code';
  return r.content?.[0]?.text === (slow ? 'slow done' : `Echo: m${i}`) ? 'ok' : 'wrong answer';
}

const clients = await Promise.all([0, 1, 2, 3].map(() => connect()));
const calls = [];
for (let wave = 0; wave < 10; wave++) {
  for (let k = 0; k < 10; k++) calls.push(outcome(clients[(wave * 10 + k) % 4], wave * 10 + k));
  if (wave === 3) process.kill(Number(pid), 'SIGKILL');
  await sleep(60);
}
const first = await Promise.all(calls);
const t0 = Date.now();
while ((await outcome(clients[0], 1)) !== 'ok' && Date.now() - t0 < 10000) await sleep(100);
const again = await Promise.all(Array.from({ length: 100 }, (_, i) => outcome(clients[i % 4], i)));
await Promise.all(clients.map((c) => c.close()));
console.log(JSON.stringify({ first, again }));
process.exit(0);
