// The gateway's client speaks 2026-07-28 to an HTTP upstream that offers
// it (server/discover answered with it: no initialize, no session, every request naming the
// version in _meta and headers) and falls back to initialize for one that does not. Modern
// upstreams: hermes-mcp itself (its audit log shows the methods we sent it) and
// build/conformance-server; the session-era one is server-everything's Streamable HTTP mode.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, existsSync, chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startHermes, startConformance, until, startEverythingHttp } from '../../lib/lib.mjs';

let dir, inner, conf, legacy, srv, client;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hm-gwmodern-'));
  inner = await startHermes({ AUDIT_LOG_PATH: join(dir, 'inner-audit.jsonl') });
  conf = await startConformance();
  legacy = await startEverythingHttp();
  const gw = join(dir, 'gateway.yaml');
  writeFileSync(gw, 'upstreams:\n' +
    `  inner:\n    url: ${inner.url}\n    headers: {Authorization: "Bearer \${INNER_TOKEN}"}\n    tools: {include: [list_agents]}\n` +
    `  conf:\n    url: ${conf.url}\n    tools: {include: [test_simple_text]}\n` +
    `  old:\n    url: ${legacy.url}\n    tools: {include: [echo]}\n`);
  chmodSync(gw, 0o600);
  srv = await startHermes({ GATEWAY_FILE: gw, INNER_TOKEN: inner.token });
  client = new Client({ name: 'gw-modern', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: srv.auth } }));
});

after(async () => {
  await client?.close();
  if (srv) assert.equal(await srv.stop(), 0);
  if (inner) assert.equal(await inner.stop(), 0);
  if (conf) await conf.stop();
  legacy?.kill();
  rmSync(dir, { recursive: true, force: true });
});

test('each upstream in its era: 2026-07-28 where discover offers it, initialize elsewhere', () => {
  const log = srv.proc.stderrText;
  assert.match(log, /upstream inner: discovered \(protocol 2026-07-28\)/);
  assert.match(log, /upstream conf: discovered \(protocol 2026-07-28\)/);
  assert.match(log, /upstream old: no 2026-07-28 offered; initialize instead/);
  assert.match(log, /upstream old: initialized \(.*protocol 2025-11-25\)/);
});

test('calls go through to both eras', async () => {
  const names = (await client.listTools()).tools.map((t) => t.name);
  for (const n of ['inner__list_agents', 'conf__test_simple_text', 'old__echo']) assert.ok(names.includes(n), names.join(' '));
  const c = await client.callTool({ name: 'conf__test_simple_text', arguments: {} });
  assert.ok(!c.isError, JSON.stringify(c));
  assert.match(c.content[0].text, /simple text/i);
  const i = await client.callTool({ name: 'inner__list_agents', arguments: {} });
  assert.ok(!i.isError, JSON.stringify(i));
  const o = await client.callTool({ name: 'old__echo', arguments: { message: 'old era' } });
  assert.equal(o.content[0].text, 'Echo: old era');
});

test('what the modern upstream saw: server/discover, never initialize', async () => {
  // The inner server writes its audit line after it answers: under load the call's line may
  // land a moment after the client has the result, so the log is read until it has one.
  const seen = () => (existsSync(join(dir, 'inner-audit.jsonl'))
    ? readFileSync(join(dir, 'inner-audit.jsonl'), 'utf8').split('\n').filter(Boolean)
      .map((l) => JSON.parse(l)).map((l) => l.rpc_method ?? l.method).filter(Boolean) : []);
  await until(() => seen().includes('tools/call'), 'the inner audit line of the call');
  const methods = seen();
  assert.ok(methods.includes('server/discover'), methods.join(' '));
  assert.ok(methods.includes('tools/list') && methods.includes('tools/call'), methods.join(' '));
  assert.ok(!methods.includes('initialize'), methods.join(' '));
});
