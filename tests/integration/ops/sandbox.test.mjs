// The systemd unit runs the gateway guide's worked example: the unit that scripts/install-systemd
// renders is read here, and its sandbox is applied the way systemd applies it (build/sandbox-exec:
// PR_SET_MDWE for MemoryDenyWriteExecute=yes, PR_SET_NO_NEW_PRIVS, and a private mount view for
// ProtectSystem/ProtectHome/ReadWritePaths/CacheDirectory/PrivateTmp/ProtectKernelTunables/
// ProtectControlGroups), so the test follows the unit: change a line there and this sees it.
// Under it, hermes-mcp serve (the unit's ExecStart, WorkingDirectory and Environment) starts the
// worked example's three upstreams, the real @modelcontextprotocol/server-everything, -filesystem
// and -memory (installed in tools/, run by the system's node as npx would), and one started by
// the real npx, which must write its cache. Once the mounts are made, sandbox-exec drops to an
// unprivileged user (nobody, owner of the test's account as a user's service owns its home),
// so file modes hold as they do for the real service: a hidden folder refuses, root's files
// stay root's. SystemCallFilter= (with @default added to an allow list, as systemd does) is
// expanded with systemd-analyze syscall-filter and installed with seccomp, native architecture
// only, failing the rest with SystemCallErrorNumber=EPERM. Not applied (no mount or exec effect
// on these children): RestrictAddressFamilies, CapabilityBoundingSet (nobody has no
// capabilities anyway), LockPersonality, RestrictRealtime, RestrictSUIDSGID,
// ProtectKernelModules, UMask. Nor the user namespace a user manager sets up for these options
// (PrivateUsers=, implied in user units by newer systemd, systemd PR #25233): there other
// users' files show as owned by nobody.
// Needs root for the mount namespace (as systemd's are made by PID 1).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ROOT, BUILD, HERMES, until } from '../../lib/lib.mjs';

const SANDBOX = join(BUILD, 'sandbox-exec');
const INSTALL = join(ROOT, 'scripts/install-systemd');
const TOOL = (t) => execFileSync(join(ROOT, 'scripts/node-tools.sh'), [t], { encoding: 'utf8' }).trim();
// A systemd user manager's PATH: npx and node are the system's (Debian 12: Node 20).
const SYSTEMD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const NODE = spawnSync('sh', ['-c', 'command -v node'], { env: { PATH: SYSTEMD_PATH }, encoding: 'utf8' }).stdout.trim();

// The unit's user: the service runs as it, the account's home is its own.
const SERVICE = { uid: 65534, gid: 65534, name: 'nobody' };
const giveToService = (...paths) => { for (const p of paths) chownSync(p, SERVICE.uid, SERVICE.gid); };

let base; // outside /tmp: PrivateTmp=yes hides it from the service, as install-systemd warns
// A checkout under /tmp or /var/tmp (a CI's fresh clone) stands for what a real install keeps
// elsewhere (/usr/bin/hermes-mcp, the npm servers): it is bound back into the private /tmp at its
// own place (sandbox-exec --keep), and the test's account with it.
const KEEP = ['/tmp/', '/var/tmp/'].some((t) => realpathSync(ROOT).startsWith(t)) ? ['--keep', realpathSync(ROOT)] : [];
before(() => {
  base = mkdtempSync(join(ROOT, 'build', 'sandbox-test-'));
  chmodSync(base, 0o755); // the service's user reaches its home through it
});
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

// The system calls of a SystemCallFilter= word (a @group, expanded as systemd does, or a name).
const groups = new Map();
function syscallsOf(word) {
  if (!word.startsWith('@')) return [word];
  if (!groups.has(word)) {
    const r = spawnSync('systemd-analyze', ['syscall-filter', word], { encoding: 'utf8' });
    assert.equal(r.status, 0, `systemd-analyze syscall-filter ${word}: ${r.stderr}`);
    const members = r.stdout.split('\n').slice(1).map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
    groups.set(word, members.flatMap(syscallsOf));
  }
  return groups.get(word);
}

// SystemCallFilter= lines in order: the first decides allow list or ~deny list; an allow list
// starts with @default (systemd adds it); a later ~ line takes its calls out of the allow list.
function syscallFilter(lines) {
  let allow = null;
  for (const value of lines) {
    const deny = value.startsWith('~');
    if (allow === null) {
      assert.ok(!deny, 'a SystemCallFilter= deny list is not applied by this test');
      allow = new Set(syscallsOf('@default'));
      // An ASan build checks for leaks at exit by stopping its threads with ptrace, which the
      // filter refuses (no @debug in @system-service): allowed for that build only.
      if (realpathSync(HERMES).includes('/build/asan/')) allow.add('ptrace');
    }
    for (const name of value.replace(/^~/, '').split(/\s+/).filter(Boolean).flatMap(syscallsOf))
      if (deny) allow.delete(name); else allow.add(name);
  }
  return allow;
}

// A file sandbox-exec --syscalls reads (after the drop to the unit's user: in base, readable).
function syscallFile(lines) {
  const f = join(mkdtempSync(join(base, 'syscalls-')), 'allow');
  chmodSync(dirname(f), 0o755);
  writeFileSync(f, [...syscallFilter(lines)].join('\n') + '\n', { mode: 0o644 });
  return f;
}

// The sandbox-exec arguments, environment, working directory and command line of a unit.
function fromUnit(text, home) {
  const pre = [], ro = [], rw = [], late = [];
  const env = { PATH: SYSTEMD_PATH, HOME: home, USER: SERVICE.name, LOGNAME: SERVICE.name, SHELL: '/bin/sh', LANG: 'C.UTF-8' };
  let cwd = null, exec = null;
  const applied = new Set(), filter = [];
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
        for (const d of words(value, home)) { // created by the manager, the user's, writable whatever the rest says
          mkdirSync(join(home, root, d), { recursive: true, mode: 0o700 });
          let p = home;
          for (const level of join(root, d).split('/')) giveToService(p = join(p, level));
          rw.push(join(home, root, d));
        }
        applied.add(key); break;
      }
      case 'PrivateTmp': if (on) late.push(...KEEP, '--tmpfs', '/tmp', '--tmpfs', '/var/tmp'); applied.add(key); break;
      case 'ProtectKernelTunables': if (on) late.push('--ro', '/proc/sys', '--ro', '/sys'); applied.add(key); break;
      case 'ProtectControlGroups': if (on) late.push('--ro', '/sys/fs/cgroup'); applied.add(key); break;
      case 'Environment':
        for (const w of words(value, home)) { const i = w.indexOf('='); env[w.slice(0, i)] = w.slice(i + 1); }
        applied.add(key); break;
      case 'SystemCallFilter': filter.push(value); applied.add(key); break;
      case 'SystemCallErrorNumber': assert.equal(value, 'EPERM', 'sandbox-exec fails a filtered call with EPERM'); applied.add(key); break;
      case 'WorkingDirectory': cwd = words(value, home)[0]; break;
      case 'ExecStart': exec = words(value.replaceAll('$$', '$'), home); break;
      default: break;
    }
  }
  const mounts = [];
  for (const p of ro) mounts.push('--ro', p);
  if (ro.includes('/')) mounts.push('--rw', '/dev', '--rw', '/proc');
  for (const p of rw) mounts.push('--rw', p);
  const user = ['--uid', `${SERVICE.uid}:${SERVICE.gid}`];
  const syscalls = filter.length ? ['--syscalls', syscallFile(filter)] : [];
  return { args: [...mounts, ...late, ...pre, ...user, ...(cwd ? ['--cwd', cwd] : []), ...syscalls], env, exec, applied };
}

// The gateway guide's worked example (docs/guides/gateway.md), npx swapped for the system's node on the servers installed in
// tools/ (as gwobs.test.mjs does: no download here), its notes folder for ours.
function readmeExample(notes) {
  const readme = readFileSync(join(ROOT, 'docs/guides/gateway.md'), 'utf8');
  const from = readme.indexOf('\n## Worked example: three npm servers\n');
  assert.ok(from >= 0, 'docs/guides/gateway.md has the worked example');
  const i = readme.indexOf('```yaml\n', from);
  let yaml = readme.slice(i + 8, readme.indexOf('```', i + 8))
    .replaceAll('command: npx', `command: ${NODE}`).replaceAll('/home/me/notes', notes);
  for (const name of ['everything', 'filesystem', 'memory'])
    yaml = yaml.replace(`"-y", "@modelcontextprotocol/server-${name}"`, JSON.stringify(TOOL(name)));
  assert.doesNotMatch(yaml, /npx|"-y"/);
  return yaml;
}

// A fresh account: HOME with the env file where the deployment guide puts it, the worked example's
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
  const own = spawnSync('chown', ['-R', `${SERVICE.uid}:${SERVICE.gid}`, home], { encoding: 'utf8' });
  assert.equal(own.status, 0, own.stderr);
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
  const v = sh(['--ro', '/', '--rw', '/dev', '--rw', '/proc', '--rw', rw, ...KEEP, '--tmpfs', '/tmp', '--nnp'],
    `touch ${dir}/x 2>&1; touch ${rw}/y && echo wrote; ls -A /tmp | wc -l; grep NoNewPrivs /proc/self/status; echo >/dev/null && echo devnull`);
  assert.equal(v.status, 0, v.stderr);
  assert.match(v.stdout, /Read-only file system/);
  assert.match(v.stdout, /^wrote$/m);
  // An empty private /tmp (but for the checkout bound back when it lives there).
  const kept = KEEP.length && realpathSync(ROOT).startsWith('/tmp/') ? 1 : 0;
  assert.match(v.stdout, new RegExp(`^${kept}$`, 'm'), 'an empty private /tmp');
  assert.match(v.stdout, /NoNewPrivs:\s+1/);
  assert.match(v.stdout, /^devnull$/m);
  assert.ok(existsSync(join(rw, 'y')) && !existsSync(join(dir, 'x')));
  const node = spawnSync(SANDBOX, ['--mdwe', '--', NODE, '-e', 'console.log("alive")'], { encoding: 'utf8' });
  assert.notEqual(node.status, 0, 'node dies under PR_SET_MDWE');
  assert.match(node.stderr, /SetPermissions|Check failed/);
  const c = spawnSync(SANDBOX, ['--mdwe', '--', HERMES, 'version'], { encoding: 'utf8' });
  assert.equal(c.status, 0, 'hermes-mcp itself runs under it');

  // As the unit's user (--uid, after the mounts): file modes hold. A hidden folder refuses
  // (as root it would list as empty), root's private file and folder stay closed even on a
  // writable mount, the user's own folder takes a file; no capabilities, no extra groups.
  chmodSync(dir, 0o755);
  const hidden = join(dir, 'hidden');
  mkdirSync(hidden);
  writeFileSync(join(hidden, 'secret'), 'not for the service\n');
  writeFileSync(join(dir, 'root-only'), 'root\'s\n', { mode: 0o600 });
  const mine = join(dir, 'mine');
  mkdirSync(mine);
  giveToService(mine);
  const u = sh(['--ro', '/', '--rw', '/dev', '--rw', '/proc', '--rw', dir, '--hide', hidden, '--uid', `${SERVICE.uid}:${SERVICE.gid}`],
    `id -u; ls ${hidden} 2>&1; cat ${dir}/root-only 2>&1; touch ${dir}/z 2>&1; touch ${mine}/w && echo wrote-mine; grep -E 'CapEff|Groups' /proc/self/status`);
  assert.equal(u.status, 0, u.stderr);
  assert.match(u.stdout, new RegExp(`^${SERVICE.uid}$`, 'm'));
  assert.match(u.stdout, new RegExp(`ls: cannot open directory '${hidden}': Permission denied`));
  assert.match(u.stdout, /root-only: Permission denied/);
  assert.match(u.stdout, /touch: cannot touch '.*\/z': Permission denied/);
  assert.match(u.stdout, /^wrote-mine$/m);
  assert.match(u.stdout, /CapEff:\s+0+$/m);
  assert.match(u.stdout, /Groups:\s*$/m);
  assert.ok(existsSync(join(mine, 'w')) && !existsSync(join(dir, 'z')));

  // The unit's system call filter: a call it leaves out fails with EPERM, even for root;
  // the rest work.
  const own = join(dir, 'own');
  writeFileSync(own, '');
  const f = sh(['--syscalls', syscallFile(['@system-service', '~@privileged @resources'])],
    `chown 0:0 ${own} 2>&1; echo still-running`);
  assert.equal(f.status, 0, f.stderr);
  assert.match(f.stdout, /chown: changing ownership of .*own': Operation not permitted/);
  assert.match(f.stdout, /^still-running$/m);
  assert.equal(sh([], `chown 0:0 ${own} && echo chowned`).stdout, 'chowned\n', 'without the filter root may');
});

test('the rendered unit serves the worked example: the three npm servers and an npx upstream start under its sandbox', async () => {
  const a = account();
  const s = underUnit(a.unit, a.home);
  try {
    for (const k of ['MemoryDenyWriteExecute', 'NoNewPrivileges', 'ProtectSystem', 'ProtectHome', 'ReadWritePaths', 'PrivateTmp', 'SystemCallFilter', 'SystemCallErrorNumber'])
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
    assert.equal(statSync(join(a.envDir, 'memory.jsonl')).uid, SERVICE.uid, 'as the unit\'s user');
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
