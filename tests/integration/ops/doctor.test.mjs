// hermes-mcp doctor: a good setup passes every check; each check fails, with its fix, when
// exactly its part of the setup is broken; no run ever prints a secret.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, chmodSync, mkdirSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { HERMES, startFake, startHermes, freePort } from '../../lib/lib.mjs';

let fake;             // one fake agent for every test: default key + profile "beta"
let betaKey;          // the profile's key (key_env BETA_KEY)
const secrets = [];   // every token and key any test wrote

before(async () => {
  const d = mkdtempSync(join(tmpdir(), 'hm-doc-fake-'));
  betaKey = 'beta-' + randomBytes(16).toString('hex');
  writeFileSync(join(d, 'beta.key'), betaKey + '\n');
  chmodSync(join(d, 'beta.key'), 0o600);
  fake = await startFake(['--profile', `beta=${join(d, 'beta.key')}`]);
  secrets.push(fake.key, betaKey);
});

after(async () => {
  await fake.stop();
});

const yamlFor = (s, alphaUrl = `http://127.0.0.1:${fake.port}`, betaEnv = 'BETA_KEY') =>
  `default: alpha\nagents:\n  - name: alpha\n    base_url: ${alphaUrl}\n    key_file: ${s.keyFile}\n` +
  `  - name: beta\n    profile: beta\n    base_url: http://127.0.0.1:${fake.port}/p/beta\n    key_env: ${betaEnv}\n`;

// A complete, good setup in a fresh directory. HOME points into it so ~/.hermes is ours.
async function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'hm-doc-'));
  const s = {
    dir,
    token: randomBytes(32).toString('hex'),
    envFile: join(dir, 'hermes-mcp.env'),
    keyFile: join(dir, 'alpha.key'),
    registry: join(dir, 'agents.yaml'),
    contract: join(dir, 'contract.md'),
    tasks: join(dir, 'tasks'),
    agentEnv: join(dir, 'agent.env'),
    port: await freePort(),
  };
  secrets.push(s.token);
  writeFileSync(s.keyFile, fake.key + '\n');
  chmodSync(s.keyFile, 0o600);
  writeFileSync(s.registry, yamlFor(s));
  chmodSync(s.registry, 0o600);
  writeFileSync(s.contract, 'Answer with the contract JSON.\n');
  mkdirSync(s.tasks);
  writeFileSync(s.agentEnv, `API_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT=${fake.port}\nAPI_SERVER_KEY=${fake.key}\n`);
  chmodSync(s.agentEnv, 0o600);
  s.settings = {
    MCP_PORT: String(s.port), MCP_AUTH_TOKEN: s.token, TASKS_DIR: s.tasks, HERMES_CONTRACT_PATH: s.contract,
    AGENTS_FILE: s.registry, HERMES_ENV_PATH: s.agentEnv, BETA_KEY: betaKey,
  };
  s.writeEnv = (over = {}) => {
    const all = { ...s.settings, ...over };
    writeFileSync(s.envFile, Object.entries(all).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${v}`).join('\n') + '\n');
    chmodSync(s.envFile, 0o600);
  };
  s.writeEnv();
  return s;
}

// Runs doctor; returns {code, out, err, lines: [{tag, text}]} and checks that no secret leaked.
function doctor(s, args = [], env = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(HERMES, ['doctor', '--env-file', s.envFile, '--timeout', '3', ...args],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HOME: s.dir, BETA_KEY: '', ...env } });
    let out = '', err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('error', reject);
    p.on('close', (code) => {
      try {
        noSecrets(out + err);
        assert.doesNotMatch(err, /AddressSanitizer|LeakSanitizer|runtime error:/, err);
      } catch (e) { reject(e); return; }
      const lines = out.split('\n').filter((l) => /^(ok|warn|FAIL) {2}/.test(l))
        .map((l) => ({ tag: l.slice(0, 4).trim(), text: l.slice(6) }));
      resolve({ code, out, err, lines });
    });
  });
}

// Not a secret, nor any 12-character piece of one.
function noSecrets(text) {
  for (const sec of secrets) {
    for (let i = 0; i + 12 <= sec.length; i++)
      assert.ok(!text.includes(sec.slice(i, i + 12)), `a secret leaked into doctor's output:\n${text}`);
  }
}

// The one line matching re; asserts its tag.
function line(r, re, tag) {
  const found = r.lines.filter((l) => re.test(l.text));
  assert.equal(found.length, 1, `one line matching ${re}:\n${r.out}`);
  assert.equal(found[0].tag, tag, `${re} should be ${tag}:\n${r.out}`);
  return found[0].text;
}

const fails = (r) => r.lines.filter((l) => l.tag === 'FAIL');

// Breaks one thing in a good setup: doctor exits 1, that line FAILs with the fix, nothing else does.
async function broken(s, re, fix, args = [], env = {}) {
  const r = await doctor(s, args, env);
  assert.equal(r.code, 1, r.out);
  const text = line(r, re, 'FAIL');
  assert.match(text, fix);
  assert.equal(fails(r).length, 1, `only that check fails:\n${r.out}`);
  return r;
}

test('a good setup: every check ok, exit 0', async () => {
  const s = await setup();
  try {
    const r = await doctor(s);
    assert.equal(r.code, 0, r.out + r.err);
    assert.equal(r.err, '');
    for (const l of r.lines) assert.equal(l.tag, 'ok', l.text);
    line(r, new RegExp(`^env file ${s.envFile} \\(mode 600\\)`), 'ok');
    line(r, /^MCP_AUTH_TOKEN is set/, 'ok');
    line(r, /^settings valid/, 'ok');
    line(r, /^TASKS_DIR .* is writable/, 'ok');
    line(r, /^contract file .*contract\.md \(31 bytes\)/, 'ok');
    line(r, /^agents registry .*: 2 agents, default alpha/, 'ok');
    line(r, /^agent env file /, 'ok');
    line(r, /^agent alpha: key from key_file/, 'ok');
    line(r, /^agent alpha at .*\/health ok, \/v1\/models ok with its key \(1 model\)/, 'ok');
    line(r, /^agent beta: key from BETA_KEY in /, 'ok');
    line(r, /^agent beta at .*\/p\/beta: \/health ok, \/v1\/models ok/, 'ok');
    line(r, new RegExp(`^port 127\\.0\\.0\\.1:${s.port} is free`), 'ok');
    assert.equal(r.lines.length, 12);
    assert.match(r.out, /doctor: 12 ok, 0 warnings, 0 failed\n$/);
    // The probes really reached the agent, with the right keys.
    const got = fake.received().filter((q) => q.path.endsWith('/v1/models'));
    assert.ok(got.some((q) => q.path === '/v1/models' && q.headers.authorization_ok));
    assert.ok(got.some((q) => q.path === '/p/beta/v1/models' && q.headers.authorization_ok));
    // Doctor left nothing behind in TASKS_DIR.
    assert.deepEqual((await import('node:fs')).readdirSync(s.tasks), []);
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('no registry: the default agent from HERMES_ENV_PATH is checked and probed', async () => {
  const s = await setup();
  try {
    unlinkSync(s.registry);
    s.writeEnv({ AGENTS_FILE: undefined });
    let r = await doctor(s);
    assert.equal(r.code, 0, r.out);
    line(r, /^no agents registry \(.*\.hermes\/agents\.yaml does not exist\)/, 'ok');
    line(r, /^agent env file .* \(API_SERVER_KEY set\)/, 'ok');
    line(r, /^agent hermes \(default\): key from API_SERVER_KEY/, 'ok');
    line(r, /^agent hermes at http:\/\/127\.0\.0\.1:\d+: \/health ok, \/v1\/models ok/, 'ok');
    // The agent rejects another key.
    const wrong = 'wrong-' + randomBytes(16).toString('hex');
    secrets.push(wrong);
    writeFileSync(s.agentEnv, `API_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT=${fake.port}\nAPI_SERVER_KEY=${wrong}\n`);
    r = await broken(s, /^agent hermes at .* rejected the key/, /HTTP 401 .*check API_SERVER_KEY in /);
    // No key at all.
    writeFileSync(s.agentEnv, `API_SERVER_PORT=${fake.port}\n`);
    r = await doctor(s);
    assert.equal(r.code, 1);
    line(r, /^agent hermes \(default\): no API_SERVER_KEY in /, 'FAIL');
    line(r, /^agent env file .* has no API_SERVER_KEY/, 'warn');
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('env file missing: FAIL, create it with token gen', async () => {
  const s = await setup();
  try {
    unlinkSync(s.envFile);
    const r = await doctor(s);
    assert.equal(r.code, 1);
    assert.match(line(r, /^env file /, 'FAIL'), /not found: create it with: hermes-mcp token gen --env-file /);
    assert.match(line(r, /MCP_AUTH_TOKEN/, 'FAIL'), /token gen/);
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('env file mode 644: FAIL, chmod 600', async () => {
  const s = await setup();
  try {
    chmodSync(s.envFile, 0o644);
    await broken(s, /^env file /, new RegExp(`mode 644, readable by others: run chmod 600 ${s.envFile}`));
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('token not 64 hex: FAIL, token gen; the bad token is not printed either', async () => {
  const s = await setup();
  try {
    const bad = 'notreallyhex-' + randomBytes(8).toString('hex');
    secrets.push(bad);
    s.writeEnv({ MCP_AUTH_TOKEN: bad });
    await broken(s, /MCP_AUTH_TOKEN/, /not 64 hexadecimal characters: run hermes-mcp token gen --env-file /);
    s.writeEnv({ MCP_AUTH_TOKEN: undefined });
    await broken(s, /MCP_AUTH_TOKEN/, /^no MCP_AUTH_TOKEN in .*: run hermes-mcp token gen/);
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('an invalid setting: FAIL naming it; the files are still checked', async () => {
  const s = await setup();
  try {
    s.writeEnv({ MCP_PORT: '99999' });
    const r = await doctor(s);
    assert.equal(r.code, 1);
    assert.match(line(r, /^settings in /, 'FAIL'), /MCP_PORT must be a port number/);
    line(r, /^port not checked: fix the settings first/, 'warn');
    line(r, /^contract file /, 'ok');
    line(r, /^agent alpha at .*\/v1\/models ok/, 'ok');
    assert.equal(fails(r).length, 1);
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('agent env file missing or unreadable: FAIL, fix HERMES_ENV_PATH', async () => {
  const s = await setup();
  try {
    s.writeEnv({ HERMES_ENV_PATH: join(s.dir, 'nope.env') });
    await broken(s, /^agent env file/, /cannot open .*nope\.env: No such file or directory: fix HERMES_ENV_PATH in /);
    s.writeEnv({ HERMES_ENV_PATH: s.dir }); // a directory cannot be read as a file, even by root
    await broken(s, /^agent env file/, /is not a regular file: fix HERMES_ENV_PATH/);
    writeFileSync(s.agentEnv, 'this is not KEY=VALUE\n');
    s.writeEnv();
    await broken(s, /^agent env file/, /line 1: expected KEY=VALUE/);
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('contract file missing or not text: FAIL, fix it or unset HERMES_CONTRACT_PATH', async () => {
  const s = await setup();
  try {
    unlinkSync(s.contract);
    await broken(s, /^contract file/, /No such file or directory: fix the path, or unset HERMES_CONTRACT_PATH/);
    writeFileSync(s.contract, Buffer.from([0x61, 0xff, 0xfe, 0x0a]));
    await broken(s, /^contract file/, /not UTF-8 text.*unset HERMES_CONTRACT_PATH/);
    writeFileSync(s.contract, 'x'.repeat(256 * 1024 + 1));
    await broken(s, /^contract file/, /larger than 256 KiB/);
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('TASKS_DIR not writable: FAIL, fix it or set TASKS_DIR', async () => {
  const s = await setup();
  try {
    const file = join(s.dir, 'a-file');
    writeFileSync(file, '');
    // Neither root nor anyone can create a directory under a regular file.
    s.writeEnv({ TASKS_DIR: join(file, 'tasks') });
    await broken(s, /^TASKS_DIR/, /Not a directory: set TASKS_DIR to a directory serve can write/);
    s.writeEnv({ TASKS_DIR: file });
    await broken(s, /^TASKS_DIR/, /is not a directory: point TASKS_DIR at a directory/);
    // Not there yet, under a writable parent: serve will create it.
    s.writeEnv({ TASKS_DIR: join(s.dir, 'new', 'tasks') });
    let r = await doctor(s);
    assert.equal(r.code, 0, r.out);
    line(r, /^TASKS_DIR .*new\/tasks does not exist yet; serve creates it/, 'ok');
    if (process.getuid() !== 0) { // permissions do not stop root
      s.writeEnv();
      chmodSync(s.tasks, 0o500);
      await broken(s, /^TASKS_DIR/, /is not writable \(Permission denied\)/);
      chmodSync(s.tasks, 0o700);
    }
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('registry invalid YAML: FAIL with the line; serve would use the default agent', async () => {
  const s = await setup();
  try {
    writeFileSync(s.registry, 'agents:\n  - name: x\n    base_url: [unclosed\n');
    const r = await broken(s, /^agents registry/, /line \d+: .*serve refuses it and uses the default agent: fix the file/);
    // Then doctor checks the agent serve falls back to.
    line(r, /^agent hermes at .*\/v1\/models ok/, 'ok');
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('registry mode 644: FAIL, chmod 600', async () => {
  const s = await setup();
  try {
    chmodSync(s.registry, 0o644);
    await broken(s, /^agents registry/, new RegExp(`mode 644 and serve refuses it: run chmod 600 ${s.registry}`));
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('registry base_url not allowed: FAIL naming the agent and the rule', async () => {
  const s = await setup();
  try {
    writeFileSync(s.registry, yamlFor(s, 'http://8.8.8.8'));
    await broken(s, /^agents registry/, /agent 'alpha': base_url must be http\(s\) on loopback or Tailscale/);
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('key_env naming an unset variable: FAIL, add it to the env file', async () => {
  const s = await setup();
  try {
    writeFileSync(s.registry, yamlFor(s, undefined, 'NOPE_UNSET_KEY'));
    const r = await broken(s, /^agent beta: key_env/, /NOPE_UNSET_KEY is not set, neither in this environment nor in .*: add NOPE_UNSET_KEY=/);
    line(r, /^agent beta at .*\/health ok; \/v1\/models not tried without a key/, 'warn');
    // From the process environment it is found (and said so).
    const ok = await doctor(s, [], { NOPE_UNSET_KEY: betaKey });
    assert.equal(ok.code, 0, ok.out);
    line(ok, /^agent beta: key from \$NOPE_UNSET_KEY in this shell's environment/, 'ok');
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('key_file readable by others or missing: FAIL with the fix', async () => {
  const s = await setup();
  try {
    chmodSync(s.keyFile, 0o644);
    await broken(s, /^agent alpha: key_file/, /is readable by others; chmod 600 it/);
    unlinkSync(s.keyFile);
    await broken(s, /^agent alpha: key_file/, /cannot be read: No such file or directory: fix key_file in /);
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('port in use by another program: FAIL; by a hermes-mcp: warn, exit 0', async () => {
  const s = await setup();
  // Another HTTP server: it answers /health, but not as hermes-mcp.
  const conns = new Set();
  const other = net.createServer((c) => {
    conns.add(c);
    c.resume();
    c.end('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{"status":"ok"}');
  });
  await new Promise((res) => other.listen(s.port, '127.0.0.1', res));
  try {
    await broken(s, /^port /, new RegExp(`127\\.0\\.0\\.1:${s.port} is in use by another program: stop it, or set MCP_PORT in `));
  } finally {
    for (const c of conns) c.destroy();
    await new Promise((res) => other.close(res));
  }
  const srv = await startHermes();
  try {
    s.writeEnv({ MCP_PORT: String(srv.port) });
    const r = await doctor(s);
    assert.equal(r.code, 0, r.out);
    assert.match(line(r, /^port /, 'warn'), /a hermes-mcp \(version .+\) is already listening there/);
  } finally {
    await srv.stop();
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('agent down: FAIL connection refused, start it or fix base_url; --no-probe skips it', async () => {
  const s = await setup();
  try {
    const closed = await freePort();
    writeFileSync(s.registry, yamlFor(s, `http://127.0.0.1:${closed}`));
    await broken(s, /^agent alpha at /, /connection refused: start the agent or fix its base_url in /);
    const r = await doctor(s, ['--no-probe']);
    assert.equal(r.code, 0, r.out);
    assert.ok(!r.lines.some((l) => / at http/.test(l.text)), 'no probe lines');
    assert.match(r.out, /\(agents not probed: --no-probe\)/);
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('agent rejecting the key: FAIL 401, check key_file', async () => {
  const s = await setup();
  try {
    const other = 'other-' + randomBytes(16).toString('hex');
    secrets.push(other);
    writeFileSync(s.keyFile, other + '\n');
    await broken(s, /^agent alpha at .* rejected the key/, /HTTP 401 on \/v1\/models\): check key_file .*alpha\.key against the agent's API_SERVER_KEY/);
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('a message that would quote a secret (here a path named after a key) masks it', async () => {
  const s = await setup();
  try {
    s.writeEnv({ HERMES_CONTRACT_PATH: join(s.dir, `${fake.key}.md`) });
    const r = await broken(s, /^contract file/, /No such file or directory/);
    assert.match(line(r, /^contract file/, 'FAIL'), new RegExp(`^contract file ${s.dir}/\\[secret\\]\\.md \\(HERMES_CONTRACT_PATH\\)`));
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('doctor --help documents the exit codes; bad arguments exit 2', async () => {
  const run = (args) => new Promise((res) => {
    const p = spawn(HERMES, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('close', (code) => res({ code, out, err }));
  });
  for (const args of [['doctor', '--help'], ['help', 'doctor']]) {
    const r = await run(args);
    assert.equal(r.code, 0);
    assert.match(r.out, /^usage: hermes-mcp doctor /);
    assert.match(r.out, /Exit codes: 0 nothing failed \(warnings allowed\), 1 a check failed, 2 usage error/);
  }
  assert.match((await run(['help'])).out, /doctor \[--env-file FILE\]/);
  let r = await run(['doctor', '--frobnicate']);
  assert.equal(r.code, 2);
  assert.match(r.err, /unknown argument '--frobnicate'/);
  r = await run(['doctor', '--timeout', 'soon']);
  assert.equal(r.code, 2);
  assert.match(r.err, /--timeout takes 1-300 seconds/);
});

test('a FIFO for the contract, the registry or the env file: FAIL not a regular file, never a hang', async () => {
  const s = await setup();
  try {
    for (const [file, re] of [[s.contract, /^contract file .* is not a regular file/], [s.registry, /^agents registry .*not a regular file/],
      [s.envFile, /^env file .* is not a regular file/]]) {
      unlinkSync(file);
      assert.equal(spawnSync('mkfifo', ['-m', '600', file]).status, 0);
      // Opening a FIFO for reading waits for a writer: doctor must not.
      const r = spawnSync(HERMES, ['doctor', '--env-file', s.envFile, '--no-probe'],
        { encoding: 'utf8', timeout: 10000, env: { ...process.env, HOME: s.dir, BETA_KEY: '' } });
      assert.equal(r.signal, null, `doctor hung on the FIFO ${file}`);
      assert.equal(r.status, 1, r.stdout);
      assert.ok(r.stdout.split('\n').some((l) => l.startsWith('FAIL') && re.test(l.slice(6))), r.stdout);
      unlinkSync(file);
    }
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});
