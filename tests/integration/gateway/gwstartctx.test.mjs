// startup_context: the gateway file's startup_context.files are served by
// a gateway-owned tool that takes no arguments. Real client (official SDK, listTools first): the
// files come back as UTF-8 text, each capped at max_bytes, invalid bytes replaced, missing ones
// named as missing with the configured path (~ kept, never $HOME or errno text); a symlink
// swapped in after start, a FIFO and a huge file neither escape nor block; an argument naming a
// path is refused. An upstream exposing a tool under the same name stops the start.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync, mkdirSync, chmodSync, mkdtempSync, rmSync, unlinkSync, symlinkSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERMES, startHermes, upstreamsFile, fakeUpstream, connectClient } from '../../lib/lib.mjs';

let dir, home;

function gatewayFile(name, upstreamArgs, startup) {
  return upstreamsFile(dir, name,
    fakeUpstream('fake', upstreamArgs, '    prefix: ""\n    tools: {include: ["*"]}\n' + startup));
}

const connect = (srv) => connectClient(srv, { name: 'gw-startctx' });

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'hm-gwstartctx-'));
  home = join(dir, 'home');
  mkdirSync(join(home, '.hermes'), { recursive: true });
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('startup_context returns the configured files, capped and clean, and names missing ones', async () => {
  const h = join(home, '.hermes');
  writeFileSync(join(h, 'SOUL.md'), 'soul: be kind\n');
  writeFileSync(join(h, 'MEMORY.md'), Buffer.from([0x6d, 0xff, 0x6e, 0xc3])); // invalid UTF-8
  writeFileSync(join(h, 'USER.md'), 'x'.repeat(5 * 1024 * 1024));              // huge
  writeFileSync(join(dir, 'outside.md'), 'OUTSIDE-SECRET');
  writeFileSync(join(h, 'swap.md'), 'before the swap');
  execFileSync('mkfifo', [join(h, 'pipe.md')]);
  const files = ['~/.hermes/SOUL.md', '~/.hermes/MEMORY.md', '~/.hermes/USER.md',
    '~/.hermes/nope.md', '~/.hermes/swap.md', '~/.hermes/pipe.md'];
  const srv = await startHermes({ GATEWAY_FILE: gatewayFile('a', [],
    `startup_context:\n  files: ${JSON.stringify(files)}\n  max_bytes: 1000\n`) },
  { env: { HOME: home } });
  try {
    const client = await connect(srv);
    const { tools } = await client.listTools();
    const t = tools.find((x) => x.name === 'startup_context');
    assert.ok(t, 'the gateway-owned tool is listed');
    assert.deepEqual(Object.keys(t.inputSchema.properties ?? {}), [], 'it takes no arguments');
    assert.ok(tools.find((x) => x.name === 'echo'), 'the upstream is still there');

    // The configured file becomes a link to a file nobody configured, after start.
    unlinkSync(join(h, 'swap.md'));
    symlinkSync(join(dir, 'outside.md'), join(h, 'swap.md'));

    const r = await client.callTool({ name: 'startup_context', arguments: {} });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    const got = r.structuredContent.files;
    assert.deepEqual(got.map((f) => f.path), files, 'every configured file, in order, as written');
    assert.equal(got[0].text, 'soul: be kind\n');
    assert.equal(got[0].truncated, false);
    assert.equal(got[1].text, 'm\ufffdn\ufffd', 'invalid UTF-8 replaced');
    assert.equal(got[2].text, 'x'.repeat(1000), 'capped at max_bytes');
    assert.equal(got[2].truncated, true);
    assert.deepEqual(got[3], { path: '~/.hermes/nope.md', missing: true, reason: 'not found' });
    assert.deepEqual(got[4], { path: '~/.hermes/swap.md', missing: true, reason: 'a symbolic link, not followed' });
    assert.deepEqual(got[5], { path: '~/.hermes/pipe.md', missing: true, reason: 'not a regular file' });
    const all = JSON.stringify(r);
    assert.doesNotMatch(all, /OUTSIDE-SECRET/, 'the swapped-in link is not followed');
    assert.ok(!all.includes(home), 'never the expanded path');
    assert.doesNotMatch(all, /No such file|ENOENT|errno/i);

    // No argument can name another path: the schema has none and extra ones are refused.
    for (const args of [{ path: join(dir, 'outside.md') }, { files: [join(dir, 'outside.md')] }]) {
      const bad = await client.callTool({ name: 'startup_context', arguments: args });
      assert.equal(bad.isError, true, JSON.stringify(bad));
      assert.equal(bad.structuredContent.error, 'invalid_arguments');
      assert.doesNotMatch(JSON.stringify(bad), /OUTSIDE-SECRET|soul: be kind/);
    }
    await client.close();
  } finally {
    await srv.stop();
  }
});

test('an upstream tool exposed as startup_context stops the start, naming both', async () => {
  const gw = gatewayFile('clash', ['--extra-tool', 'startup_context'],
    'startup_context: {files: ["~/.hermes/SOUL.md"]}\n');
  const env = join(dir, 'clash.env');
  writeFileSync(env, `MCP_PORT=0\nMCP_AUTH_TOKEN=${'a'.repeat(64)}\nAGENTS_FILE=${join(dir, 'agents.yaml')}\nGATEWAY_FILE=${gw}\n`);
  chmodSync(env, 0o600);
  const proc = spawn(HERMES, ['serve', '--env-file', env], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  const code = await new Promise((res) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); res('timeout'); }, 30000);
    proc.on('exit', (c) => { clearTimeout(timer); res(c); });
  });
  assert.notEqual(code, 0, err);
  assert.notEqual(code, 'timeout', err);
  assert.match(err, /startup_context is configured, but the name 'startup_context' is taken by upstream fake, tool 'startup_context'/);
});
