// An upstream's resources and prompts behind the gateway when its file says
// tools.resources / tools.prompts: true (default false). The real upstream is
// @modelcontextprotocol/server-everything over stdio; the official SDK client lists and reads
// its resources (URIs kept) and lists and gets its prompts (prefixed like tools). An upstream
// without the flags contributes none; two upstreams offering the same resource URI refuse the
// start naming both.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ROOT, startHermes, upstreamsFile, fakeUpstream } from '../../lib/lib.mjs';

const EVERYTHING = spawnSync(join(ROOT, 'scripts/node-tools.sh'), ['everything'], { encoding: 'utf8' })
  .stdout.trim().split('\n')[0];
const DOC = 'demo://resource/static/document/architecture.md';
let dir, srv, client;

const upstream = (name, rules) =>
  `  ${name}:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(EVERYTHING)}, stdio]\n` + rules;

before(async () => {
  assert.ok(existsSync(EVERYTHING), `server-everything installed: ${EVERYTHING}`);
  dir = mkdtempSync(join(tmpdir(), 'hm-gwres-'));
  srv = await startHermes({ GATEWAY_FILE: upstreamsFile(dir, 'gw',
    upstream('ev', '    tools: {include: [echo], resources: true, prompts: true}\n') +
    upstream('plain', '    prefix: p_\n    tools: {include: [echo]}\n')) });
  client = new Client({ name: 'gw-res', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: srv.auth } }));
});

after(async () => {
  await client?.close();
  if (srv) assert.equal(await srv.stop(), 0);
  rmSync(dir, { recursive: true, force: true });
});

test('resources: listed with their own URIs, read through the upstream', async () => {
  const { resources } = await client.listResources();
  const uris = resources.map((r) => r.uri);
  assert.ok(uris.includes(DOC), uris.join(' '));
  assert.ok(uris.every((u) => u.startsWith('demo://')), 'only the upstream\'s resources: ' + uris.join(' '));
  const doc = resources.find((r) => r.uri === DOC);
  assert.equal(doc.mimeType, 'text/markdown');
  const r = await client.readResource({ uri: DOC });
  assert.equal(r.contents[0].uri, DOC);
  assert.ok(r.contents[0].text.length > 100, 'the document\'s text came through');
  await assert.rejects(client.readResource({ uri: 'demo://resource/static/document/nope.md' }), /nope|not found|Unknown/i);
});

test('resource templates: listed as the upstream offers them; a URI matching one is read through that upstream', async () => {
  const { resourceTemplates } = await client.listResourceTemplates();
  const tpls = resourceTemplates.map((t) => t.uriTemplate);
  assert.ok(tpls.includes('demo://resource/dynamic/text/{resourceId}'), tpls.join(' '));
  const r = await client.readResource({ uri: 'demo://resource/dynamic/text/7' });
  assert.equal(r.contents[0].uri, 'demo://resource/dynamic/text/7');
  assert.match(r.contents[0].text, /7/, 'the upstream answered for that id');
  await assert.rejects(client.readResource({ uri: 'demo://resource/elsewhere/7' }), /not found|Unknown/i);
});

test('prompts: prefixed like tools, got through the upstream with their arguments; none from an upstream without the flag', async () => {
  const { prompts } = await client.listPrompts();
  const names = prompts.map((p) => p.name);
  assert.ok(names.includes('ev__simple-prompt') && names.includes('ev__args-prompt'), names.join(' '));
  assert.ok(names.every((n) => n.startsWith('ev__')), 'plain (no prompts: true) contributes none: ' + names.join(' '));
  const args = prompts.find((p) => p.name === 'ev__args-prompt').arguments.map((a) => a.name);
  assert.deepEqual(args.sort(), ['city', 'state']);
  const g = await client.getPrompt({ name: 'ev__args-prompt', arguments: { city: 'Paris', state: 'Texas' } });
  assert.equal(g.messages[0].content.text, "What's weather in Paris, Texas?");
  const tools = (await client.listTools()).tools.map((t) => t.name);
  assert.ok(tools.includes('ev__echo') && tools.includes('p_echo'));
});

test('two upstreams offering the same resource URI: the start is refused naming both', async () => {
  const gw = upstreamsFile(dir, 'clash',
    upstream('a', '    tools: {include: [echo], resources: true}\n') +
    upstream('b', '    prefix: b_\n    tools: {include: [echo], resources: true}\n'));
  const started = await startHermes({ GATEWAY_FILE: gw }).catch((e) => e);
  if (!(started instanceof Error)) await started.stop();
  assert.match(String(started), /upstream b offers resource 'demo:\/\/[^']+', which upstream a offers too/);
});

test('templates: only {name} parts are served (an RFC 6570 operator one is not listed); the same template from two upstreams refuses the start', async () => {
  const fake = (name, extra = '') => fakeUpstream(name, ['--templates'],
    `    prefix: ${name}_\n    tools: {include: [echo], resources: true}\n${extra}`);
  const one = await startHermes({ GATEWAY_FILE: upstreamsFile(dir, 'tpl', fake('a')) });
  try {
    const c = new Client({ name: 'gw-tpl', version: '1.0.0' });
    await c.connect(new StreamableHTTPClientTransport(new URL(one.url), { requestInit: { headers: one.auth } }));
    const { resourceTemplates } = await c.listResourceTemplates();
    assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate), ['fake://item/{id}']);
    assert.equal((await c.readResource({ uri: 'fake://item/42' })).contents[0].text, 'read fake://item/42');
    await c.close();
    assert.match(one.proc.stderrText, /resource template 'fake:\/\/tree\{\/path\*\}' not exposed \(only \{name\} parts are served/);
  } finally { await one.stop(); }
  const started = await startHermes({ GATEWAY_FILE: upstreamsFile(dir, 'tplclash', fake('a') + fake('b')) }).catch((e) => e);
  if (!(started instanceof Error)) await started.stop();
  assert.match(String(started), /upstream b offers resource template 'fake:\/\/item\/\{id\}', which matches the same URIs as upstream a's 'fake:\/\/item\/\{id\}'/);
});

test('templates equal but for their variable names refuse the start, naming both', async () => {
  const fake = (name, extra = []) => `  ${name}:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([join(ROOT, 'tests/fakes/fake-upstream.mjs'), '--templates', ...extra])}\n` +
    `    prefix: ${name}_\n    tools: {include: [echo], resources: true}\n`;
  const started = await startHermes({ GATEWAY_FILE: upstreamsFile(dir, 'tplshape',
    fake('a') + fake('b', ['--template-item', 'fake://item/{key}'])) }).catch((e) => e);
  if (!(started instanceof Error)) await started.stop();
  assert.match(String(started), /upstream b offers resource template 'fake:\/\/item\/\{key\}', which matches the same URIs as upstream a's 'fake:\/\/item\/\{id\}'/);
  // Another shape is no clash: both start.
  const both = await startHermes({ GATEWAY_FILE: upstreamsFile(dir, 'tplother',
    fake('a') + fake('b', ['--template-item', 'fake://thing/{key}'])) });
  await both.stop();
});
