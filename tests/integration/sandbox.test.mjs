// The systemd unit runs the README's worked example: the unit that scripts/install-systemd
// renders is read here, and its sandbox is applied the way systemd applies it (build/sandbox-exec:
// PR_SET_MDWE for MemoryDenyWriteExecute=yes, PR_SET_NO_NEW_PRIVS, and a private mount view for
// ProtectSystem/ProtectHome/ReadWritePaths/CacheDirectory/PrivateTmp/ProtectKernelTunables/
// ProtectControlGroups), so the test follows the unit: change a line there and this sees it.
// Under it, hermes-mcp serve (the unit's ExecStart, WorkingDirectory and Environment) starts the
// worked example's three upstreams, the real @modelcontextprotocol/server-everything, -filesystem
// and -memory (installed in tools/, run by the system's node as npx would), and one started by
// the real npx, which must write its cache. Not applied (no mount or exec effect on these
// children): SystemCallFilter, RestrictAddressFamilies, CapabilityBoundingSet, LockPersonality,
// RestrictRealtime, RestrictSUIDSGID, ProtectKernelModules, UMask.
// Needs root for the mount namespace (as systemd's are made by PID 1).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ROOT, HERMES, until } from './lib.mjs';

const SANDBOX = join(ROOT, 'build/sandbox-exec');
const INSTALL = join(ROOT, 'scripts/install-systemd');
const TOOL = (t) => execFileSync(join(ROOT, 'scripts/node-tools.sh'), [t], { encoding: 'utf8' }).trim();
// A systemd user manager's PATH: npx and node are the system's (Debian 12: Node 20).
const SYSTEMD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const NODE = spawnSync('sh', ['-c', 'command -v node'], { env: { PATH: SYSTEMD_PATH }, encoding: 'utf8' }).stdout.trim();

let base; // outside /tmp: PrivateTmp=yes hides it from the service, as install-systemd warns
before(() => { base = mkdtempSync(join(ROOT, 'build', 'sandbox-test-')); });
after(() => rmSync(base, { recursive: true, force: true }));

// "Key=value" lines of the unit's [Service] section, comments left out; a key may repeat.
function serviceSection(text) {
  const out = [];
  let inService = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('[')) inService = line === '[Service]';
    else if (inService && line && !line.startsWith('#')) {
      const i = line.indexOf('=');
      out.push([line.slice(0, i), line.slice(i + 1)]);
    }
  }
  return out;
}

// Unit-file words: "quoted words" or bare ones, specifiers expanded as a user manager does.
function words(value, home) {
  const spec = (w) => w.replace(/%(.)/g, (_, c) => ({ '%': '%', h: home, C: join(home, '.cache'),
    S: join(home, '.local/state'), E: join(home, '.config'), L: join(home, '.local/state/log') }[c]
    ?? assert.fail(`specifier %${c} not known to this test`)));
  return [...value.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => spec(m[1] ?? m[2]));
}

// The sandbox-exec arguments, environment, working directory and command line of a unit.
function fromUnit(text, home) {
  const pre = [], ro = [], rw = [], late = [];
  const env = { PATH: SYSTEMD_PATH, HOME: home, USER: 'root', LOGNAME: 'root', SHELL: '/bin/sh', LANG: 'C.UTF-8' };
  let cwd = null, exec = null;
  const applied = new Set();
  const exists = (p) => existsSync(p);
  for (const [key, value] of serviceSection(text)) {
    const on = value === 'yes';
    switch (key) {
      case 'MemoryDenyWriteExecute': if (on) pre.push('--mdwe'); applied.add(key); break;
      case 'NoNewPrivileges': if (on) pre.push('--nnp'); applied.add(key); break;
      case 'ProtectSystem':
        if (value === 'strict') ro.push('/'); // the API file systems are handled below, as systemd does
        else if (on || value === 'full') ro.push('/usr', '/boot', '/efi', ...(value === 'full' ? ['/etc'] : []));
        applied.add(key); break;
      case 'ProtectHome':
        // The test's HOME stands for the account's home (a real one is under /home or /root).
        for (const p of ['/home', '/root', '/run/user', home]) {
          if (!exists(p)) continue;
          if (value === 'read-only') ro.push(p);
          else if (on) late.push('--hide', p);
          else if (value === 'tmpfs') late.push('--tmpfs', p);
        }
        applied.add(key); break;
      case 'ReadWritePaths': rw.push(...words(value, home)); applied.add(key); break;
      case 'CacheDirectory': case 'StateDirectory': case 'LogsDirectory': {
        const root = { CacheDirectory: '.cache', StateDirectory: '.local/state', LogsDirectory: '.local/state/log' }[key];
        for (const d of words(value, home)) { // created by the manager, writable whatever the rest says
          mkdirSync(join(home, root, d), { recursive: true, mode: 0o700 });
          rw.push(join(home, root, d));
        }
        applied.add(key); break;
      }
      case 'PrivateTmp': if (on) late.push('--tmpfs', '/tmp', '--tmpfs', '/var/tmp'); applied.add(key); break;
      case 'ProtectKernelTunables': if (on) late.push('--ro', '/proc/sys', '--ro', '/sys'); applied.add(key); break;
      case 'ProtectControlGroups': if (on) late.push('--ro', '/sys/fs/cgroup'); applied.add(key); break;
      case 'Environment':
        for (const w of words(value, home)) { const i = w.indexOf('='); env[w.slice(0, i)] = w.slice(i + 1); }
        applied.add(key); break;
      case 'WorkingDirectory': cwd = words(value, home)[0]; break;
      case 'ExecStart': exec = words(value.replaceAll('$$', '$'), home); break;
      default: break;
    }
  }
  const mounts = [];
  for (const p of ro) mounts.push('--ro', p);
  if (ro.includes('/')) mounts.push('--rw', '/dev', '--rw', '/proc');
  for (const p of rw) mounts.push('--rw', p);
  return { args: [...mounts, ...late, ...pre, ...(cwd ? ['--cwd', cwd] : [])], env, exec, applied };
}

// The README's worked example, npx swapped for the system's node on the servers installed in
// tools/ (as gwobs.test.mjs does: no download here), its notes folder for ours.
function readmeExample(notes) {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const from = readme.indexOf('### Worked example: three npm servers');
  const i = readme.indexOf('```yaml\n', from);
  let yaml = readme.slice(i + 8, readme.indexOf('```', i + 8))
    .replaceAll('command: npx', `command: ${NODE}`).replaceAll('/home/me/notes', notes);
  for (const name of ['everything', 'filesystem', 'memory'])
    yaml = yaml.replace(`"-y", "@modelcontextprotocol/server-${name}"`, JSON.stringify(TOOL(name)));
  assert.doesNotMatch(yaml, /npx|"-y"/);
  return yaml;
}

// A fresh account: HOME with the env file where the README puts it, the worked example's
// gateway file beside it, notes to serve, and the unit rendered by install-systemd.
function account() {
  const home = mkdtempSync(join(base, 'home-'));
  const envDir = join(home, '.config/hermes-mcp');
  mkdirSync(envDir, { recursive: true, mode: 0o700 });
  const notes = join(home, 'notes');
  mkdirSync(notes);
  writeFileSync(join(notes, 'hello.md'), 'a note the service may read\n');
  // npx as the worked example uses it, on a local package (the registry is not needed): a
  // tarball of a small stdio MCP server, unpacked into npx's cache at the upstream's start.
  const pkg = join(home, 'pkg');
  mkdirSync(pkg);
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'hm-npx-probe', version: '1.0.0', bin: { 'hm-npx-probe': 'probe.mjs' } }));
  writeFileSync(join(pkg, 'probe.mjs'), `#!/usr/bin/env node\nimport ${JSON.stringify(join(ROOT, 'tests/fakes/fake-upstream.mjs'))};\n`, { mode: 0o755 });
  const packed = spawnSync('npm', ['pack', pkg, '--pack-destination', home], { encoding: 'utf8', env: { ...process.env, PATH: SYSTEMD_PATH, npm_config_cache: join(base, 'pack-cache') } });
  assert.equal(packed.status, 0, packed.stderr);
  const tgz = join(home, 'hm-npx-probe-1.0.0.tgz');
  const gw = join(envDir, 'gateway.yaml');
  writeFileSync(gw, readmeExample(notes) +
    `  vianpx:\n    command: npx\n    args: ["-y", "--offline", "--package=${tgz}", "hm-npx-probe"]\n    tools: {include: [echo]}\n`);
  chmodSync(gw, 0o600);
  const envFile = join(envDir, 'env');
  writeFileSync(envFile, [`MCP_AUTH_TOKEN=${randomBytes(32).toString('hex')}`, 'MCP_PORT=0', `GATEWAY_FILE=${gw}`,
    `MEMORY_FILE=${join(envDir, 'memory.jsonl')}`, `AGENTS_FILE=${join(envDir, 'agents.yaml')}`,
    `TASKS_DIR=${join(envDir, 'tasks')}`, `AUDIT_LOG_PATH=${join(envDir, 'audit.jsonl')}`].join('\n') + '\n', { mode: 0o600 });
  const r = spawnSync(INSTALL, ['--no-enable', '--bin', HERMES, '--env-file', envFile], { encoding: 'utf8',
    env: { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, '.config') } });
  assert.equal(r.status, 0, r.stderr);
  const unit = readFileSync(join(home, '.config/systemd/user/hermes-mcp.service'), 'utf8');
  return { home, envDir, envFile, notes, unit, token: readFileSync(envFile, 'utf8').match(/^MCP_AUTH_TOKEN=(\w+)/m)[1] };
}

// The unit's command under its sandbox; resolves with {proc, out(), err()}.
function underUnit(unitText, home, argv) {
  const u = fromUnit(unitText, home);
  const cmd = argv ?? u.exec;
  const proc = spawn(SANDBOX, [...u.args, '--', ...cmd], { env: u.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { err += d; });
  const done = new Promise((res) => proc.on('close', (code, sig) => res(code ?? sig)));
  return { proc, u, done, out: () => out, err: () => err };
}

async function rpc(port, token, msg) {
  const r = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'POST', body: JSON.stringify(msg), headers: {
    Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' } });
  return (await r.json());
}

test('the sandbox helper applies what it says (MDWE kills node, the mount view is read-only but for the writable paths)', () => {
  const dir = mkdtempSync(join(base, 'probe-'));
  const rw = join(dir, 'rw');
  mkdirSync(rw);
  const sh = (args, script) => spawnSync(SANDBOX, [...args, '--', 'sh', '-c', script], { encoding: 'utf8' });
  const v = sh(['--ro', '/', '--rw', '/dev', '--rw', '/proc', '--rw', rw, '--tmpfs', '/tmp', '--nnp'],
    `touch ${dir}/x 2>&1; touch ${rw}/y && echo wrote; ls -A /tmp | wc -l; grep NoNewPrivs /proc/self/status; echo >/dev/null && echo devnull`);
  assert.equal(v.status, 0, v.stderr);
  assert.match(v.stdout, /Read-only file system/);
  assert.match(v.stdout, /^wrote$/m);
  assert.match(v.stdout, /^0$/m, 'an empty private /tmp');
  assert.match(v.stdout, /NoNewPrivs:\s+1/);
  assert.match(v.stdout, /^devnull$/m);
  assert.ok(existsSync(join(rw, 'y')) && !existsSync(join(dir, 'x')));
  const node = spawnSync(SANDBOX, ['--mdwe', '--', NODE, '-e', 'console.log("alive")'], { encoding: 'utf8' });
  assert.notEqual(node.status, 0, 'node dies under PR_SET_MDWE');
  assert.match(node.stderr, /SetPermissions|Check failed/);
  const c = spawnSync(SANDBOX, ['--mdwe', '--', HERMES, 'version'], { encoding: 'utf8' });
  assert.equal(c.status, 0, 'hermes-mcp itself runs under it');
});

test('the rendered unit serves the worked example: the three npm servers and an npx upstream start under its sandbox', async () => {
  const a = account();
  const s = underUnit(a.unit, a.home);
  try {
    for (const k of ['MemoryDenyWriteExecute', 'NoNewPrivileges', 'ProtectSystem', 'ProtectHome', 'ReadWritePaths', 'PrivateTmp'])
      assert.ok(s.u.applied.has(k), `the unit sets ${k} (and this test applies it)`);
    await until(() => /listening on/.test(s.out()) || s.proc.exitCode !== null, 'the server to listen', 60000);
    const port = Number(s.out().match(/listening on http:\/\/127\.0\.0\.1:(\d+)/)?.[1]);
    assert.ok(port, `${s.out()}\n${s.err()}`);
    let ready;
    await until(async () => {
      ready = await (await fetch(`http://127.0.0.1:${port}/readyz`)).json();
      return ready.status === 'ready';
    }, 'every upstream ready', 40000).catch(() => {}); // the assertion below says which is not
    assert.equal(ready.status, 'ready', `${JSON.stringify(ready)}\n${s.err()}`);
    for (const n of ['everything', 'files', 'memory', 'vianpx']) assert.equal(ready.upstreams[n].state, 'ready', n);
    const names = (await rpc(port, a.token, { jsonrpc: '2.0', id: 1, method: 'tools/list' })).result.tools.map((t) => t.name);
    for (const t of ['everything__echo', 'fs_read_text_file', 'memory__create_entities', 'vianpx__echo', 'hermes_task'])
      assert.ok(names.includes(t), `${t} in ${names.join(' ')}`);
    const call = async (name, args) => (await rpc(port, a.token, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: args } })).result;
    assert.match((await call('everything__echo', { message: 'hi' })).content[0].text, /Echo: hi/);
    assert.match((await call('fs_read_text_file', { path: join(a.notes, 'hello.md') })).content[0].text, /a note the service may read/);
    const made = await call('memory__create_entities', { entities: [{ name: 'unit', entityType: 'test', observations: ['ok'] }] });
    assert.equal(made.isError ?? false, false, JSON.stringify(made));
    assert.match(readFileSync(join(a.envDir, 'memory.jsonl'), 'utf8'), /"name":"unit"/, 'memory wrote its file beside the env file');
    assert.ok(existsSync(join(a.home, '.cache/hermes-mcp/npm/_npx')), 'npx unpacked into the service\'s CacheDirectory');
    assert.ok(!existsSync(join(a.home, '.npm')), 'not into ~/.npm');
  } finally {
    s.proc.kill('SIGTERM');
    await s.done;
  }
});

test('with MemoryDenyWriteExecute=yes the same setup cannot start a Node upstream (why the unit differs)', async () => {
  const a = account();
  assert.match(a.unit, /^MemoryDenyWriteExecute=no$/m);
  const strict = a.unit.replace(/^MemoryDenyWriteExecute=no$/m, 'MemoryDenyWriteExecute=yes');
  const u = fromUnit(strict, a.home);
  const s = underUnit(strict, a.home, [u.exec[0], 'gateway', 'check', '--probe', '--env-file', a.envFile]);
  const code = await s.done;
  assert.equal(code, 1, s.out() + s.err());
  assert.match(s.out() + s.err(), /4 upstreams did not start/);
});
