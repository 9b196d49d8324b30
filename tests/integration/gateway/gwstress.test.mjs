// kill -9 of a stdio upstream's child during 100 concurrent calls from 4 SDK clients: calls are
// spread over the kill (some answered before it, some in flight, some sent
// while the child is down, some after it is back); every one gets an answer, a result that is
// its own or upstream_unavailable, within a deadline (none hangs); the child comes back and
// serves another 100; the server's open fds (/proc/PID/fd, all of them) return to their level
// once the clients are gone. Run it under the ASan build too: leaks fail the exit status.
// serial: 200 concurrent calls across a kill -9, each answered within a deadline.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync, readFileSync, readdirSync, readlinkSync, chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, startHermes, until } from '../../lib/lib.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
const CLIENTS = join(ROOT, 'tests/integration/gateway/gwstress-clients.mjs');
let dir, srv;

const startsOf = () => readFileSync(join(dir, 'busy.starts'), 'utf8').trim().split('\n');
// The server's open fds but its audit log (opened at the first audited call, then kept open).
const fdList = () => readdirSync(`/proc/${srv.proc.pid}/fd`).map((f) => {
  try { return `${f}:${readlinkSync(`/proc/${srv.proc.pid}/fd/${f}`)}`; } catch { return `${f}:gone`; }
}).filter((f) => !f.endsWith('/audit.jsonl'));
const fds = () => fdList().length;

// max_in_flight 40 + the 64 that may wait = 104 >= the 100 sent at once after the restart: a slow
// machine that keeps all of them in flight must not turn any into `busy` (the cap is tested elsewhere).
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hm-gwstress-'));
  const gw = join(dir, 'gateway.yaml');
  writeFileSync(gw, 'upstreams:\n  busy:\n' +
    `    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--starts', join(dir, 'busy.starts')])}\n` +
    '    max_in_flight: 40\n    tools: {include: [echo, slow]}\n');
  chmodSync(gw, 0o600);
  srv = await startHermes({ GATEWAY_FILE: gw });
});

after(async () => {
  if (srv) assert.equal(await srv.stop(), 0, 'clean exit (under ASan: no leak)');
  rmSync(dir, { recursive: true, force: true });
});

test('kill -9 during 100 calls from 4 clients: every call answered, none hangs, the child comes back, fds back to their level', async () => {
  const baseline = fds();
  const before = fdList();
  const pid = Number(startsOf()[0].split(' ')[1]);
  const run = spawnSync(process.execPath, [CLIENTS, srv.url, srv.auth.Authorization, String(pid)],
    { encoding: 'utf8', timeout: 90000 });
  assert.equal(run.status, 0, run.stderr);
  const { first, again } = JSON.parse(run.stdout.trim().split('\n').pop());
  assert.equal(first.length, 100);
  const counts = {};
  for (const c of first) counts[c] = (counts[c] ?? 0) + 1;
  assert.deepEqual(Object.keys(counts).filter((c) => c !== 'ok' && c !== 'upstream_unavailable'), [],
    `only their own results and upstream_unavailable, none hung: ${JSON.stringify(counts)}`);
  assert.ok(counts.upstream_unavailable > 0, `the kill cut calls off: ${JSON.stringify(counts)}`);
  assert.ok(counts.ok > 0, `calls before the kill or after the restart were served: ${JSON.stringify(counts)}`);
  // It came back (backoff from 0.5 s), once, and served 100 more.
  assert.equal(startsOf().length, 2, 'restarted once');
  assert.ok(again.every((c) => c === 'ok'), JSON.stringify(again.filter((c) => c !== 'ok')));
  // The dead child's pipes and pidfd are closed and the clients' sockets too: the count returns
  // to its level before the clients came (the new child holds what the first did).
  try {
    await until(() => fds() === baseline, 'fds back to their level', 5000);
  } catch {
    assert.deepEqual(fdList(), before, 'the server\'s fds after, as before (names may differ)');
  }
});
