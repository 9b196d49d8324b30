// The gateway in front of two more real npm servers at once: @modelcontextprotocol/server-memory
// (its storage path given through env: "${MEM_PATH}" from the env file, so interpolation reaches
// the child's environment) and @modelcontextprotocol/server-filesystem on a temp directory
// (exposed with an exclude-only rule: everything but the writing tools). The SDK client sees
// exactly that surface and calls through to both.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync, readFileSync, existsSync, chmodSync, mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ROOT, startHermes } from '../../lib/lib.mjs';

const [MEMORY, FILESYSTEM] = spawnSync(join(ROOT, 'scripts/node-tools.sh'), ['memory', 'filesystem'],
  { encoding: 'utf8' }).stdout.trim().split('\n');
let srv, dir, client;

before(async () => {
  assert.ok(existsSync(MEMORY) && existsSync(FILESYSTEM), `servers installed: ${MEMORY} ${FILESYSTEM}`);
  dir = mkdtempSync(join(tmpdir(), 'hm-gwsrv-'));
  mkdirSync(join(dir, 'files'));
  writeFileSync(join(dir, 'files', 'note.txt'), 'hello from the filesystem\n');
  writeFileSync(join(dir, 'secret.txt'), 'outside the allowed directory\n');
  const gw = join(dir, 'gateway.yaml');
  const node = JSON.stringify(process.execPath);
  writeFileSync(gw, 'upstreams:\n' +
    `  memory:\n    command: ${node}\n    args: [${JSON.stringify(MEMORY)}]\n` +
    '    env: {MEMORY_FILE_PATH: "${MEM_PATH}"}\n' +
    '    tools: {include: [create_entities, read_graph, search_nodes]}\n' +
    `  files:\n    command: ${node}\n    args: [${JSON.stringify(FILESYSTEM)}, ${JSON.stringify(join(dir, 'files'))}]\n` +
    '    prefix: fs_\n' +
    '    tools: {exclude: [write_file, edit_file, move_file, create_directory]}\n');
  chmodSync(gw, 0o600);
  srv = await startHermes({ GATEWAY_FILE: gw, MEM_PATH: join(dir, 'memory.jsonl') });
  client = new Client({ name: 'gw-srv', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), {
    requestInit: { headers: srv.auth } }));
});

after(async () => {
  await client?.close();
  if (srv) assert.equal(await srv.stop(), 0);
  rmSync(dir, { recursive: true, force: true });
});

test('the surface: memory by include, filesystem by exclude, the bridge beside them', async () => {
  const names = (await client.listTools()).tools.map((t) => t.name);
  for (const n of ['memory__create_entities', 'memory__read_graph', 'memory__search_nodes',
    'fs_read_text_file', 'fs_list_directory', 'hermes_task']) assert.ok(names.includes(n), n);
  for (const n of ['memory__delete_entities', 'memory__create_relations', 'fs_write_file',
    'fs_edit_file', 'fs_move_file', 'fs_create_directory']) assert.ok(!names.includes(n), n);
  assert.ok(names.every((n) => /^[A-Za-z0-9_-]{1,64}$/.test(n)), 'spec-safe names');
});

test('server-memory: create, read back; its file is where ${MEM_PATH} said', async () => {
  await client.listTools();
  const c = await client.callTool({ name: 'memory__create_entities', arguments: {
    entities: [{ name: 'hermes-gateway', entityType: 'project', observations: ['proxies calls'] }] } });
  assert.ok(!c.isError, JSON.stringify(c));
  const g = await client.callTool({ name: 'memory__read_graph', arguments: {} });
  assert.match(g.content[0].text, /hermes-gateway/);
  assert.match(readFileSync(join(dir, 'memory.jsonl'), 'utf8'), /hermes-gateway/);
});

test('server-filesystem: reads inside its directory, refuses outside; writing tools are not exposed', async () => {
  await client.listTools();
  const r = await client.callTool({ name: 'fs_read_text_file',
    arguments: { path: join(dir, 'files', 'note.txt') } });
  assert.match(r.content[0].text, /hello from the filesystem/);
  const outside = await client.callTool({ name: 'fs_read_text_file',
    arguments: { path: join(dir, 'secret.txt') } });
  assert.equal(outside.isError, true, 'the upstream\'s own refusal comes through');
  assert.doesNotMatch(JSON.stringify(outside), /outside the allowed directory\n/);
  await assert.rejects(client.callTool({ name: 'fs_write_file',
    arguments: { path: join(dir, 'files', 'x'), content: 'x' } }), /Unknown tool/);
  assert.ok(!existsSync(join(dir, 'files', 'x')));
});
