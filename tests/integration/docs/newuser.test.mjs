// The first ten minutes of a new user, run as a test so the files and commands a user copies
// cannot drift: .env.example against the keys of the config table (configtab.c),
// contrib/agents.example.yaml through the server's own registry loader (doctor), the tunnel
// helper, dev.sh, and the README's client commands (curl, mcp-remote) against a real server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, HERMES, freePort } from '../../lib/lib.mjs';

const KEY_LINE = /^# ?([A-Z][A-Z0-9_]*)=(.*)$|^([A-Z][A-Z0-9_]*)=(.*)$/;

function exampleKeys(text) {
  const keys = new Map();
  for (const line of text.split('\n')) {
    const m = line.match(KEY_LINE);
    if (m) keys.set(m[1] || m[3], m[2] ?? m[4]);
  }
  return keys;
}

// Spawns `hermes-mcp serve` and resolves with the port of its listening line.
function serve(envFile, env) {
  const proc = spawn(HERMES, ['serve', '--env-file', envFile], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '', err = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/[^\s/]+:(\d+)/);
      if (m) resolve({ proc, port: Number(m[1]), err: () => err });
    });
    proc.stderr.on('data', (d) => { err += d; });
    proc.on('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

function stop(proc) {
  return new Promise((resolve) => {
    if (proc.exitCode !== null) return resolve(proc.exitCode);
    proc.on('exit', (code) => resolve(code));
    proc.kill('SIGTERM');
  });
}

test('.env.example names every key of the config table, and only those; no secret; its values load', async () => {
  const text = readFileSync(join(ROOT, '.env.example'), 'utf8');
  const src = readFileSync(join(ROOT, 'src/app/configtab.c'), 'utf8');
  const read = new Set([...src.matchAll(/\{\.key = "([A-Z0-9_]+)"/g)].map((m) => m[1]));
  assert.ok(read.size > 15, `config.c keys found: ${[...read]}`);
  const keys = exampleKeys(text);
  assert.deepEqual([...keys.keys()].sort(), [...read].sort());
  assert.doesNotMatch(text, /[0-9a-fA-F]{32}/, 'no token or key in the example');
  assert.equal(keys.get('MCP_AUTH_TOKEN'), '', 'the token is left to token gen');

  // Every value as written, uncommented, is accepted by serve (paths under a scratch $HOME).
  const home = mkdtempSync(join(tmpdir(), 'hm-newuser-home-'));
  try {
    mkdirSync(join(home, '.hermes'));
    writeFileSync(join(home, '.hermes/contract.md'), '# Contract\nAnswer briefly.\n');
    writeFileSync(join(home, '.hermes/gateway.yaml'), 'upstreams: {}\n', { mode: 0o600 });
    const envFile = join(home, 'env');
    const lines = [...keys].filter(([k]) => k !== 'MCP_AUTH_TOKEN')
      .map(([k, v]) => (k === 'MCP_PORT' ? 'MCP_PORT=0' : `${k}=${v}`));
    writeFileSync(envFile, lines.join('\n') + '\n', { mode: 0o600 });
    const gen = spawnSync(HERMES, ['token', 'gen', '--env-file', envFile], { encoding: 'utf8' });
    assert.equal(gen.status, 0, gen.stderr);
    const env = { ...process.env, HOME: home };
    const s = await serve(envFile, env);
    try {
      const h = await (await fetch(`http://127.0.0.1:${s.port}/health`)).json();
      assert.equal(h.status, 'ok');
    } finally {
      assert.equal(await stop(s.proc), 0, s.err());
    }
    // $HOME in the example's path values is expanded: doctor checks the tasks directory there.
    const d = spawnSync(HERMES, ['doctor', '--no-probe', '--env-file', envFile], { encoding: 'utf8', env });
    assert.ok(d.stdout.includes(`${home}/.local/share/hermes-mcp/tasks`), d.stdout);
    assert.match(d.stdout, /settings valid/, d.stdout);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('contrib/agents.example.yaml parses with the server\'s registry loader (doctor)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-newuser-reg-'));
  try {
    const reg = join(dir, 'agents.yaml');
    copyFileSync(join(ROOT, 'contrib/agents.example.yaml'), reg);
    chmodSync(reg, 0o600);
    const envFile = join(dir, 'env');
    writeFileSync(envFile, `AGENTS_FILE=${reg}\nTASKS_DIR=${dir}/tasks\nMCP_PORT=0\n`, { mode: 0o600 });
    const r = spawnSync(HERMES, ['doctor', '--no-probe', '--env-file', envFile],
      { encoding: 'utf8', env: { ...process.env, BETA_API_KEY: 'x'.repeat(24) } });
    assert.match(r.stdout, /^ok +agents registry .*agents\.yaml: 2 agents, default alpha/m, r.stdout);
    assert.doesNotMatch(r.stdout, /registry.*(FAIL|invalid)/i, r.stdout);
    assert.match(r.stdout, /\balpha\b[^\n]*key_file/, 'the alpha agent is read with its key_file');
    assert.match(r.stdout, /\bbeta\b[^\n]*BETA_API_KEY/, 'the beta agent is read with its key_env');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// A fake cloudflared on PATH: records its arguments, prints what the real one prints around a
// quick tunnel's URL, then exits with FAKE_CF_EXIT or waits to be stopped.
function fakeCloudflared(dir) {
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'cloudflared'), `#!/bin/sh
printf '%s\\n' "$@" > "${dir}/args"
echo "2026-12-04T02:00:00Z INF Requesting new quick Tunnel on trycloudflare.com..."
if [ -n "$FAKE_CF_URL" ]; then
  echo "2026-12-04T02:00:01Z INF +--------------------------------------------------------------------------------------------+"
  echo "2026-12-04T02:00:01Z INF |  Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):  |"
  echo "2026-12-04T02:00:01Z INF |  $FAKE_CF_URL                                          |"
fi
[ -z "$FAKE_CF_WAIT" ] || { trap 'echo stopped > "${dir}/stopped"; exit 0' TERM; while :; do sleep 0.05; done; }
exit \${FAKE_CF_EXIT:-0}
`, { mode: 0o755 });
  return bin;
}

function tunnelEnv(bin, extra) {
  return { ...process.env, PATH: `${bin}:${process.env.PATH}`, ...extra };
}

test('scripts/tunnel.sh writes the quick tunnel URL to PUBLIC_URL beside the env file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-newuser-tun-'));
  try {
    const bin = fakeCloudflared(dir);
    const envFile = join(dir, 'env');
    writeFileSync(envFile, 'MCP_AUTH_TOKEN=' + 'ab'.repeat(32) + '\nMCP_PORT=9123\n', { mode: 0o600 });
    const url = 'https://able-fox-12-quiet.trycloudflare.com';
    const r = spawnSync(join(ROOT, 'scripts/tunnel.sh'), ['--env-file', envFile],
      { encoding: 'utf8', env: tunnelEnv(bin, { FAKE_CF_URL: url }) });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(readFileSync(join(dir, 'PUBLIC_URL'), 'utf8'), `${url}\n`);
    assert.deepEqual(readFileSync(join(dir, 'args'), 'utf8').trim().split('\n'),
      ['tunnel', '--no-autoupdate', '--url', 'http://127.0.0.1:9123']);
    assert.match(r.stderr, /Your quick Tunnel has been created/, 'cloudflared output passed through');
    assert.ok(r.stderr.includes(`${url}/mcp`), 'names the MCP endpoint');
    assert.ok(!r.stderr.includes('ab'.repeat(32)) && !r.stdout.includes('ab'.repeat(32)), 'never the token');
    assert.deepEqual(spawnSync('ls', [dir], { encoding: 'utf8' }).stdout.split('\n').filter((f) => f.includes('tmp')), []);

    // No URL printed: exit 1 with a reason; cloudflared's failure status is passed on.
    rmSync(join(dir, 'PUBLIC_URL'));
    const none = spawnSync(join(ROOT, 'scripts/tunnel.sh'), ['--env-file', envFile],
      { encoding: 'utf8', env: tunnelEnv(bin, {}) });
    assert.equal(none.status, 1);
    assert.match(none.stderr, /without printing a trycloudflare\.com URL/);
    const failed = spawnSync(join(ROOT, 'scripts/tunnel.sh'), ['--env-file', envFile],
      { encoding: 'utf8', env: tunnelEnv(bin, { FAKE_CF_EXIT: '7' }) });
    assert.equal(failed.status, 7);

    // As the systemd unit runs it: --origin and --url-file, no env file at all (the unit makes
    // it inaccessible; here the default .env does not exist in the working directory).
    const unit = spawnSync(join(ROOT, 'scripts/tunnel.sh'), ['--origin', 'http://127.0.0.1:9555', '--url-file', join(dir, 'u')],
      { encoding: 'utf8', cwd: dir, env: tunnelEnv(bin, { FAKE_CF_URL: url }) });
    assert.equal(unit.status, 0, unit.stderr);
    assert.equal(readFileSync(join(dir, 'u'), 'utf8'), `${url}\n`);
    const noOrigin = spawnSync(join(ROOT, 'scripts/tunnel.sh'), ['--env-file', join(dir, 'missing')], { encoding: 'utf8', env: tunnelEnv(bin, { FAKE_CF_URL: url }) });
    assert.equal(noOrigin.status, 2);
    assert.match(noOrigin.stderr, /cannot read the env file .*--origin URL/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('scripts/tunnel.sh: the URL is written while cloudflared runs; a stop reaches cloudflared', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-newuser-tun-'));
  try {
    const bin = fakeCloudflared(dir);
    const envFile = join(dir, 'env');
    writeFileSync(envFile, 'MCP_PORT=8765\n', { mode: 0o600 });
    const url = 'https://b-c-d.trycloudflare.com';
    const p = spawn(join(ROOT, 'scripts/tunnel.sh'), ['--env-file', envFile],
      { env: tunnelEnv(bin, { FAKE_CF_URL: url, FAKE_CF_WAIT: '1' }), stdio: 'ignore' });
    const exited = new Promise((resolve) => p.on('exit', (code) => resolve(code)));
    let text = '';
    for (let i = 0; i < 200 && !text; i++) {
      try { text = readFileSync(join(dir, 'PUBLIC_URL'), 'utf8'); } catch { await new Promise((r) => setTimeout(r, 25)); }
    }
    assert.equal(text, `${url}\n`);
    assert.equal(p.exitCode, null, 'still running with cloudflared');
    p.kill('SIGTERM');
    assert.equal(await exited, 0);
    assert.equal(readFileSync(join(dir, 'stopped'), 'utf8'), 'stopped\n', 'cloudflared was stopped');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('dev.sh: a busy port is said first, naming HERMES_MCP_PORT, before any banner', async () => {
  const busy = net.createServer().listen(0, '127.0.0.1');
  await new Promise((r) => busy.on('listening', r));
  const dir = mkdtempSync(join(tmpdir(), 'hm-newuser-dev-'));
  try {
    const r = spawnSync(join(ROOT, 'scripts/dev.sh'), [], { encoding: 'utf8',
      env: { ...process.env, HERMES_MCP_PORT: String(busy.address().port), HERMES_MCP_DEV_DIR: dir } });
    assert.equal(r.status, 1);
    assert.match(r.stderr, new RegExp(`port ${busy.address().port} .*already in use`));
    assert.match(r.stderr, /HERMES_MCP_PORT=\d+ scripts\/dev\.sh/);
    assert.doesNotMatch(r.stdout + r.stderr, /MCP endpoint|deps:|make/);
  } finally {
    busy.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('dev.sh prints the token export and first calls that work as printed (curl, smoke)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-newuser-dev-'));
  const port = await freePort();
  const p = spawn(join(ROOT, 'scripts/dev.sh'), [], { detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, HERMES_MCP_PORT: String(port), HERMES_MCP_DEV_DIR: dir, HERMES_MCP_DEV_NO_BUILD: '1' } });
  let out = '', err = '';
  p.stderr.on('data', (d) => { err += d; });
  try {
    await new Promise((resolve, reject) => {
      p.stdout.on('data', (d) => { out += d; if (/listening on http/.test(out)) resolve(); });
      p.on('exit', (code) => reject(new Error(`dev.sh exited ${code}: ${out}\n${err}`)));
    });
    const token = readFileSync(join(dir, 'hermes-mcp.env'), 'utf8').match(/^MCP_AUTH_TOKEN=(\w+)/m)[1];
    assert.ok(!out.includes(token) && !err.includes(token), 'the token is never printed');
    const block = out.split('In another shell, from ')[1];
    const cwd = block.split(':\n')[0];
    const cmds = block.split(':\n')[1].split('\n\n')[0].replace(/\\\n/g, ' ').split('\n').map((l) => l.trim().replace(/ +/g, ' '));
    assert.match(cmds[0], /^export HERMES_MCP_TOKEN=/);
    const run = (cmd) => spawnSync('bash', ['-c', `${cmds[0]}\n${cmd}`], { cwd, encoding: 'utf8', timeout: 60000 });
    const curl = cmds.find((c) => c.startsWith('curl '));
    const res = JSON.parse(run(curl).stdout);
    assert.equal(res.result.isError, false);
    assert.equal(res.result.structuredContent.agents[0].available, true, 'the demo agent answers');
    const smoke = cmds.find((c) => c.startsWith('build/hermes-mcp smoke '));
    const s = run(smoke);
    assert.equal(s.status, 0, s.stdout + s.stderr);
    // The Inspector line is the first-call block's (which the next test runs with the system's npx).
    const insp = cmds.find((c) => c.includes('@modelcontextprotocol/inspector'));
    assert.equal(insp?.replaceAll(`127.0.0.1:${port}`, '127.0.0.1:8765'), readmeInspector(), cmds.join('\n'));
    // The export line reads the token without printing it.
    assert.equal(run('printf %s "$HERMES_MCP_TOKEN"').stdout, token);
  } finally {
    process.kill(-p.pid, 'SIGTERM');
    await new Promise((r) => (p.exitCode !== null ? r() : p.on('exit', r)));
    rmSync(dir, { recursive: true, force: true });
  }
});

// The first-call block's Inspector command, as one line.
function readmeInspector() {
  return docBlock(GETTING_STARTED, 'sh', /export HERMES_MCP_TOKEN=/).replace(/\\\n/g, ' ').split('\n')
    .map((l) => l.trim().replace(/ +/g, ' ')).find((c) => c.includes('@modelcontextprotocol/inspector'));
}

// The system's node and npx first, as a user's shell has them (not the Node 22 in tools/ that
// runs these tests): Debian 12's Node 20 must run the printed line.
const SYSTEM_PATH = `/usr/local/bin:/usr/bin:/bin:${process.env.PATH}`;

// Where the client commands these tests run are printed (paths from the checkout's root): the
// first-call block (which the README prints too) and the Claude Desktop entry.
const GETTING_STARTED = 'docs/getting-started.md';
const CLIENTS = 'docs/guides/clients.md';

// A page's blocks: the first fenced block of `lang` whose text matches `marker`.
function docBlock(page, lang, marker) {
  const text = readFileSync(join(ROOT, page), 'utf8');
  const re = new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g');
  for (const m of text.matchAll(re)) if (marker.test(m[1])) return m[1];
  throw new Error(`${page} has no ${lang} block matching ${marker}`);
}

// A checkout-like directory: .dev/hermes-mcp.env (as dev.sh writes it) and build/hermes-mcp,
// with a server on it and the fake agent behind it.
async function devLikeServer() {
  const { startFake, agentEnv } = await import('../../lib/lib.mjs');
  const fake = await startFake();
  const dir = mkdtempSync(join(tmpdir(), 'hm-newuser-co-'));
  mkdirSync(join(dir, '.dev'), { mode: 0o700 });
  mkdirSync(join(dir, 'build'));
  spawnSync('ln', ['-s', HERMES, join(dir, 'build/hermes-mcp')]);
  const envFile = join(dir, '.dev/hermes-mcp.env');
  writeFileSync(envFile, `MCP_PORT=0\nHERMES_ENV_PATH=${agentEnv(fake)}\nAGENTS_FILE=${dir}/none.yaml\n`, { mode: 0o600 });
  assert.equal(spawnSync(HERMES, ['token', 'gen', '--env-file', envFile]).status, 0);
  const token = readFileSync(envFile, 'utf8').match(/^MCP_AUTH_TOKEN=(\w+)/m)[1];
  const s = await serve(envFile, process.env);
  return { dir, port: s.port, token, url: `http://127.0.0.1:${s.port}/mcp`,
    async close() {
      const code = await stop(s.proc);
      await fake.stop();
      rmSync(dir, { recursive: true, force: true });
      assert.equal(code, 0, `serve exit (a sanitizer report exits 86): ${s.err()}`);
    } };
}

test('the README prints the first-call block of getting-started.md, unchanged', () => {
  const marker = /export HERMES_MCP_TOKEN=/;
  assert.equal(docBlock('README.md', 'sh', marker), docBlock(GETTING_STARTED, 'sh', marker));
});

test('getting-started: the first-call block runs as printed with the system\'s node and npx (curl, Inspector, smoke)', async () => {
  const block = docBlock(GETTING_STARTED, 'sh', /export HERMES_MCP_TOKEN=/);
  const srv = await devLikeServer();
  try {
    // Verbatim: only the port is ours.
    const cmds = block.replace(/\\\n/g, ' ').split('\n').filter(Boolean)
      .map((c) => c.replaceAll('127.0.0.1:8765', `127.0.0.1:${srv.port}`));
    assert.equal(cmds.length, 4, block);
    const env = { ...process.env, PATH: SYSTEM_PATH };
    const run = (cmd) => spawnSync('bash', ['-c', `${cmds[0]}\n${cmd}`], { cwd: srv.dir, encoding: 'utf8', timeout: 180000, env });
    const node = spawnSync('node', ['--version'], { env, encoding: 'utf8' }).stdout.trim();
    assert.ok(spawnSync('sh', ['-c', 'command -v npx'], { env, encoding: 'utf8' }).stdout.startsWith('/usr/'), 'the system\'s npx');
    assert.equal(run('printf %s "$HERMES_MCP_TOKEN"').stdout, srv.token, 'the export reads the token');
    const curl = run(cmds[1]);
    assert.deepEqual(JSON.parse(curl.stdout).result.tools.map((t) => t.name).sort(),
      ['hermes_cancel', 'hermes_files', 'hermes_reset', 'hermes_result', 'hermes_status', 'hermes_task', 'list_agents',
        'whoami']);
    const logs = join(process.env.HOME, '.npm/_logs');
    const logsBefore = new Set(existsSync(logs) ? readdirSync(logs) : []);
    const insp = run(cmds[2]);
    assert.equal(insp.status, 0, `node ${node}: ${insp.stdout}${insp.stderr}`);
    assert.ok(JSON.parse(insp.stdout).tools.some((t) => t.name === 'hermes_task'), insp.stdout);
    // npm's debug log records the whole npx command line: the token must not be in it.
    const fresh = (existsSync(logs) ? readdirSync(logs) : []).filter((f) => !logsBefore.has(f));
    for (const f of fresh) assert.ok(!readFileSync(join(logs, f), 'utf8').includes(srv.token), `token in ${f}`);
    const smoke = run(cmds[3]);
    assert.equal(smoke.status, 0, smoke.stdout + smoke.stderr);
    for (const r of [curl, insp, smoke]) assert.ok(!(r.stdout + r.stderr).includes(srv.token), 'no token printed');
  } finally {
    await srv.close();
  }
});

test('clients: the Claude Desktop entry (mcp-remote, header from env) lists and calls tools through our server', async () => {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const entry = JSON.parse(docBlock(CLIENTS, 'json', /mcp-remote/)).mcpServers.hermes;
  assert.equal(entry.command, 'npx');
  assert.deepEqual(entry.args.slice(0, 2), ['-y', 'mcp-remote']);
  const srv = await devLikeServer();
  const home = mkdtempSync(join(tmpdir(), 'hm-newuser-desk-'));
  try {
    // As Claude Desktop starts it: the args as written (the URL swapped for ours), the env block
    // with the real token; npx replaced by the installed package.
    const args = entry.args.slice(2).map((a) => (a === 'https://mcp.example.com/mcp' ? srv.url : a));
    assert.ok(args.includes(srv.url), 'the printed URL was replaced');
    assert.ok(!args.join(' ').includes(srv.token));
    const env = Object.fromEntries(Object.entries(entry.env).map(([k, v]) => [k, v.replace('<MCP_AUTH_TOKEN>', srv.token)]));
    const proxy = join(ROOT, 'tools/mcp-remote/node_modules/mcp-remote/dist/proxy.js');
    const transport = new StdioClientTransport({ command: process.execPath, args: [proxy, ...args],
      env: { PATH: process.env.PATH, HOME: home, MCP_REMOTE_CONFIG_DIR: join(home, '.mcp-auth'), ...env },
      stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (d) => { stderr += d; });
    const client = new Client({ name: 'claude-desktop-like', version: '1' });
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'hermes_task'), JSON.stringify(tools.map((t) => t.name)));
      const r = await client.callTool({ name: 'hermes_task', arguments: { task: 'say hello', mode: 'sync' } });
      assert.equal(r.isError, false, JSON.stringify(r));
      assert.equal(r.structuredContent.status, 'completed', JSON.stringify(r.structuredContent));
    } catch (e) {
      throw new Error(`${e.message}\nmcp-remote stderr:\n${stderr}`);
    } finally {
      await client.close();
    }
    assert.ok(!stderr.includes(srv.token), 'mcp-remote never printed the token');
  } finally {
    await srv.close();
    rmSync(home, { recursive: true, force: true });
  }
});

test('install-systemd expands $HOME in TASKS_DIR and AUDIT_LOG_PATH; its tunnel unit runs tunnel.sh', () => {
  const home = mkdtempSync(join(tmpdir(), 'hm-newuser-inst-'));
  try {
    const cfg = join(home, 'config');
    mkdirSync(join(cfg, 'hermes-mcp'), { recursive: true });
    const envFile = join(cfg, 'hermes-mcp/env');
    writeFileSync(envFile, 'MCP_PORT=9877\nTASKS_DIR=$HOME/data/tasks\nAUDIT_LOG_PATH="${HOME}/logs/audit.jsonl"\n', { mode: 0o600 });
    const r = spawnSync(join(ROOT, 'scripts/install-systemd'), ['--no-enable', '--env-file', envFile],
      { encoding: 'utf8', env: { ...process.env, XDG_CONFIG_HOME: cfg, HOME: home } });
    assert.equal(r.status, 0, r.stderr);
    const unit = readFileSync(join(cfg, 'systemd/user/hermes-mcp.service'), 'utf8');
    const rw = unit.split('\n').find((l) => l.startsWith('ReadWritePaths=')).slice('ReadWritePaths='.length).split(' ');
    assert.ok(rw.includes(join(home, 'data/tasks')), rw.join(' '));
    assert.ok(rw.includes(join(home, 'logs')), rw.join(' '));
    assert.doesNotMatch(unit, /\$\{?HOME/);

    // --tunnel: the rendered unit runs scripts/tunnel.sh, which writes tunnel/PUBLIC_URL beside the env file.
    const bin = fakeCloudflared(home);
    const t = spawnSync(join(ROOT, 'scripts/install-systemd'), ['--no-enable', '--env-file', envFile, '--tunnel', '--cloudflared', join(bin, 'cloudflared')],
      { encoding: 'utf8', env: { ...process.env, XDG_CONFIG_HOME: cfg, HOME: home } });
    assert.equal(t.status, 0, t.stderr);
    const exec = readFileSync(join(cfg, 'systemd/user/hermes-mcp-tunnel.service'), 'utf8').split('\n')
      .find((l) => l.startsWith('ExecStart=')).slice('ExecStart='.length).split(' ');
    const url = 'https://unit-run.trycloudflare.com';
    const run = spawnSync(exec[0], exec.slice(1), { encoding: 'utf8', env: { ...process.env, FAKE_CF_URL: url } });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(readFileSync(join(cfg, 'hermes-mcp/tunnel/PUBLIC_URL'), 'utf8'), `${url}\n`);
    assert.deepEqual(readFileSync(join(home, 'args'), 'utf8').trim().split('\n'),
      ['tunnel', '--no-autoupdate', '--url', 'http://127.0.0.1:9877']);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});
