// Hostile startup_context files: whatever sits at a configured path, the
// tool answers at once with at most the configured bytes and never another file's content: a
// link to /dev/zero or to a file outside, a FIFO with a writer that never writes, a directory,
// files far past the caps (the 4 MiB total holds even when every max_bytes is 4 MiB), and
// concurrent calls. Real SDK client, listTools first.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { writeFileSync, mkdirSync, chmodSync, mkdtempSync, rmSync, symlinkSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ROOT, startHermes } from '../lib/lib.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
let dir;

before(() => { dir = mkdtempSync(join(tmpdir(), 'hm-hostile-startctx-')); });
after(() => rmSync(dir, { recursive: true, force: true }));

test('links, FIFOs, directories and huge files neither escape, block nor exceed the caps', async () => {
  writeFileSync(join(dir, 'outside.md'), 'OUTSIDE-SECRET');
  symlinkSync('/dev/zero', join(dir, 'zero.md'));
  symlinkSync(join(dir, 'outside.md'), join(dir, 'link.md'));
  execFileSync('mkfifo', [join(dir, 'fifo.md')]);
  // A writer holds the FIFO open and never writes: a blocking read would hang the loop.
  const writer = spawn('sh', ['-c', `exec 3>"${join(dir, 'fifo.md')}"; sleep 60`], { stdio: 'ignore' });
  mkdirSync(join(dir, 'dir.md'));
  const big = [];
  for (let i = 0; i < 3; i++) {
    big.push(join(dir, `big${i}.md`));
    writeFileSync(big[i], '');
    truncateSync(big[i], 8 * 1024 * 1024); // 8 MiB of NUL bytes (sparse)
  }
  const files = [join(dir, 'zero.md'), join(dir, 'link.md'), join(dir, 'fifo.md'), join(dir, 'dir.md'), ...big];
  const gw = join(dir, 'gw.yaml');
  writeFileSync(gw, 'upstreams:\n  fake:\n' +
    `    command: ${JSON.stringify(process.execPath)}\n    args: ${JSON.stringify([FAKE])}\n` +
    '    tools: {include: [echo]}\n' +
    `startup_context:\n  files: ${JSON.stringify(files)}\n  max_bytes: 4194304\n`);
  chmodSync(gw, 0o600);
  let srv;
  try {
    srv = await startHermes({ GATEWAY_FILE: gw });
    const client = new Client({ name: 'hostile-startctx', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), {
      requestInit: { headers: srv.auth } }));
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'startup_context'));
    const calls = await Promise.all([0, 1, 2].map(() =>
      client.callTool({ name: 'startup_context', arguments: {} }, undefined, { timeout: 20000 })));
    for (const r of calls) {
      const got = r.structuredContent.files;
      assert.deepEqual(got.slice(0, 4).map((f) => f.reason), ['a symbolic link, not followed',
        'a symbolic link, not followed', 'not a regular file', 'not a regular file']);
      assert.ok(got.slice(0, 4).every((f) => f.missing === true && f.text === undefined));
      const bytes = got.slice(4).map((f) => f.bytes);
      assert.deepEqual(bytes, [4194304, 0, 0], 'the first takes the whole 4 MiB budget');
      assert.equal(got[4].truncated, true);
      assert.equal(got[4].text.length, 4194304);
      assert.ok(/^\ufffd+$/.test(got[4].text), 'NUL bytes replaced');
      assert.doesNotMatch(JSON.stringify(got), /OUTSIDE-SECRET/);
    }
    // The loop was never blocked: the upstream's tool still answers.
    const echo = await client.callTool({ name: 'fake__echo', arguments: { message: 'alive' } });
    assert.equal(echo.content[0].text, 'Echo: alive');
    await client.close();
  } finally {
    writer.kill('SIGKILL');
    await srv?.stop();
  }
});
