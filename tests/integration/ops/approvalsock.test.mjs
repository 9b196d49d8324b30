// The operator's control socket end to end: each env file gets its own socket beside it (two
// servers in one directory neither share nor steal one), born mode 600; the CLI run by the
// operator (not a process the server started) is heard; a server that stops removes only its
// own socket.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, chmodSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { HERMES, startHermes, until } from '../../lib/lib.mjs';

const cli = (...args) => spawnSync(HERMES, args, { encoding: 'utf8' });

test('two env files in one directory: two sockets, each answers its own server; a stop removes only its own', async () => {
  const a = await startHermes();
  const sockA = join(a.dir, '.env.hermes-mcp.sock');
  let b;
  try {
    await until(() => existsSync(sockA), 'the first server\'s socket');
    assert.equal(statSync(sockA).mode & 0o777, 0o600);
    const bEnv = join(a.dir, 'b.env');
    writeFileSync(bEnv, readFileSync(a.envFile, 'utf8').replace(/MCP_AUTH_TOKEN=\w+/, `MCP_AUTH_TOKEN=${'b'.repeat(64)}\nTASKS_DIR=${join(a.dir, 'tasks-b')}`));
    chmodSync(bEnv, 0o600);
    b = spawn(HERMES, ['serve', '--env-file', bEnv], { stdio: ['ignore', 'ignore', 'pipe'] });
    let bErr = '';
    b.stderr.on('data', (d) => { bErr += d; });
    const sockB = join(a.dir, '.b.env.hermes-mcp.sock');
    await until(() => existsSync(sockB), 'the second server\'s socket');
    assert.doesNotMatch(bErr, /another server is listening/);

    for (const env of [a.envFile, bEnv]) {
      const r = cli('approvals', '--env-file', env);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /no requests wait for approval/);
    }
    const shown = cli('approvals', 'show', '0123456789abcdef', '--env-file', bEnv);
    assert.equal(shown.status, 1);
    assert.match(shown.stderr, /no request waits with that id/);

    b.kill('SIGTERM');
    await new Promise((r) => b.once('exit', r));
    b = null;
    assert.equal(existsSync(sockB), false);
    assert.equal(existsSync(sockA), true);
    const r = cli('approvals', '--env-file', a.envFile);
    assert.equal(r.status, 0, r.stderr);
  } finally {
    if (b) b.kill('SIGKILL');
    await a.stop();
  }
});
