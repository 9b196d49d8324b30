// An idle server costs nothing: once its clients are done it makes no system call at all
// (no timer, no polling of the agent or the registry) until the next request.
// Watched with strace for 31 s (the agent probe used to run every 30 s); skipped where strace is not installed (deps.apt has it; a skip fails the run).
// Not serial: it runs beside other files, its 31 s mostly waiting; the servers it watches are
// its own, and no other process's load wakes an idle server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, spawn } from 'node:child_process';
import http from 'node:http';
import { startHermes, startFake, agentEnv, until } from '../../lib/lib.mjs';

const haveStrace = spawnSync('strace', ['-V']).status === 0;

function syscallsDuring(pid, seconds) {
  return new Promise((resolve) => {
    // -c: a count per system call, printed when strace detaches (SIGINT after the window).
    const st = spawn('strace', ['-f', '-c', '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    st.stderr.on('data', (d) => { err += d; });
    setTimeout(() => st.kill('SIGINT'), seconds * 1000);
    // 'close', not 'exit': the summary strace prints as it detaches must have been read whole.
    st.on('close', () => {
      // strace that could not attach (ptrace restricted) prints no table: that is no answer,
      // not zero calls. The total line: % time, seconds, usecs/call, calls, [errors,] total.
      const attached = /Process \d+ attached/.test(err);
      const total = err.split('\n').find((l) => /\stotal\s*$/.test(l));
      const fields = total ? total.trim().split(/\s+/) : [];
      // With no call at all strace prints no table, only "attached" and "detached".
      const detached = /Process \d+ detached/.test(err);
      const calls = total ? (fields.length >= 5 ? Number(fields[3]) : NaN) : (detached ? 0 : NaN);
      resolve({ attached, calls, text: err });
    });
  });
}

test('an idle server makes no system calls (31 s under strace: longer than any period the server ever had)', { skip: !haveStrace && 'strace is not installed' }, async (t) => {
  const fake = await startFake();
  // LOG_LEVEL=debug: the start-up prune of the task directory (in the reaper thread) says when
  // it is done; the watch begins after it, on a loaded machine too.
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), LOG_LEVEL: 'debug' });
  // Beside it, a server whose agent is down: once the failed probe is older than the 30 s probe
  // age, /metrics must still say down (a stale failure only lets a task try the agent again).
  const down = await startHermes({ HERMES_ENV_PATH: agentEnv({ port: 1, key: 'k'.repeat(32) }), MCP_PORT: '0' });
  const agentUp = async () => {
    const res = await fetch(`${down.base}/metrics`, { headers: down.auth });
    return (await res.text()).match(/^hermes_mcp_agent_up\{agent="hermes"\} (\d)/m)?.[1];
  };
  // And one with sessions: a session that idles is no reason to wake up before it could expire.
  const sess = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), MCP_PORT: '0', MCP_SESSIONS: '1', LOG_LEVEL: 'debug' });
  // One request on a connection that closes at once, so no client keep-alive ends in the window.
  const once = (body, to = srv) => new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = http.request({ host: '127.0.0.1', port: to.port, path: '/mcp', method: 'POST', agent: false,
      headers: { ...to.auth, 'Content-Type': 'application/json', Accept: 'application/json', Connection: 'close' } }, (res) => {
      let t = '';
      res.on('data', (d) => { t += d; });
      res.on('end', () => resolve({ status: res.statusCode, json: JSON.parse(t) }));
    });
    req.on('error', reject);
    req.end(data);
  });
  try {
    // Real use first: the agent probed, a task done.
    const r = await once({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'hermes_task', arguments: { task: 'what is 6 * 7', mode: 'sync' } } });
    assert.equal(r.json.result.isError, false);
    const init = await once({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'idle', version: '1' } } }, sess);
    assert.equal(init.status, 200);
    // The first read of /metrics is the first use of the down server's agent: it starts the
    // probe, whose failure a later read reports.
    await until(async () => (await agentUp()) === '0', 'the down agent reported down');
    for (const s of [srv, sess]) await until(() => /retention: nothing to prune/.test(s.proc.stderrText), 'the start-up prune done');
    const [{ attached, calls, text }, sessIdle] = await Promise.all([syscallsDuring(srv.proc.pid, 31), syscallsDuring(sess.proc.pid, 31)]);
    if (!attached) {
      t.skip(`strace could not attach (ptrace restricted?): ${text.trim().split('\n')[0]}`);
      return;
    }
    assert.ok(Number.isInteger(calls), `strace printed a total line:\n${text}`);
    assert.equal(await agentUp(), '0', 'a stale failed probe is not reported as up');
    assert.equal(await agentUp(), '0');
    assert.equal(calls, 0, `no system call while idle:\n${text}`);
    assert.equal(sessIdle.calls, 0, `no system call while a session idles:\n${sessIdle.text}`);
    // And it still answers at once afterwards.
    const again = await once({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_agents', arguments: {} } });
    assert.equal(again.json.result.structuredContent.agents[0].available, true);
  } finally {
    await srv.stop();
    await down.stop();
    await sess.stop();
    await fake.stop();
  }
});
