// The command line: every command has --help (exit 0, its exit codes documented), help COMMAND
// says the same, and usage errors exit 2 with one line that names the problem.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERMES } from './lib.mjs';

const run = (...args) => spawnSync(HERMES, args, { encoding: 'utf8' });
const COMMANDS = ['serve', 'token', 'doctor', 'smoke', 'gateway', 'version'];

test('every command: --help and help COMMAND print its usage with exit codes', () => {
  const top = run('help');
  assert.equal(top.status, 0);
  for (const c of COMMANDS) {
    assert.match(top.stdout, new RegExp(`^  ${c}\\b`, 'm'), `help lists ${c}`);
    const h = run(c, '--help');
    assert.equal(h.status, 0, `${c} --help`);
    assert.match(h.stdout, new RegExp(`^usage: hermes-mcp ${c}`), `${c} --help usage line`);
    assert.match(h.stdout, /Exit codes:/, `${c} --help documents its exit codes`);
    assert.equal(h.stderr, '');
    assert.equal(run('help', c).stdout, h.stdout, `help ${c} = ${c} --help`);
  }
});

test('usage errors exit 2 with one clear line', () => {
  const cases = [
    [[], /usage: hermes-mcp <command>/],
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['help', 'frobnicate'], /no command 'frobnicate'/],
    [['version', 'extra'], /unknown argument 'extra'/],
    [['serve', '--bogus'], /unknown argument '--bogus'/],
    [['token'], /usage: hermes-mcp token/],
    [['token', 'spin'], /unknown token command 'spin'/],
  ];
  for (const [args, re] of cases) {
    const r = run(...args);
    assert.equal(r.status, 2, `${args.join(' ')}: exit 2`);
    assert.match(r.stderr, re, args.join(' '));
    assert.equal(r.stdout, '', `${args.join(' ')}: nothing on stdout`);
  }
  const v = run('version');
  assert.equal(v.status, 0);
  assert.match(v.stdout, /^hermes-mcp \d+\.\d+\.\d+\n$/);
});

test('token gen --env-file ~/.config/hermes-mcp/env on a fresh account creates the folder (new levels mode 700)', () => {
  const home = mkdtempSync(join(tmpdir(), 'hm-cli-home-'));
  // As the README's service block is typed: ~ expanded by the shell, umask 022 as on Debian.
  const gen = (h) => spawnSync('bash', ['-c', 'umask 022; "$HERMES" token gen --env-file ~/.config/hermes-mcp/env'],
    { encoding: 'utf8', env: { ...process.env, HOME: h, HERMES } });
  const mode = (p) => statSync(p).mode & 0o777;
  try {
    // Nothing under HOME yet: .config and hermes-mcp are both new.
    const fresh = join(home, 'fresh');
    mkdirSync(fresh, { mode: 0o755 });
    const r = gen(fresh);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /MCP_AUTH_TOKEN written to .*\/\.config\/hermes-mcp\/env \(mode 600\)/);
    assert.match(readFileSync(join(fresh, '.config/hermes-mcp/env'), 'utf8'), /^MCP_AUTH_TOKEN=[0-9a-f]{64}\n$/);
    assert.equal(mode(join(fresh, '.config/hermes-mcp/env')), 0o600);
    assert.equal(mode(join(fresh, '.config/hermes-mcp')), 0o700);
    assert.equal(mode(join(fresh, '.config')), 0o700, 'a new level is private too');
    assert.equal(mode(fresh), 0o755, 'an existing level is left as it was');

    // ~/.config exists (0755, as desktop accounts have it): only hermes-mcp is new.
    const usual = join(home, 'usual');
    mkdirSync(join(usual, '.config'), { recursive: true, mode: 0o755 });
    const u = gen(usual);
    assert.equal(u.status, 0, u.stderr);
    assert.equal(mode(join(usual, '.config')), 0o755, 'the existing ~/.config is not touched');
    assert.equal(mode(join(usual, '.config/hermes-mcp')), 0o700);

    // A level that is a file: one clear line, exit 1.
    const bad = join(home, 'bad');
    mkdirSync(bad);
    writeFileSync(join(bad, '.config'), 'not a folder\n');
    const b = gen(bad);
    assert.equal(b.status, 1);
    assert.match(b.stderr, /^hermes-mcp: .*\.config.*(not a folder|Not a directory)/);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});
