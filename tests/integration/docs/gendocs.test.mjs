// The generated files cannot drift from the tables they come from: each committed copy
// (.env.example, docs/reference/env.md, the man pages) must be what build/<flavour>/gendocs
// prints now (`make docs` rewrites them), and every man page renders without a groff warning.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROOT, HERMES } from '../../lib/lib.mjs';

const BIN = realpathSync(HERMES);
const GENDOCS = join(dirname(BIN), 'gendocs');

const FILES = [
  ['.env.example', ['env-example']],
  ['docs/reference/env.md', ['env-md']],
  ['docs/reference/errors.md', ['errors-md']],
  ['docs/reference/scopes.md', ['scopes-md']],
  ['docs/reference/log-events.md', ['events-md']],
  ['man/hermes-mcp.env.5', ['env-man']],
  ['man/hermes-mcp.1', ['cli-man', BIN]],
  ['man/hermes-mcp-gateway.yaml.5', ['md-man', 'hermes-mcp-gateway.yaml', '5', 'File Formats'],
    'docs/reference/gateway-file.md'],
];

for (const [file, args, input] of FILES) {
  test(`${file} is what gendocs ${args[0]} prints (run: make docs)`, () => {
    const r = spawnSync(GENDOCS, args, {
      encoding: 'utf8',
      input: input ? readFileSync(join(ROOT, input)) : undefined,
    });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(r.stdout.length > 500, r.stdout);
    assert.equal(readFileSync(join(ROOT, file), 'utf8'), r.stdout, `${file} differs; run: make docs`);
  });
}

test('every key of the env reference is in the env man page and .env.example', () => {
  const md = readFileSync(join(ROOT, 'docs/reference/env.md'), 'utf8');
  const man = readFileSync(join(ROOT, 'man/hermes-mcp.env.5'), 'utf8');
  const example = readFileSync(join(ROOT, '.env.example'), 'utf8');
  const keys = [...md.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1]);
  assert.ok(keys.length > 30, `keys: ${keys}`);
  for (const k of keys) {
    assert.match(man, new RegExp(`^\\.B ${k}$`, 'm'), k);
    assert.match(example, new RegExp(`^# ${k}=`, 'm'), k);
  }
});

test('the man pages render without warnings', () => {
  for (const page of ['man/hermes-mcp.1', 'man/hermes-mcp.env.5', 'man/hermes-mcp-gateway.yaml.5']) {
    const r = spawnSync('groff', ['-man', '-Tutf8', '-ww', '-z', join(ROOT, page)], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, '', `${page}: ${r.stderr}`);
  }
});
