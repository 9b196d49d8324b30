// The command line: every command has --help (exit 0, its exit codes documented), help COMMAND
// says the same, and usage errors exit 2 with one line that names the problem.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERMES } from '../../lib/lib.mjs';

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
    // Options by their exact name: a prefix would change meaning when an option sharing it
    // is added. The commands take no operands, so '--' is a stray word too.
    [['serve', '--env', 'x.env'], /unknown argument '--env'/],
    [['token', 'gen', '--e', 'x.env'], /unknown argument '--e'/],
    [['serve', '--'], /unknown argument '--'/],
    [['serve', '--env-file'], /option '--env-file' needs a FILE/],
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
  // As the deployment guide's service block is typed: ~ expanded by the shell, umask 022 as on Debian.
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

test('token gen refuses a folder another user could replace the env file in, and says what to do', () => {
  // A shared parent as /tmp is (root's, 1777). "Another user" is nobody: as root the test makes
  // its folders and hands them over; not as root, the folders of root stand in for them.
  const root = mkdtempSync(join(tmpdir(), 'hm-cli-shared-'));
  const shared = join(root, 'tmp');
  mkdirSync(shared);
  chmodSync(shared, 0o1777);
  const asRoot = process.getuid() === 0;
  const theirs = (p, mode) => {
    mkdirSync(p);
    chmodSync(p, mode);
    if (asRoot) chownSync(p, 65534, 65534);
    return p;
  };
  const gen = (file) => spawnSync(HERMES, ['token', 'gen', '--env-file', file], { encoding: 'utf8' });
  try {
    // x made by another user before us: they could swap the env file (their token, their
    // agent command) at any time. Refused, nothing written.
    const x = asRoot ? theirs(join(shared, 'x'), 0o755) : '/usr';
    const r = gen(join(x, 'env'));
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`^hermes-mcp: the folder ${x} belongs to uid \\d+, not to this user .*another user could replace the file in it; run this as its owner or use a folder of your own\n$`));
    assert.equal(existsSync(join(x, 'env')), false);
    // A level to be made inside their folder: they could rename ours away.
    const deeper = gen(join(x, 'y/env'));
    assert.equal(deeper.status, 1);
    assert.match(deeper.stderr, new RegExp(`cannot create the folder ${x}/y: ${x} belongs to uid`));
    assert.equal(existsSync(join(x, 'y')), false);

    // A folder of ours that the group can write to, even with the env file already there.
    const team = join(root, 'team');
    mkdirSync(team);
    chmodSync(team, 0o770);
    writeFileSync(join(team, 'env'), 'MCP_PORT=9999\n', { mode: 0o600 });
    const t = gen(join(team, 'env'));
    assert.equal(t.status, 1);
    assert.match(t.stderr, new RegExp(`the folder ${team} is writable by its group or others \\(mode 0770\\).*run chmod go-w ${team}`));
    assert.equal(readFileSync(join(team, 'env'), 'utf8'), 'MCP_PORT=9999\n', 'the file is left as it was');
    chmodSync(team, 0o700);
    assert.equal(gen(join(team, 'env')).status, 0, 'after chmod go-w it works');

    // Our own new folder in the shared parent is fine: the sticky bit keeps others from
    // renaming it, and it is made private.
    const mine = gen(join(shared, 'mine/env'));
    assert.equal(mine.status, 0, mine.stderr);
    assert.equal(statSync(join(shared, 'mine')).mode & 0o777, 0o700);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
