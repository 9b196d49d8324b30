// What the gateway tells its operator: one audit line per proxied
// call (upstream, exposed and original name, outcome, duration, principal; never arguments or
// results) and /metrics per upstream (state, restarts, calls by outcome, errors, latency,
// calls in flight, withheld tools); `gateway check --probe` and its exposed-names table. The
// upstream is tests/fakes/fake-upstream.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, existsSync, chmodSync, mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { ROOT, HERMES, startHermes, startConformance, until, jsonLines, gatewayFile, sdkClient } from '../../lib/lib.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
const SECRET_ARG = 'argument-that-must-not-be-logged-7d1f';
let dir, srv, client;

const auditLines = () => (existsSync(srv.auditFile) ? jsonLines(readFileSync(srv.auditFile, 'utf8')) : []);
const callLines = () => auditLines().filter((l) => l.event === 'gateway_call');

async function metrics() {
  const res = await fetch(`${srv.base}/metrics`, { headers: srv.auth });
  assert.equal(res.status, 200);
  const text = await res.text();
  const samples = new Map();
  for (const line of text.trim().split('\n')) {
    if (line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return { text, v: (key) => samples.get(key) ?? 0 };
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hm-gwobs-'));
  const gw = gatewayFile(dir, `upstreams:\n  fake:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--starts', join(dir, 'fake.starts')])}\n` +
    '    timeout: 1\n    tools: {include: ["*"]}\n');
  // Sessions: a client's notifications/cancelled is attributed to its call.
  srv = await startHermes({ GATEWAY_FILE: gw, MCP_SESSIONS: '1' });
  ({ client } = await sdkClient(srv, 'gw-obs'));
});

after(async () => {
  await client?.close();
  if (srv) assert.equal(await srv.stop(), 0);
  rmSync(dir, { recursive: true, force: true });
});

test('one audit line per proxied call: upstream, both names, outcome, duration, principal; no arguments or results', async () => {
  const r = await client.callTool({ name: 'fake__echo', arguments: { message: SECRET_ARG } });
  assert.equal(r.content[0].text, `Echo: ${SECRET_ARG}`);
  const hang = await client.callTool({ name: 'fake__hang', arguments: { message: SECRET_ARG } });
  assert.equal(hang.structuredContent.error, 'upstream_timeout');
  const ctl = new AbortController();
  const slow = client.callTool({ name: 'fake__slow', arguments: { ms: 5000 } }, undefined, { signal: ctl.signal });
  await new Promise((res) => setTimeout(res, 200));
  ctl.abort('changed my mind');
  await assert.rejects(slow);
  await until(() => callLines().length >= 3, 'three gateway_call lines');
  const [echo, timedOut, cancelled] = callLines();
  assert.deepEqual(Object.keys(echo).sort(),
    ['duration_ms', 'event', 'principal', 'status', 'tool', 'ts', 'upstream', 'upstream_tool']);
  assert.equal(echo.upstream, 'fake');
  assert.equal(echo.tool, 'fake__echo');
  assert.equal(echo.upstream_tool, 'echo');
  assert.equal(echo.status, 'ok');
  assert.equal(echo.principal, 'owner');
  assert.equal(typeof echo.duration_ms, 'number');
  assert.ok(echo.duration_ms >= 0 && echo.duration_ms < 5000, String(echo.duration_ms));
  assert.equal(timedOut.tool, 'fake__hang');
  assert.equal(timedOut.status, 'upstream_timeout');
  assert.ok(timedOut.duration_ms >= 900, `timed out after its 1 s: ${timedOut.duration_ms}`);
  assert.equal(cancelled.tool, 'fake__slow');
  assert.equal(cancelled.status, 'cancelled');
  const text = readFileSync(srv.auditFile, 'utf8');
  assert.ok(!text.includes(SECRET_ARG), 'no argument and no result in the audit log');
  assert.ok(!text.includes('Echo:'));
});

test('a crash: upstream_unavailable in the audit line; /metrics counts calls, errors, latency and the restart', async () => {
  const before = await metrics();
  const beforeLines = callLines().length;
  const crash = await client.callTool({ name: 'fake__crash', arguments: {} });
  assert.equal(crash.structuredContent.error, 'upstream_unavailable');
  await until(async () => !(await client.callTool({ name: 'fake__echo', arguments: { message: 'x' } })).isError,
    'fake answering again', 10000);
  await until(() => callLines().length > beforeLines + 1 && callLines().at(-1).status === 'ok',
    'the crash and echo lines');
  const lines = callLines().slice(beforeLines);
  assert.equal(lines[0].tool, 'fake__crash');
  assert.equal(lines[0].status, 'upstream_unavailable');
  assert.equal(lines.at(-1).status, 'ok');
  // Calls made while it restarted answered upstream_unavailable too: count what the log says.
  const count = (status) => callLines().filter((l) => l.status === status).length;
  const m = await metrics();
  const up = 'upstream="fake"';
  assert.equal(m.v(`hermes_mcp_gateway_calls_total{${up},outcome="ok"}`), count('ok'));
  assert.equal(m.v(`hermes_mcp_gateway_calls_total{${up},outcome="upstream_unavailable"}`), count('upstream_unavailable'));
  assert.equal(m.v(`hermes_mcp_gateway_calls_total{${up},outcome="upstream_timeout"}`), 1);
  assert.equal(m.v(`hermes_mcp_gateway_calls_total{${up},outcome="cancelled"}`), 1);
  assert.equal(m.v(`hermes_mcp_gateway_call_errors_total{${up}}`), callLines().length - count('ok'));
  assert.equal(m.v(`hermes_mcp_gateway_call_duration_seconds_count{${up}}`), callLines().length);
  assert.ok(m.v(`hermes_mcp_gateway_call_duration_seconds_sum{${up}}`) >= 1, 'the 1 s timeout is in the sum');
  assert.equal(before.v(`hermes_mcp_gateway_upstream_restarts_total{${up}}`), 0);
  assert.equal(m.v(`hermes_mcp_gateway_upstream_restarts_total{${up}}`), 1);
  assert.equal(readFileSync(join(dir, 'fake.starts'), 'utf8').trim().split('\n').length, 2);
  assert.equal(m.v(`hermes_mcp_gateway_upstream_state{${up},state="ready"}`), 1);
  assert.equal(m.v(`hermes_mcp_gateway_upstream_state{${up},state="down"}`), 0);
  assert.equal(m.v(`hermes_mcp_gateway_tools_withheld{${up}}`), 0);
  assert.equal(m.v(`hermes_mcp_gateway_calls_in_flight{${up}}`), 0);
  for (const family of ['hermes_mcp_gateway_calls_total counter', 'hermes_mcp_gateway_call_duration_seconds histogram',
    'hermes_mcp_gateway_upstream_state gauge', 'hermes_mcp_gateway_upstream_restarts_total counter']) {
    assert.ok(m.text.includes(`# TYPE ${family}\n`), family);
  }
  assert.ok(!m.text.includes(FAKE) && !m.text.includes(srv.token), 'names only: no command, no secret');
  const tool = spawnSync(join(ROOT, 'scripts/promtool.sh'), { encoding: 'utf8' });
  if (tool.status !== 0) {
    console.log('# promtool unavailable (scripts/promtool.sh failed): the page is not linted');
  } else {
    const lint = spawnSync(tool.stdout.trim().split('\n').at(-1), ['check', 'metrics'], { input: m.text, encoding: 'utf8' });
    assert.equal(lint.status, 0, `promtool check metrics:\n${lint.stdout}${lint.stderr}`);
  }
});

// `gateway check --probe`: the upstreams started as serve would, the exposed-names table.
function probeSetup(name, upstreams, tail = '') {
  const gw = join(dir, `${name}.yaml`);
  writeFileSync(gw, 'upstreams:\n' + Object.entries(upstreams).map(([n, { args = [], extra = '' }]) =>
    `  ${n}:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--starts', join(dir, `${name}-${n}.starts`), ...args])}\n${extra}`).join('') + tail);
  chmodSync(gw, 0o600);
  const env = join(dir, `${name}.env`);
  writeFileSync(env, `MCP_AUTH_TOKEN=${'c'.repeat(64)}\nGATEWAY_FILE=${gw}\n`);
  chmodSync(env, 0o600);
  return env;
}
const startsOf = (name, n) => (existsSync(join(dir, `${name}-${n}.starts`))
  ? readFileSync(join(dir, `${name}-${n}.starts`), 'utf8').trim().split('\n').map((l) => Number(l.split(' ')[1])) : []);
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };

test('gateway check --probe prints the exposed-names table with the deciding rules; exit 0', () => {
  const env = probeSetup('p1', {
    fake: { extra: '    tools: {include: ["echo", "s*"], exclude: ["slow", "crash"]}\n' },
    plain: { extra: '    prefix: ""\n    tools: {exclude: ["h*", "garbage", "crash", "slow"]}\n' },
    quiet: {},
  });
  const r = spawnSync(HERMES, ['gateway', 'check', '--probe', '--env-file', env], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const table = r.stdout.slice(r.stdout.indexOf('exposed names (probe):'));
  const lines = table.split('\n').slice(1);
  const rows = lines.slice(0, lines.findIndex((l) => !l.startsWith('  '))).map((l) => l.trim().split(/\s{2,}/));
  assert.deepEqual(rows[0], ['NAME', 'UPSTREAM', 'TOOL', 'RULE']);
  const row = (up, tool) => rows.find((x) => x[1] === up && x[2] === tool);
  assert.deepEqual(row('fake', 'echo'), ['fake__echo', 'fake', 'echo', 'included by echo']);
  assert.deepEqual(row('fake', 'slow'), ['fake__slow', 'fake', 'slow', 'included by s*'], 'include wins over exclude');
  assert.deepEqual(row('fake', 'crash'), ['-', 'fake', 'crash', 'excluded by crash']);
  assert.deepEqual(row('fake', 'hang'), ['-', 'fake', 'hang', 'not included']);
  assert.deepEqual(row('plain', 'echo'), ['echo', 'plain', 'echo', 'included']);
  assert.deepEqual(row('plain', 'hugetail'), ['-', 'plain', 'hugetail', 'excluded by h*']);
  assert.deepEqual(row('quiet', 'echo'), ['-', 'quiet', 'echo', 'default deny']);
  assert.equal(rows.length, 1 + 3 * 7, 'one row per tool of each upstream');
  assert.match(r.stdout, /\n3 of 21 tools exposed; 0 upstreams did not start\n/);
  for (const n of ['fake', 'plain', 'quiet']) {
    const pids = startsOf('p1', n);
    assert.equal(pids.length, 1, `${n} started once`);
    assert.ok(!alive(pids[0]), `${n} stopped after the probe`);
  }
});

test('gateway check --probe exits 1 naming an upstream that does not start, or a name serve would refuse', () => {
  const env = probeSetup('p2', {
    good: { extra: '    tools: {include: ["echo"]}\n' },
    broken: { args: ['--crash-init'], extra: '    tools: {include: ["*"]}\n' },
  });
  const r = spawnSync(HERMES, ['gateway', 'check', '--probe', '--env-file', env], { encoding: 'utf8' });
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /good__echo +good +echo +included by echo\n/);
  assert.match(r.stdout, /upstream broken did not start: exited with status 4\n/);
  assert.match(r.stdout, /1 of 7 tools exposed; 1 upstream did not start\n/);
  const clash = probeSetup('p3', {
    one: { extra: '    prefix: "x_"\n    tools: {include: ["echo"]}\n' },
    two: { extra: '    prefix: "x_"\n    tools: {include: ["echo"]}\n' },
  });
  const c = spawnSync(HERMES, ['gateway', 'check', '--probe', '--env-file', clash], { encoding: 'utf8' });
  assert.equal(c.status, 1, c.stdout + c.stderr);
  assert.match(c.stdout, /x_echo +two +echo +included by echo; refused: taken by upstream one, tool 'echo'\n/);
  // Without --probe nothing is started; doctor checks the file offline too.
  const off = spawnSync(HERMES, ['gateway', 'check', '--env-file', env], { encoding: 'utf8' });
  assert.equal(off.status, 0, off.stderr);
  assert.doesNotMatch(off.stdout, /exposed names/);
  spawnSync(HERMES, ['doctor', '--no-probe', '--env-file', env], { encoding: 'utf8' });
  assert.equal(startsOf('p2', 'good').length, 1, 'only the probe started it');
  const help = spawnSync(HERMES, ['gateway', '--help'], { encoding: 'utf8' });
  assert.match(help.stdout, /gateway check \[--probe\] \[--env-file FILE\]/);
  assert.match(help.stdout, /--probe also starts each upstream/);
});

test('gateway check shows guards, argument policies, startup_context and the approvals timeout; --probe per exposed tool', () => {
  const env = probeSetup('p5', {
    pol: { extra: '    tools:\n      include: [echo, slow, hang]\n      guard: {echo: confirm, "sl*": approve, "ec*": {confirm: {mode: [a, b]}}}\n' +
      '      args:\n        echo: {max_length: {message: 100}, reject_secrets: [message]}\n' },
  }, `startup_context: {files: [${JSON.stringify(join(dir, 'SOUL.md'))}], max_bytes: 1000}\napprovals: {timeout_s: 42}\n`);
  const off = spawnSync(HERMES, ['gateway', 'check', '--env-file', env], { encoding: 'utf8' });
  assert.equal(off.status, 0, off.stderr);
  assert.match(off.stdout, /\n    guard: echo confirm, sl\* approve, ec\* confirm when mode is a, b\n/);
  assert.match(off.stdout, /\n    args of echo: max_length message 100; reject_secrets message\n/);
  assert.match(off.stdout, /\n  startup_context: a tool returning 1 fixed file, at most 1000 bytes each\n/);
  assert.match(off.stdout, /\n  approvals: an approve-guarded call waits 42 s for the operator/);
  const r = spawnSync(HERMES, ['gateway', 'check', '--probe', '--env-file', env], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const table = r.stdout.slice(r.stdout.indexOf('guarded and policed tools (probe):'));
  assert.match(table, /\n  pol__echo +pol +confirm; max_length message 100; reject_secrets message\n/);
  assert.match(table, /\n  pol__slow +pol +approve\n/);
  assert.doesNotMatch(table.split('upstreams (probe)')[0], /pol__hang/, 'an unguarded tool has no row');
});

test('gateway check --probe prints each upstream\'s protocol, its resources and prompts where enabled, and runs its smoke call', async () => {
  const everything = spawnSync(join(ROOT, 'scripts/node-tools.sh'), ['everything'], { encoding: 'utf8' })
    .stdout.trim().split('\n')[0];
  const conf = await startConformance(); // speaks 2026-07-28
  try {
    const gw = join(dir, 'p4.yaml');
    writeFileSync(gw, 'upstreams:\n' +
      `  ev:\n    command: ${JSON.stringify(process.execPath)}\n    args: ${JSON.stringify([everything, 'stdio'])}\n` +
      '    tools: {include: [echo], resources: true, prompts: true}\n' +
      '    smoke: {tool: echo, arguments: {message: ready}}\n' +
      `  sick:\n    command: ${JSON.stringify(process.execPath)}\n    args: ${JSON.stringify([FAKE, '--smoke-tools'])}\n` +
      '    tools: {include: [echo]}\n    smoke: {tool: iserror}\n' +
      `  conf:\n    url: ${conf.url}\n    tools: {include: [test_simple_text]}\n`);
    chmodSync(gw, 0o600);
    const env = join(dir, 'p4.env');
    writeFileSync(env, `MCP_AUTH_TOKEN=${'c'.repeat(64)}\nGATEWAY_FILE=${gw}\n`);
    chmodSync(env, 0o600);
    const r = spawnSync(HERMES, ['gateway', 'check', '--probe', '--env-file', env], { encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 1, 'a failed smoke call fails the check\n' + r.stdout + r.stderr);
    const section = (title) => {
      const at = r.stdout.indexOf(`\n${title}:\n`);
      assert.ok(at >= 0, `${title} printed:\n${r.stdout}`);
      const lines = r.stdout.slice(at + title.length + 3).split('\n');
      return lines.slice(0, lines.findIndex((l) => !l.startsWith('  '))).map((l) => l.trim());
    };
    const ups = section('upstreams (probe)');
    assert.deepEqual(ups, [
      'ev: protocol 2025-11-25; resources: 7 offered; prompts: 4 offered; smoke call echo passed',
      'sick: protocol 2025-11-25; smoke call iserror failed: the result has isError: true',
      'conf: protocol 2026-07-28',
    ]);
    const table = (title) => section(title).map((l) => l.split(/\s{2,}/));
    const resources = table('resources (probe)');
    assert.deepEqual(resources[0], ['URI', 'UPSTREAM', 'STATUS']);
    assert.equal(resources.length, 1 + 7 + 2, 'its 7 resources and 2 templates');
    assert.deepEqual(resources.find((x) => x[0].includes('dynamic/text')),
      ['template demo://resource/dynamic/text/{resourceId}', 'ev', 'exposed']);
    assert.deepEqual(resources.find((x) => x[0].endsWith('/architecture.md')),
      ['demo://resource/static/document/architecture.md', 'ev', 'exposed']);
    const prompts = table('prompts (probe)');
    assert.deepEqual(prompts[0], ['NAME', 'UPSTREAM', 'PROMPT', 'STATUS']);
    assert.deepEqual(prompts.find((x) => x[2] === 'simple-prompt'), ['ev__simple-prompt', 'ev', 'simple-prompt', 'exposed']);
    assert.equal(prompts.length, 1 + 4);
    assert.match(r.stdout, /\n3 of \d+ tools exposed; 0 upstreams did not start; 1 smoke call failed\n/);
  } finally {
    await conf.stop();
  }
  // The same upstreams without the failing smoke call: exit 0.
  const ok = probeSetup('p5', { fine: { args: ['--smoke-tools'], extra: '    tools: {include: [echo]}\n    smoke: {tool: provider}\n' } });
  const r = spawnSync(HERMES, ['gateway', 'check', '--probe', '--env-file', ok], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /\nupstreams \(probe\):\n  fine: protocol 2025-11-25; smoke call provider passed\n/);
  assert.doesNotMatch(r.stdout, /resources \(probe\)|prompts \(probe\)|smoke call failed/);
});

test('gateway guide: the worked example\'s gateway file probes to the table printed there', () => {
  const readme = readFileSync(join(ROOT, 'docs/guides/gateway.md'), 'utf8');
  const from = readme.indexOf('\n## Worked example: three npm servers\n');
  assert.ok(from >= 0, 'docs/guides/gateway.md has the worked example');
  const block = (lang) => { const i = readme.indexOf('```' + lang + '\n', from); return readme.slice(i + lang.length + 4, readme.indexOf('```', i + 4)); };
  const servers = spawnSync(join(ROOT, 'scripts/node-tools.sh'), ['everything', 'filesystem', 'memory'],
    { encoding: 'utf8' }).stdout.trim().split('\n');
  const notes = join(dir, 'notes');
  mkdirSync(notes, { recursive: true });
  // The same file with npx swapped for the installed servers (no download in the test).
  let yaml = block('yaml').replaceAll('command: npx', `command: ${JSON.stringify(process.execPath)}`)
    .replaceAll('/home/me/notes', notes);
  for (const name of ['everything', 'filesystem', 'memory']) {
    const path = servers.find((p) => p.includes(`/server-${name}/`));
    assert.ok(path && existsSync(path), `server-${name} installed`);
    yaml = yaml.replace(`"-y", "@modelcontextprotocol/server-${name}"`, JSON.stringify(path));
  }
  assert.doesNotMatch(yaml, /npx|"-y"/);
  const gw = join(dir, 'readme.yaml');
  writeFileSync(gw, yaml);
  chmodSync(gw, 0o600);
  const env = join(dir, 'readme.env');
  writeFileSync(env, `MCP_AUTH_TOKEN=${'d'.repeat(64)}\nGATEWAY_FILE=${gw}\nMEMORY_FILE=${join(dir, 'memory.jsonl')}\n`);
  chmodSync(env, 0o600);
  const r = spawnSync(HERMES, ['gateway', 'check', '--probe', '--env-file', env], { encoding: 'utf8', timeout: 60000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const printed = block('text').trim().split('\n');
  assert.ok(printed.length >= 5);
  for (const line of printed) assert.ok(r.stdout.includes(`${line}\n`), `printed as in the gateway guide: ${line}\n${r.stdout}`);
});
