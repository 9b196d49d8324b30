// The smoke call: after each (re)initialize the gateway calls the gateway file's smoke: {tool,
// arguments}; /readyz counts a required upstream ready only once it passed. A JSON-RPC error, a
// result with isError: true and a nested provider error (the Hermes gateway's rule: a successful
// result whose JSON text says success: false) fail it; /readyz names the upstream and the reason in
// our own words (never the upstream's text, which may quote a key). Driven by
// tests/fakes/fake-upstream.mjs (--smoke-tools) and by server-everything's echo.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync, readFileSync, existsSync, mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ROOT, startHermes, until, upstreamsFile } from '../../lib/lib.mjs';
import { events } from '../../lib/events.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
const EVERYTHING = spawnSync(join(ROOT, 'scripts/node-tools.sh'), ['everything'], { encoding: 'utf8' })
  .stdout.trim();
let dir;

function fake(name, smoke, extra = '', args = []) {
  return `  ${name}:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--smoke-tools', '--starts', join(dir, `${name}.starts`), ...args])}\n` +
    `    tools: {include: [echo]}\n    smoke: ${smoke}\n${extra}`;
}

async function readyz(srv) {
  const r = await fetch(`${srv.base}/readyz`);
  const text = await r.text();
  return { status: r.status, text, body: JSON.parse(text) };
}

const lastPid = (n) => Number(readFileSync(join(dir, `${n}.starts`), 'utf8').trim().split(' ').pop());

before(() => { dir = mkdtempSync(join(tmpdir(), 'hm-gwsmoke-')); });
after(() => rmSync(dir, { recursive: true, force: true }));

test('failed smoke calls keep readyz 503 naming upstream and reason; a restart re-runs it and it passes', async () => {
  const down = join(dir, 'provider-down');
  writeFileSync(down, '');
  const srv = await startHermes({ GATEWAY_FILE: upstreamsFile(dir, 'a',
    fake('web', '{tool: provider, arguments: {query: hermes}}', '', ['--provider-down', down]) +
    fake('iserr', '{tool: iserror}', '    required: false\n') +
    fake('rpcerr', '{tool: rpcerror}', '    required: false\n') +
    fake('good', '{tool: echo, arguments: {message: ready}}')) });
  try {
    let r;
    await until(async () => {
      r = await readyz(srv);
      return ['web', 'iserr', 'rpcerr', 'good'].every((n) => r.body.upstreams[n].smoke !== 'pending');
    }, 'every smoke call answered');
    assert.equal(r.status, 503, r.text);
    assert.equal(r.body.status, 'not_ready');
    const u = r.body.upstreams;
    assert.equal(u.web.state, 'ready', 'it serves; it is not ready');
    assert.equal(u.web.smoke, 'failed');
    assert.equal(u.web.smoke_error, 'smoke call provider failed: a nested error in content[0] (JSON text): success');
    assert.equal(u.iserr.smoke, 'failed');
    assert.equal(u.iserr.smoke_error, 'smoke call iserror failed: the result has isError: true');
    assert.equal(u.rpcerr.smoke, 'failed');
    assert.equal(u.rpcerr.smoke_error, 'smoke call rpcerror failed: JSON-RPC error -32000');
    assert.equal(u.good.smoke, 'passed');
    assert.equal(u.good.smoke_error, undefined);
    assert.doesNotMatch(r.text, /SECRET|sk-fake/, 'never the upstream\'s text');
    const metrics = await (await fetch(`${srv.base}/metrics`, { headers: srv.auth })).text();
    assert.match(metrics, /hermes_mcp_gateway_smoke_passed\{upstream="web"\} 0/);
    assert.match(metrics, /hermes_mcp_gateway_smoke_passed\{upstream="good"\} 1/);
    assert.ok(events(srv, 'upstream_smoke_failed', { upstream: 'web', tool: 'provider' }).length >= 1);
    assert.doesNotMatch(srv.proc.stderrText, /sk-fake-SECRET/);

    // The provider is fixed; the child restarts (kill -9) and the smoke call after its
    // initialize passes: ready (the two that are not required do not hold it back).
    unlinkSync(down);
    process.kill(lastPid('web'), 'SIGKILL');
    await until(async () => (r = await readyz(srv)).status === 200, 'ready after the restart', 10000);
    assert.equal(r.body.upstreams.web.smoke, 'passed');
    assert.equal(r.body.upstreams.web.restarts, 1);
    assert.equal(r.body.upstreams.iserr.smoke, 'failed');
    assert.equal(readFileSync(join(dir, 'web.starts'), 'utf8').trim().split('\n').length, 2);
  } finally { assert.equal(await srv.stop(), 0); }
});

test('server-everything: smoke echo passes and readyz is 200; a smoke tool it does not have fails', async () => {
  assert.ok(existsSync(EVERYTHING), `server-everything installed: ${EVERYTHING}`);
  const up = (name, smoke) => `  ${name}:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: [${JSON.stringify(EVERYTHING)}]\n    tools: {include: [echo]}\n    smoke: ${smoke}\n`;
  const srv = await startHermes({ GATEWAY_FILE: upstreamsFile(dir, 'b',
    up('everything', '{tool: echo, arguments: {message: ready}}') +
    up('wrong', '{tool: no-such-tool, arguments: {}}')) });
  try {
    let r;
    await until(async () => {
      r = await readyz(srv);
      return r.body.upstreams.everything.smoke !== 'pending' && r.body.upstreams.wrong.smoke !== 'pending';
    }, 'both smoke calls answered', 15000);
    assert.equal(r.body.upstreams.everything.smoke, 'passed', r.text);
    assert.equal(r.body.upstreams.wrong.smoke, 'failed');
    assert.match(r.body.upstreams.wrong.smoke_error, /^smoke call no-such-tool failed: (JSON-RPC error -?\d+|the result has isError: true)$/);
    assert.equal(r.status, 503, 'wrong is required');
    const client = new Client({ name: 'gw-smoke', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: srv.auth } }));
    await client.listTools();
    const e = await client.callTool({ name: 'everything__echo', arguments: { message: 'hi' } });
    assert.match(e.content[0].text, /hi/);
    await client.close();
  } finally { assert.equal(await srv.stop(), 0); }
  const ok = await startHermes({ GATEWAY_FILE: upstreamsFile(dir, 'c',
    up('everything', '{tool: echo, arguments: {message: ready}}')) });
  try {
    let r;
    await until(async () => (r = await readyz(ok)).body.upstreams.everything.smoke === 'passed',
      'smoke passed', 15000);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.status, 'ready');
  } finally { assert.equal(await ok.stop(), 0); }
});
