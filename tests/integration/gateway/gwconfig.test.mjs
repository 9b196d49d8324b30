// Gateway-file settings that used to pass silently: an upstream with `enabled: false` (a field of
// Hermes' own MCP client configuration) is validated but never started nor exposed, and says so in
// serve's log, `gateway check` and `doctor`; tools.include beside a non-empty tools.exclude
// (exclude is then ignored, as in Hermes' MCP client configuration) is warned about in all three;
// an include glob that matches none of its upstream's tools is warned about at start and by
// `gateway check --probe`. Real binary, real SDK client, tests/fakes/fake-upstream.mjs as the
// upstreams (--starts records each process that started).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync, chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, HERMES, startHermes, gatewayFile, sdkClient } from '../../lib/lib.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
let dir, srv, client, tools;

const starts = (name) => {
  const f = join(dir, `${name}.starts`);
  return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').length : 0;
};
const upstream = (name, rest) => `  ${name}:\n    command: ${JSON.stringify(process.execPath)}\n` +
  `    args: ${JSON.stringify([FAKE, '--starts', join(dir, `${name}.starts`)])}\n${rest}`;

// live: on; idle: enabled: false (its tools would be exposed otherwise); both: include and
// exclude; typo: an include glob that matches nothing the upstream offers.
const FILE = () => 'upstreams:\n' +
  upstream('live', '    enabled: true\n    tools: {include: [echo]}\n') +
  upstream('idle', '    enabled: false\n    tools: {include: ["*"]}\n    smoke: {tool: echo}\n') +
  upstream('both', '    tools:\n      include: [echo]\n      exclude: [slow]\n') +
  upstream('typo', '    tools: {include: [echo, ehco, "web_*"]}\n');

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hm-gwconfig-'));
  srv = await startHermes({ GATEWAY_FILE: gatewayFile(dir, FILE()) });
  ({ client, tools } = await sdkClient(srv, 'gw-config'));
});

after(async () => {
  await client?.close();
  if (srv) assert.equal(await srv.stop(), 0);
  rmSync(dir, { recursive: true, force: true });
});

test('enabled: false: configured, never started, none of its tools listed or callable, not in /readyz', async () => {
  assert.equal(starts('idle'), 0, 'the disabled upstream was never started');
  assert.equal(starts('live'), 1);
  const names = Object.keys(tools).filter((n) => n.includes('__')).sort(); // not the bridge's
  assert.deepEqual(names, ['both__echo', 'live__echo', 'typo__echo']);
  await assert.rejects(client.callTool({ name: 'idle__echo', arguments: { message: 'x' } }), /Unknown tool/);
  const ready = await fetch(`${srv.base}/readyz`);
  const body = await ready.json();
  assert.deepEqual(Object.keys(body.upstreams).sort(), ['both', 'live', 'typo']);
  assert.equal(ready.status, 200, 'a disabled upstream does not hold readiness back');
  assert.match(srv.proc.stderrText, /gateway: upstream idle is disabled \(enabled: false\): validated, not started/);
});

test('include with exclude: one warning at start naming the upstream; an include glob matching nothing: one per glob', () => {
  const log = srv.proc.stderrText;
  const both = log.split('\n').filter((l) => /both tools\.include and tools\.exclude/.test(l));
  assert.equal(both.length, 1, log);
  assert.match(both[0], /warn.*upstream both has both tools\.include and tools\.exclude: .*exclude is ignored/);
  assert.doesNotMatch(log, /upstream (live|typo|idle) has both/);
  const unmatched = log.split('\n').filter((l) => /matches none of its/.test(l));
  assert.equal(unmatched.length, 2, log);
  assert.match(unmatched[0], /warn.*upstream typo: tools\.include 'ehco' matches none of its 7 tools/);
  assert.match(unmatched[1], /upstream typo: tools\.include 'web_\*' matches none of its 7 tools/);
});

test('gateway check and doctor show the disabled upstream and the include/exclude warning', () => {
  const check = spawnSync(HERMES, ['gateway', 'check', '--env-file', srv.envFile], { encoding: 'utf8' });
  assert.equal(check.status, 0, check.stderr);
  assert.match(check.stdout, /: 3 upstreams, 1 more disabled\n/);
  assert.match(check.stdout, /\n  idle: stdio \S+ \(disabled: enabled: false; validated, not started, not exposed\)\n/);
  assert.match(check.stdout, /\n  warning: upstream both has both tools\.include and tools\.exclude: .*exclude is ignored/);
  const doctor = spawnSync(HERMES, ['doctor', '--no-probe', '--env-file', srv.envFile], { encoding: 'utf8' });
  assert.match(doctor.stdout, /\nwarn +gateway file: upstream both has both tools\.include and tools\.exclude: .*exclude is ignored/);
  assert.match(doctor.stdout, /\nok +gateway file: upstream idle is disabled \(enabled: false\): validated, not started/);
  assert.equal(starts('idle'), 0, 'neither started it');
});

test('gateway check --probe: the disabled upstream is not started; an include glob matching nothing is warned about', () => {
  const before_ = starts('live');
  const r = spawnSync(HERMES, ['gateway', 'check', '--probe', '--env-file', srv.envFile], { encoding: 'utf8', timeout: 60000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.equal(starts('live'), before_ + 1, 'the probe started the enabled ones');
  assert.equal(starts('idle'), 0, 'but not the disabled one');
  assert.match(r.stdout, /\nupstream idle: disabled \(enabled: false\), not started\n/);
  assert.match(r.stdout, /\nwarning: upstream typo: tools\.include 'ehco' matches none of its 7 tools\n/);
  assert.match(r.stdout, /\nwarning: upstream typo: tools\.include 'web_\*' matches none of its 7 tools\n/);
  assert.doesNotMatch(r.stdout, /upstream (live|both): tools\.include/);
});

test('enabled: anything but true or false stops serve, gateway check and doctor naming upstream and key', async () => {
  for (const value of ['no', '0', '"yes"', '[false]']) {
    const gw = gatewayFile(dir, `upstreams:\n${upstream('x', `    enabled: ${value}\n    tools: {include: [echo]}\n`)}`, 'bad.yaml');
    const started = await startHermes({ GATEWAY_FILE: gw }).then((s) => s, (e) => e);
    if (!(started instanceof Error)) await started.stop(); // served: the value went unnoticed
    assert.match(String(started?.message), /upstream x, key enabled: must be true or false/, value);
    const env = join(dir, 'bad.env');
    writeFileSync(env, `MCP_AUTH_TOKEN=${'d'.repeat(64)}\nGATEWAY_FILE=${gw}\n`);
    chmodSync(env, 0o600);
    const check = spawnSync(HERMES, ['gateway', 'check', '--env-file', env], { encoding: 'utf8' });
    assert.equal(check.status, 1, value);
    assert.match(check.stderr, /upstream x, key enabled: must be true or false/);
    const doctor = spawnSync(HERMES, ['doctor', '--no-probe', '--env-file', env], { encoding: 'utf8' });
    assert.match(doctor.stdout, /\nFAIL +gateway file \S+: upstream x, key enabled: must be true or false/, value);
  }
  // a disabled upstream is validated all the same
  const gw = gatewayFile(dir, `upstreams:\n${upstream('x', '    enabled: false\n    timeout: 0\n')}`, 'bad.yaml');
  const started = await startHermes({ GATEWAY_FILE: gw }).then((s) => s, (e) => e);
  if (!(started instanceof Error)) await started.stop();
  assert.match(String(started?.message), /upstream x, key timeout/);
});

test('serve, doctor and gateway check give the same gateway-file warnings: approve guards, default deny, a placeholder in args', async () => {
  const d = mkdtempSync(join(tmpdir(), 'hm-gwlint-'));
  try {
    const up = (name, rest) => `  ${name}:\n    command: ${JSON.stringify(process.execPath)}\n` +
      `    args: ${JSON.stringify([FAKE, '--starts', join(d, `${name}.starts`)])}\n${rest}`;
    const file = gatewayFile(d, 'approvals: {timeout_s: 30}\nupstreams:\n' +
      up('guarded', '    tools: {include: [echo], guard: {echo: approve}}\n') +
      up('closed', '') +
      `  marked:\n    command: ${JSON.stringify(process.execPath)}\n` +
      `    args: ${JSON.stringify([FAKE, '--mark', '${LINT_MARK}'])}\n    tools: {include: [echo]}\n`);
    const s = await startHermes({ GATEWAY_FILE: file, LINT_MARK: 'x' });
    const warned = s.proc.stderrText.split('\n').map((l) => l.match(/warn: gateway: (.*)$/)?.[1]).filter(Boolean);
    for (const re of [/approve guards: `hermes-mcp approve` is heard from uid/, /upstream closed has no tools\.include or tools\.exclude/,
      /upstream marked has a \$\{\.\.\.\} placeholder in args/])
      assert.ok(warned.some((w) => re.test(w)), `serve warns ${re}: ${warned.join('\n')}`);
    const doctor = spawnSync(HERMES, ['doctor', '--no-probe', '--env-file', s.envFile], { encoding: 'utf8' });
    const check = spawnSync(HERMES, ['gateway', 'check', '--env-file', s.envFile], { encoding: 'utf8' });
    assert.equal(await s.stop(), 0);
    assert.equal(check.status, 0, check.stderr);
    for (const w of warned.filter((l) => !/matches none of its/.test(l))) { // --probe's, not the file's
      assert.ok(doctor.stdout.split('\n').some((l) => /^warn +gateway file: /.test(l) && l.endsWith(w)), `doctor: ${w}\n${doctor.stdout}`);
      assert.ok(check.stdout.includes(`\n  warning: ${w}\n`), `gateway check: ${w}\n${check.stdout}`);
    }
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});
