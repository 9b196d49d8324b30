// The command line: every command has --help (exit 0, its exit codes documented), help COMMAND
// says the same, and usage errors exit 2 with one line that names the problem.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
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
