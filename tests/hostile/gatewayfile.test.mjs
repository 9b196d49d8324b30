// Hostile gateway files (GATEWAY_FILE): serve must refuse to start, and `gateway check` must
// refuse, with one line that names the file, the upstream and the key, never a value; a FIFO
// in place of the file is refused at once (no hang). A good file is accepted by `gateway check`,
// which prints the upstreams and rules but not the values interpolated into them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, chmodSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERMES } from '../lib/lib.mjs';

const SECRET = 'gw-secret-' + 'x'.repeat(24);
const TOKEN = 'a'.repeat(64);

// A fresh directory with an env file naming gw.yaml (written with text and mode).
function setup(yaml, { mode = 0o600, env = {} } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'hm-gw-'));
  const gw = join(dir, 'gw.yaml');
  if (yaml !== null) {
    writeFileSync(gw, yaml);
    chmodSync(gw, mode);
  }
  const lines = { MCP_PORT: '0', MCP_AUTH_TOKEN: TOKEN, GATEWAY_FILE: gw,
    TASKS_DIR: join(dir, 'tasks'), AGENTS_FILE: join(dir, 'agents.yaml'), ...env };
  const envFile = join(dir, 'env');
  writeFileSync(envFile, Object.entries(lines).map(([k, v]) => `${k}=${v}`).join('\n') + '\n');
  chmodSync(envFile, 0o600);
  return { dir, gw, envFile, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

// Runs a command with a deadline, so a stall (a FIFO waited on) fails instead of hanging.
const run = (args, env = {}) => spawnSync(HERMES, args, {
  encoding: 'utf8', timeout: 10000, env: { ...process.env, ...env } });

const refusals = [
  { name: 'unresolved ${VAR} in a header',
    yaml: 'upstreams:\n  ctx:\n    url: http://127.0.0.1:1/mcp\n' +
          `    headers: {Authorization: "Bearer \${NOT_SET_ANYWHERE} ${SECRET}"}\n`,
    want: /upstream ctx, key headers\.Authorization: \$\{NOT_SET_ANYWHERE\} is not set/ },
  { name: 'unresolved ${env:VAR} in env',
    yaml: 'upstreams:\n  ev:\n    command: node\n    env: {K: "${env:ALSO_NOT_SET}"}\n',
    want: /upstream ev, key env\.K: \$\{ALSO_NOT_SET\} is not set/ },
  { name: 'bad upstream name',
    yaml: 'upstreams:\n  Bad.Name:\n    command: node\n',
    want: /upstream name 'Bad\.Name' is not allowed/ },
  { name: 'unknown key (a typo must not expose everything)',
    yaml: 'upstreams:\n  ev:\n    command: node\n    tools: {exlude: [x]}\n',
    want: /upstream ev, key tools\.exlude: is not a known key/ },
  { name: 'mode 644', mode: 0o644,
    yaml: 'upstreams:\n  ev:\n    command: node\n',
    want: /mode 644 lets other users read it/ },
  { name: 'missing file', yaml: null, want: /cannot open it: No such file/ },
];

for (const c of refusals) {
  test(`gateway file refused: ${c.name}`, () => {
    const s = setup(c.yaml, { mode: c.mode, env: { SECRET_VALUE: SECRET } });
    try {
      for (const args of [['serve', '--env-file', s.envFile],
                          ['gateway', 'check', '--env-file', s.envFile]]) {
        const r = run(args);
        const what = args.slice(0, 2).join(' ');
        assert.equal(r.status, args[0] === 'serve' ? 2 : 1, `${what}: exit code\n${r.stderr}`);
        assert.match(r.stderr, new RegExp(`gateway file ${s.gw.replace(/[.]/g, '\\.')}: `), what);
        assert.match(r.stderr, c.want, what);
        assert.ok(!r.stderr.includes(SECRET) && !r.stdout.includes(SECRET), `${what}: no value`);
        assert.doesNotMatch(r.stdout, /listening on/, `${what}: never listens`);
      }
    } finally { s.cleanup(); }
  });
}

test('a FIFO as the gateway file is refused at once', () => {
  const s = setup(null);
  try {
    assert.equal(spawnSync('mkfifo', ['-m', '600', s.gw]).status, 0);
    const t0 = Date.now();
    const r = run(['serve', '--env-file', s.envFile]);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /gateway file .*: it is not a regular file/);
    const c = run(['gateway', 'check', '--env-file', s.envFile]);
    assert.equal(c.status, 1, c.stderr);
    assert.match(c.stderr, /not a regular file/);
    assert.ok(Date.now() - t0 < 8000, 'no wait for a writer');
  } finally { s.cleanup(); }
});

test('gateway check prints the upstreams, rules and defaults, never a value', () => {
  const s = setup('upstreams:\n  everything:\n    command: node\n' +
    '    args: ["server.js", "--token=${SECRET_VALUE}"]\n' +
    '    env: {API_KEY: "${SECRET_VALUE}"}\n' +
    '    tools: {include: ["echo", "get_*"], exclude: ["get_env"]}\n' +
    '  context:\n    url: "http://127.0.0.1:3050/mcp?k=${env:FROM_PROCESS}"\n' +
    '    required: false\n    timeout: 30\n' +
    'bridge_tools: {exclude: [hermes_reset]}\n', { env: { SECRET_VALUE: SECRET } });
  try {
    const r = run(['gateway', 'check', '--env-file', s.envFile], { FROM_PROCESS: SECRET });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /: 2 upstreams/);
    assert.match(r.stdout, /everything: stdio node/);
    assert.match(r.stdout, /env: API_KEY \(values not shown\)/);
    // A placeholder in args ends up in the child's argv (/proc/PID/cmdline): said, never its value.
    assert.match(r.stdout, /\n  warning: upstream everything has a \$\{\.\.\.\} placeholder in args: its value is on the child's command line/);
    assert.doesNotMatch(r.stdout, /upstream context has a \$\{/);
    assert.match(r.stdout, /prefix: "everything__", required: true, timeout: 300 s, connect_timeout: 15 s, max_in_flight: 16/);
    assert.match(r.stdout, /include: echo, get_\*\n\s+exclude: get_env/);
    assert.match(r.stdout, /context: http/);
    assert.match(r.stdout, /prefix: "context__", required: false, timeout: 30 s/);
    assert.match(r.stdout, /tools: none exposed \(no include or exclude: default deny\)/);
    assert.match(r.stdout, /bridge tools:\n\s+include: \(none\)\n\s+exclude: hermes_reset/);
    assert.ok(!r.stdout.includes(SECRET) && !r.stderr.includes(SECRET), 'no value printed');
    // The process environment is the fallback: without FROM_PROCESS the file is refused.
    const missing = run(['gateway', 'check', '--env-file', s.envFile]);
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /upstream context, key url: \$\{FROM_PROCESS\} is not set/);
    // doctor runs the same offline check and warns about the default-deny upstream.
    const d = run(['doctor', '--no-probe', '--env-file', s.envFile], { FROM_PROCESS: SECRET });
    assert.match(d.stdout, /warn\s+gateway file .*: 2 upstreams, 1 with no include\/exclude/);
    assert.match(d.stdout, /warn\s+gateway file.*: upstream everything has a \$\{\.\.\.\} placeholder in args/);
    assert.ok(!d.stdout.includes(SECRET));
  } finally { s.cleanup(); }
});

test('doctor fails on a refused gateway file; gateway check without GATEWAY_FILE is exit 2', () => {
  const s = setup('upstreams:\n  ev:\n    command: node\n    env: {K: "${NOPE_NOT_SET}"}\n');
  try {
    const d = run(['doctor', '--no-probe', '--env-file', s.envFile]);
    assert.equal(d.status, 1);
    assert.match(d.stdout, /FAIL\s+gateway file .*: upstream ev, key env\.K: \$\{NOPE_NOT_SET\} is not set/);
    writeFileSync(s.envFile, `MCP_AUTH_TOKEN=${TOKEN}\n`);
    const c = run(['gateway', 'check', '--env-file', s.envFile]);
    assert.equal(c.status, 2);
    assert.match(c.stderr, /no GATEWAY_FILE in .*: the gateway is off/);
  } finally { s.cleanup(); }
});
