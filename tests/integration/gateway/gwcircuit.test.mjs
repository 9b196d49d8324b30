// The gateway's circuit breaker with tests/fakes/fake-upstream.mjs: a
// child that crashes and then fails its next starts (--fail-starts) is restarted with backoff;
// after 5 failures in a row it is open-circuit for the backoff period: calls fail fast with
// upstream_unavailable saying so and when it is tried again, /readyz and /metrics say `open`,
// no call starts it early; the one trial start that follows succeeds and closes it. The same
// for a Streamable HTTP upstream whose server goes away (connection refused) and comes back.
// HERMES_TEST_GW_TIME_DIV=4 runs the backoff four times faster (0.125 s doubling): the circuit
// opens within 2 s and stays open about 2 s.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, existsSync, chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { ROOT, startHermes, until, freePort } from '../../lib/lib.mjs';
import { events } from '../../lib/events.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
let dir, srv;
const CLOCK = { env: { HERMES_TEST_GW_TIME_DIV: '4' } };

const starts = (n) => (existsSync(join(dir, `${n}.starts`))
  ? readFileSync(join(dir, `${n}.starts`), 'utf8').trim().split('\n').length : 0);

async function probe(path) {
  const r = await fetch(`${srv.base}${path}`);
  return { status: r.status, text: await r.text() };
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hm-gwcirc-'));
  const gw = join(dir, 'gateway.yaml');
  writeFileSync(gw, 'upstreams:\n  flaky:\n' +
    `    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--starts', join(dir, 'flaky.starts'), '--fail-starts', '4'])}\n` +
    '    tools: {include: ["*"]}\n');
  chmodSync(gw, 0o600);
  srv = await startHermes({ GATEWAY_FILE: gw }, CLOCK);
});

after(async () => {
  if (srv) assert.equal(await srv.stop(), 0);
  rmSync(dir, { recursive: true, force: true });
});

test('5 failures in a row open the circuit: fail fast, readyz and metrics say open; the trial start closes it', async () => {
  const client = new Client({ name: 'gw-circuit', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), {
    requestInit: { headers: srv.auth } }));
  try {
    assert.ok((await client.listTools()).tools.some((t) => t.name === 'flaky__echo'));
    // The test clock is no secret: it is read once, at start, and logged as a warning.
    assert.match(srv.proc.stderrText,
      /warn: gateway: HERMES_TEST_GW_TIME_DIV=4: .*for tests only/);
    // Failure 1: the crash. Failures 2 to 5: starts 2 to 5 exit on initialize (backoff 0.125, 0.25, 0.5, 1 s).
    const crash = await client.callTool({ name: 'flaky__crash', arguments: {} });
    assert.equal(crash.structuredContent.error, 'upstream_unavailable');
    let ready;
    await until(async () => {
      const r = await probe('/readyz');
      ready = { status: r.status, body: JSON.parse(r.text) };
      return ready.body.upstreams.flaky.state === 'open';
    }, 'the circuit open', 20000);
    assert.equal(starts('flaky'), 5, 'the first start and four that failed');
    assert.equal(ready.status, 503);
    const up = ready.body.upstreams.flaky;
    assert.match(up.error, /exited with status 5/);
    assert.ok(up.retry_in_s >= 1 && up.retry_in_s <= 3, JSON.stringify(up)); // 2 s +-25 %, rounded up
    const metrics = (await (await fetch(`${srv.base}/metrics`, { headers: srv.auth })).text());
    assert.match(metrics, /hermes_mcp_gateway_upstream_state\{upstream="flaky",state="open"\} 1/);
    assert.match(metrics, /hermes_mcp_gateway_upstream_state\{upstream="flaky",state="restarting"\} 0/);
    assert.equal(events(srv, 'circuit_open', { upstream: 'flaky', failures: 5 }).length, 1);

    // While open every call fails fast, says when it is tried again, and starts nothing.
    for (let i = 0; i < 10; i++) {
      const t0 = performance.now();
      const r = await client.callTool({ name: 'flaky__echo', arguments: { message: 'x' } });
      const took = performance.now() - t0;
      assert.equal(r.isError, true);
      assert.equal(r.structuredContent.error, 'upstream_unavailable');
      assert.match(r.structuredContent.message,
        /^upstream flaky is open-circuit after 5 failures in a row \(last: exited with status 5\); it will be tried again in \d+ s$/);
      assert.ok(r.structuredContent.retry_after >= 1 && r.structuredContent.retry_after <= 3);
      assert.ok(took < 1000, `fails fast (the trial start is 1.5 s away at least): ${took.toFixed(0)} ms`);
    }
    assert.equal(starts('flaky'), 5, 'calls do not start it before the backoff period ends');

    // The one trial start (the sixth) succeeds: the circuit closes and calls go through.
    let last;
    await until(async () => {
      last = await client.callTool({ name: 'flaky__echo', arguments: { message: 'back' } });
      return !last.isError;
    }, 'flaky answering again', 20000);
    assert.equal(last.content[0].text, 'Echo: back');
    assert.equal(starts('flaky'), 6, 'one trial start');
    const after = await probe('/readyz');
    assert.equal(after.status, 200, after.text);
    assert.equal(JSON.parse(after.text).upstreams.flaky.state, 'ready');
    assert.equal(events(srv, 'circuit_closed', { upstream: 'flaky' }).length, 1);
  } finally { await client.close(); }
});

async function startHttpFake(port) {
  const p = spawn(process.execPath, [FAKE, '--http', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  p.stderrText = '';
  p.stderr.on('data', (d) => { p.stderrText += d; });
  await until(() => p.stderrText.includes(`listening on ${port}`), 'the HTTP fake listening', 15000);
  return p;
}

test('an HTTP upstream refusing connections opens the circuit; back on its port, the trial start closes it', async () => {
  const port = await freePort();
  let web = await startHttpFake(port);
  const gw = join(dir, 'http.yaml');
  writeFileSync(gw, `upstreams:\n  web:\n    url: http://127.0.0.1:${port}/mcp\n    tools: {include: [echo]}\n`);
  chmodSync(gw, 0o600);
  const h = await startHermes({ GATEWAY_FILE: gw }, CLOCK);
  const client = new Client({ name: 'gw-circuit-http', version: '1.0.0' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(h.url), { requestInit: { headers: h.auth } }));
    await client.listTools();
    assert.equal((await client.callTool({ name: 'web__echo', arguments: { message: 'a' } })).content[0].text, 'Echo: a');
    web.kill('SIGKILL');
    await new Promise((r) => web.on('exit', r));
    // Failure 1: this call's POST is refused; failures 2 to 5: initialize refused at each start.
    const cut = await client.callTool({ name: 'web__echo', arguments: { message: 'b' } });
    assert.equal(cut.structuredContent.error, 'upstream_unavailable');
    let body;
    await until(async () => {
      body = await (await fetch(`${h.base}/readyz`)).json();
      return body.upstreams.web.state === 'open';
    }, 'the HTTP circuit open', 20000);
    assert.equal(body.upstreams.web.restarts, 4);
    const t0 = performance.now();
    const r = await client.callTool({ name: 'web__echo', arguments: { message: 'c' } });
    assert.ok(performance.now() - t0 < 1000, 'fails fast');
    assert.equal(r.structuredContent.error, 'upstream_unavailable');
    assert.match(r.structuredContent.message, /^upstream web is open-circuit after 5 failures in a row \(last: .+\); it will be tried again in \d+ s$/);
    web = await startHttpFake(port);
    let last;
    await until(async () => {
      last = await client.callTool({ name: 'web__echo', arguments: { message: 'back' } });
      return !last.isError;
    }, 'web answering again', 20000);
    assert.equal(last.content[0].text, 'Echo: back');
    const ready = await fetch(`${h.base}/readyz`);
    assert.equal(ready.status, 200);
    assert.equal((await ready.json()).upstreams.web.restarts, 5, 'one trial start after the circuit opened');
  } finally {
    await client.close();
    assert.equal(await h.stop(), 0);
    web.kill('SIGKILL');
  }
});
