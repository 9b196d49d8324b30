// libcurl, and the libraries it brings (OpenSSL, libssh2, Kerberos, LDAP), is loaded by the
// first request the server makes, not at start (src/http/curlrt.c): a server that no one calls
// has none of it mapped. Where it cannot be loaded, the server still serves, and what needed it
// says why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHermes, startFake, agentEnv, connectClient, until, HERMES, ROOT } from '../../lib/lib.mjs';

const mapped = (pid, re) => readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n').some((l) => re.test(l));

test('libcurl is loaded by the first outgoing request, not at start', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake) });
  try {
    // A client connects and lists the tools, as clients do: no outgoing request needed.
    const client = await connectClient(srv, { listTools: true });
    assert.equal(mapped(srv.proc.pid, /libcurl\.so/), false, 'libcurl is mapped before any request to the agent');
    assert.equal(mapped(srv.proc.pid, /libssl\.so/), false, 'OpenSSL is mapped before any request to the agent');
    assert.equal(mapped(srv.proc.pid, /libpq\.so/), false, 'libpq is mapped without STORE_URL');
    const r = await client.callTool({ name: 'hermes_task', arguments: { task: 'what is 6 * 7', mode: 'sync' } });
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.equal(mapped(srv.proc.pid, /libcurl\.so\.4/), true, 'the task went to the agent through libcurl');
    await client.close();
  } finally {
    await srv.stop();
    await fake.stop();
  }
});

test('without a loadable libcurl: the server serves, a task fails with the reason, doctor says it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-nocurl-'));
  writeFileSync(join(dir, 'libcurl.so.4'), 'not a shared library\n');
  const env = { LD_LIBRARY_PATH: dir };
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake) }, { env });
  try {
    const client = await connectClient(srv, { listTools: true });
    const r = await client.callTool({ name: 'hermes_task', arguments: { task: 'x', mode: 'sync' } });
    assert.equal(r.isError, true, JSON.stringify(r));
    // The operator's log names the library and the package.
    await until(() => /libcurl\.so\.4 cannot be loaded \(.*file too short\); install libcurl4/.test(srv.proc.stderrText),
      'the log line saying why libcurl cannot be loaded');
    // The agent is not called available: /health and list_agents say so.
    const la = (await client.callTool({ name: 'list_agents', arguments: {} })).structuredContent;
    assert.equal(la.agents[0].available, false, JSON.stringify(la));
    // Still serving: another client lists the tools.
    const other = await connectClient(srv, { listTools: true });
    await other.close();
    await client.close();
    const doc = spawnSync(HERMES, ['doctor', '--env-file', srv.envFile], { encoding: 'utf8', env: { ...process.env, ...env } });
    assert.equal(doc.status, 1, doc.stdout + doc.stderr);
    assert.match(doc.stdout, /^FAIL .*libcurl\.so\.4 cannot be loaded .*install libcurl4/m);
    const smoke = spawnSync(HERMES, ['smoke', '--base', `http://127.0.0.1:${srv.port}`, '--env-file', srv.envFile],
      { encoding: 'utf8', env: { ...process.env, ...env } });
    assert.notEqual(smoke.status, 0);
    assert.match(smoke.stderr, /^hermes-mcp smoke: libcurl\.so\.4 cannot be loaded .*install libcurl4 7\.87 or later$/m);
  } finally {
    await srv.stop();
    await fake.stop();
  }
});

test('a libcurl older than 7.87 is refused by name, though it has every function', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-oldcurl-'));
  const cc = spawnSync('cc', ['-shared', '-fPIC', '-O2', '-o', join(dir, 'libcurl.so.4'),
    join(ROOT, 'tests/fakes/oldcurl.c')], { encoding: 'utf8' });
  assert.equal(cc.status, 0, cc.stderr);
  const env = { ...process.env, LD_LIBRARY_PATH: dir };
  const srv = await startHermes();
  try {
    const doc = spawnSync(HERMES, ['doctor', '--env-file', srv.envFile], { encoding: 'utf8', env });
    assert.equal(doc.status, 1, doc.stdout + doc.stderr);
    assert.match(doc.stdout, /^FAIL .*libcurl\.so\.4 is libcurl 7\.80\.0; hermes-mcp needs 7\.87 or later/m);
    // Without the stand-in, the system's libcurl passes the same check.
    const ok = spawnSync(HERMES, ['smoke', '--base', `http://127.0.0.1:${srv.port}`, '--env-file', srv.envFile],
      { encoding: 'utf8' });
    assert.doesNotMatch(ok.stderr, /libcurl/, ok.stderr);
  } finally {
    await srv.stop();
  }
});
