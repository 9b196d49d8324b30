// Per-tool limits (an upstream's tools.limits in GATEWAY_FILE): a tool's calls a minute and calls
// in flight count over every caller of it. Over a limit the next call, whoever makes it, gets
// the tool error busy with retry_after (never a queued call) while the upstream's other tools
// call on; /metrics counts each refusal by principal, tool and limit, and the log says so once a
// minute per principal, tool and limit with the number refused. A SIGHUP reload changes the
// limits, and a call in flight across it still holds its slot. A bad limit stops serve, and a
// reload with one keeps the running limits. The upstream is tests/fakes/fake-upstream.mjs (echo,
// and slow, which answers after arguments.ms).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { HERMES, startHermes, toolCall, gatewayFile, fakeUpstream, tokensFile, sleep }
  from '../../lib/lib.mjs';
import { events, logMark, waitEvent, waitAnyEvent } from '../../lib/events.mjs';

const file = (limits) => `upstreams:\n${fakeUpstream('fake', [],
  `    tools:\n      include: [echo, slow]\n${limits ? `      limits:\n${limits}` : ''}`)}`;

// A server with GATEWAY_FILE text and two roles, ann and bob, allowed the upstream; fn gets
// {srv, tok, reload(text)}: reload writes the file, sends SIGHUP and returns its log.
async function withServer(text, fn) {
  const dir = mkdtempSync(join(tmpdir(), 'hm-gwlimits-'));
  const tok = { ann: randomBytes(32).toString('hex'), bob: randomBytes(32).toString('hex') };
  const gw = gatewayFile(dir, text);
  const tokens = tokensFile(dir, { ann: [tok.ann, 'gateway:fake'], bob: [tok.bob, 'gateway:fake'] });
  const srv = await startHermes({ GATEWAY_FILE: gw, TOKENS_FILE: tokens });
  const reload = async (t) => {
    writeFileSync(gw, t);
    const mark = logMark(srv);
    srv.proc.kill('SIGHUP');
    await waitAnyEvent(srv, ['pins_reread', 'reload_rejected'], {}, { since: mark, ms: 10000 });
    return srv.proc.stderrText.slice(mark);
  };
  try {
    await fn({ srv, tok, reload });
  } finally {
    assert.equal(await srv.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  }
}

const metrics = async (srv) => (await fetch(`${srv.base}/metrics`, { headers: srv.auth })).text();

function assertOk(r) {
  assert.ok(r && !r.isError && r.content?.[0]?.text, JSON.stringify(r));
}

function assertBusy(r, low, high) {
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.equal(r.structuredContent.error, 'busy');
  const after = r.structuredContent.retry_after;
  assert.ok(after >= low && after <= high, JSON.stringify(r.structuredContent));
}

test("a tool's calls_per_min counts every caller: the next call of anyone is busy", async () => {
  await withServer(file('        echo: {calls_per_min: 2}\n'), async ({ srv, tok }) => {
    assertOk(await toolCall(srv, tok.ann, 'fake__echo', { message: 'a' }));
    assertOk(await toolCall(srv, tok.bob, 'fake__echo', { message: 'b' }));
    // Two calls of two principals spent the tool's minute: a third principal, the owner, waits.
    assertBusy(await toolCall(srv, srv.token, 'fake__echo', { message: 'c' }), 1, 30);
    assertBusy(await toolCall(srv, tok.ann, 'fake__echo', { message: 'd' }), 1, 30);
    assertBusy(await toolCall(srv, tok.ann, 'fake__echo', { message: 'e' }), 1, 30);
    // The upstream's other tool has no limit.
    const slow = await toolCall(srv, tok.ann, 'fake__slow', { ms: 1 });
    assertOk(slow);

    const m = await metrics(srv);
    assert.match(m, /^hermes_mcp_limited_total\{principal="owner",tool="fake__echo",limit="tool_calls_per_min"\} 1$/m);
    assert.match(m, /^hermes_mcp_limited_total\{principal="ann",tool="fake__echo",limit="tool_calls_per_min"\} 2$/m);
    assert.doesNotMatch(m, /limited_total\{principal="bob"/);
    assert.doesNotMatch(m, /limited_total\{[^}]*tool="fake__slow"/);
    // Not a principal's own limit.
    assert.doesNotMatch(m, /^hermes_mcp_principal_limited_total\{/m);
    // One line per principal for the minute, though ann was refused twice.
    await waitEvent(srv, 'tool_limited', { principal: 'ann', tool: 'fake__echo', limit: 'tool_calls_per_min', value: '2', refused: '1' });
    await waitEvent(srv, 'tool_limited', { principal: 'owner', tool: 'fake__echo' });
    assert.equal(events(srv, 'tool_limited', { principal: 'ann' }).length, 1);
    assert.equal(events(srv, 'tool_limited').length, 2);
    assert.equal(events(srv, 'principal_limited').length, 0);
  });
});

test("a tool's calls_in_flight: a second caller is busy while the first call runs, then gets through", async () => {
  await withServer(file('        slow: {calls_in_flight: 1}\n'), async ({ srv, tok }) => {
    const first = toolCall(srv, tok.ann, 'fake__slow', { ms: 1500 });
    let busy;
    for (let i = 0; i < 50 && !busy; i++) {
      const r = await toolCall(srv, tok.bob, 'fake__slow', { ms: 1 });
      if (r.isError) busy = r;
      else await sleep(20);
    }
    assert.ok(busy, "bob's call while ann's runs was let through");
    assertBusy(busy, 1, 1);
    // Another tool of the same upstream is not held up.
    assertOk(await toolCall(srv, tok.bob, 'fake__echo', { message: 'x' }));
    const done = await first;
    assertOk(done);
    assert.equal(done.content[0].text, 'slow done');
    // The slot is free again once ann's call is answered.
    const after = await toolCall(srv, tok.bob, 'fake__slow', { ms: 1 });
    assertOk(after);

    const m = await metrics(srv);
    assert.match(m, /^hermes_mcp_limited_total\{principal="bob",tool="fake__slow",limit="tool_calls_in_flight"\} 1$/m);
    await waitEvent(srv, 'tool_limited', { principal: 'bob', tool: 'fake__slow', limit: 'tool_calls_in_flight', value: '1' });
  });
});

test('two refusals in a row log one line; the metric counts both', async () => {
  await withServer(file('        slow: {calls_in_flight: 1}\n'), async ({ srv, tok }) => {
    const first = toolCall(srv, tok.ann, 'fake__slow', { ms: 1500 });
    let refused = 0;
    for (let i = 0; i < 100 && refused < 3; i++) {
      const r = await toolCall(srv, tok.bob, 'fake__slow', { ms: 1 });
      if (r.isError) refused++;
      else await sleep(20);
    }
    assert.equal(refused, 3);
    await first;
    assert.match(await metrics(srv),
      /^hermes_mcp_limited_total\{principal="bob",tool="fake__slow",limit="tool_calls_in_flight"\} 3$/m);
    await waitEvent(srv, 'tool_limited', { principal: 'bob' });
    assert.equal(events(srv, 'tool_limited').length, 1);
  });
});

test('a reload changes the limits; a call in flight across it keeps its slot', async () => {
  await withServer(file('        slow: {calls_in_flight: 2}\n        echo: {calls_per_min: 1}\n'),
    async ({ srv, tok, reload }) => {
      assertOk(await toolCall(srv, tok.ann, 'fake__echo', { message: 'a' }));
      assertBusy(await toolCall(srv, tok.bob, 'fake__echo', { message: 'b' }), 1, 60);
      // Started under calls_in_flight 2, still running when the limit becomes 1.
      const first = toolCall(srv, tok.ann, 'fake__slow', { ms: 2500 });
      await sleep(300);
      let log = await reload(file('        slow: {calls_in_flight: 1}\n        echo: {calls_per_min: 6000}\n'));
      assert.match(log, /fake__slow: calls_per_min 0, calls_in_flight 1/);
      assertBusy(await toolCall(srv, tok.bob, 'fake__slow', { ms: 1 }), 1, 1);
      // echo's new rate refills within a few milliseconds.
      await sleep(100);
      assertOk(await toolCall(srv, tok.bob, 'fake__echo', { message: 'c' }));
      assertOk(await first);
      assertOk(await toolCall(srv, tok.bob, 'fake__slow', { ms: 1 }));

      // No limits any more: calls at once all run.
      log = await reload(file(''));
      assert.match(log, /fake__slow: calls_per_min 0, calls_in_flight 0/);
      const all = await Promise.all([1, 2, 3].map(() => toolCall(srv, tok.ann, 'fake__slow', { ms: 300 })));
      assert.ok(all.every((r) => !r.isError && r.content[0].text === 'slow done'), JSON.stringify(all));

      // A bad limit is refused whole: the running limits stay (none).
      log = await reload(file('        slow: {calls_in_flight: lots}\n'));
      assert.match(log, /event=reload_rejected/);
      assert.match(log, /key tools\.limits\.slow\.calls_in_flight: must be a whole number 0-10000/);
      const again = await Promise.all([1, 2].map(() => toolCall(srv, tok.ann, 'fake__slow', { ms: 300 })));
      assert.ok(again.every((r) => !r.isError && r.content[0].text === 'slow done'), JSON.stringify(again));
    });
});

test('gateway check shows the limits; a bad tools.limits stops serve and gateway check with the upstream and key', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-gwlimits-'));
  const envWith = (gw) => {
    const env = join(dir, 'env');
    writeFileSync(env, `MCP_PORT=0\nMCP_AUTH_TOKEN=${randomBytes(32).toString('hex')}\nGATEWAY_FILE=${gw}\nAGENTS_FILE=${join(dir, 'agents.yaml')}\n`);
    chmodSync(env, 0o600);
    return env;
  };
  try {
    const good = envWith(gatewayFile(dir, file('        "*": {calls_per_min: 600}\n        slow: {calls_per_min: 10, calls_in_flight: 1}\n')));
    const c = spawnSync(HERMES, ['gateway', 'check', '--env-file', good], { encoding: 'utf8', timeout: 10000 });
    assert.equal(c.status, 0, c.stderr);
    assert.match(c.stdout, /\n    limits of \*: calls_per_min 600 \(each tool over every caller\)\n/);
    assert.match(c.stdout, /\n    limits of slow: calls_per_min 10, calls_in_flight 1 \(each tool over every caller\)\n/);
    for (const [limits, why] of [
      ['        echo: {calls_per_min: 1000001}\n', 'upstream fake, key tools.limits.echo.calls_per_min: must be a whole number 0-1000000'],
      ['        echo: {calls_in_flight: -1}\n', 'upstream fake, key tools.limits.echo.calls_in_flight: must be a whole number 0-10000'],
      ['        echo: {calls: 1}\n', 'upstream fake, key tools.limits.echo.calls: is not a known key'],
      ['        echo: {}\n', 'upstream fake, key tools.limits.echo: must give calls_per_min, calls_in_flight or both'],
      ['        - echo\n', 'upstream fake, key tools.limits: must be a mapping of at most 256 globs'],
    ]) {
      const env = envWith(gatewayFile(dir, file(limits)));
      for (const cmd of [['serve'], ['gateway', 'check']]) {
        const r = spawnSync(HERMES, [...cmd, '--env-file', env], { encoding: 'utf8', timeout: 10000 });
        assert.notEqual(r.status, 0);
        assert.ok((r.stderr + r.stdout).includes(why), cmd.join(' ') + ': ' + r.stderr + r.stdout);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
