// The gateway:<upstream> scope (issue 16, item 6): an upstream's tools are for the owner and for
// the principals whose scopes name that upstream. A TOKENS_FILE role with gateway:files sees and
// calls files__echo and not web__echo (403 insufficient_scope naming gateway:web), a role without
// any gateway scope sees no upstream tool, the owner sees both. The upstreams are
// tests/fakes/fake-upstream.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ROOT, startHermes, JSON_HEADERS } from './lib.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
const sha = (t) => createHash('sha256').update(t).digest('hex');

async function tools(srv, token) {
  const client = new Client({ name: 'gwscopes-it', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  const names = (await client.listTools()).tools.map((t) => t.name).filter((n) => n.includes('__')).sort();
  return { client, names };
}

async function rawCall(srv, token, name) {
  const res = await fetch(srv.url, { method: 'POST',
    headers: { ...JSON_HEADERS, Authorization: `Bearer ${token}`, 'MCP-Protocol-Version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name, arguments: { message: 'hi' } } }) });
  return { status: res.status, www: res.headers.get('www-authenticate') };
}

test('gateway:<upstream> scopes: each role sees and calls only the upstreams it names', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-gwscopes-'));
  const up = (name) => `  ${name}:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE])}\n    tools: {include: ["echo"]}\n`;
  const gw = join(dir, 'gateway.yaml');
  writeFileSync(gw, `upstreams:\n${up('files')}${up('web')}`);
  chmodSync(gw, 0o600);
  const tok = { filer: randomBytes(32).toString('hex'), reader: randomBytes(32).toString('hex') };
  const tokens = join(dir, 'tokens.yaml');
  writeFileSync(tokens, 'tokens:\n' +
    `  - name: filer\n    sha256: ${sha(tok.filer)}\n    scopes: [hermes:read, gateway:files]\n` +
    `  - name: reader\n    sha256: ${sha(tok.reader)}\n    scopes: [hermes:read]\n`);
  chmodSync(tokens, 0o600);
  const srv = await startHermes({ GATEWAY_FILE: gw, TOKENS_FILE: tokens });
  try {
    const owner = await tools(srv, srv.token);
    assert.deepEqual(owner.names, ['files__echo', 'web__echo']);
    await owner.client.close();

    const filer = await tools(srv, tok.filer);
    assert.deepEqual(filer.names, ['files__echo']);
    const r = await filer.client.callTool({ name: 'files__echo', arguments: { message: 'hi' } });
    assert.ok(!r.isError, JSON.stringify(r));
    assert.equal(r.content[0].text, 'Echo: hi');
    await filer.client.close();
    const refused = await rawCall(srv, tok.filer, 'web__echo');
    assert.equal(refused.status, 403);
    assert.match(refused.www, /insufficient_scope/);
    assert.match(refused.www, /gateway:web/);

    const reader = await tools(srv, tok.reader);
    assert.deepEqual(reader.names, []);
    await reader.client.close();
    assert.equal((await rawCall(srv, tok.reader, 'files__echo')).status, 403);
  } finally {
    assert.equal(await srv.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  }
});
