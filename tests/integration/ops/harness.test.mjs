// The test runners themselves: a skipped test is a test that did not run, so
// it fails the run (tests/integration/run.sh for Node's runner, tests/run.sh for cmocka's unit
// programs) unless a developer sets HM_ALLOW_SKIP=1 on their own machine. Each runner is given
// one test that skips and one that passes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { ROOT } from '../../lib/lib.mjs';

const dir = mkdtempSync(join(tmpdir(), 'hm-harness-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function run(cmd, args, allow) {
  const env = { ...process.env, HM_INTEGRATION_LOG: join(dir, 'integration.log') };
  delete env.HM_ALLOW_SKIP;
  delete env.NODE_TEST_CONTEXT; // else Node's runner, seeing itself nested, runs no file
  if (allow) env.HM_ALLOW_SKIP = '1';
  return spawnSync(cmd, args, { cwd: ROOT, env, encoding: 'utf8' });
}

test('integration runner: a skipped test fails the run; HM_ALLOW_SKIP=1 lets it pass', () => {
  const file = join(dir, 'skips.test.mjs');
  writeFileSync(file, "import test from 'node:test';\n" +
    "test('needs a tool this machine lacks', { skip: 'no such tool' }, () => {});\n" +
    "test('runs', () => {});\n");
  const strict = run('tests/integration/run.sh', [file], false);
  assert.equal(strict.status, 1, strict.stdout + strict.stderr);
  assert.match(strict.stdout, /integration: 1 passed, 0 failed, 1 skipped/);
  assert.match(strict.stdout, /FAIL: 1 skipped/);
  assert.match(strict.stdout, /needs a tool this machine lacks/, 'the skipped test is named');
  const lenient = run('tests/integration/run.sh', [file], true);
  assert.equal(lenient.status, 0, lenient.stdout + lenient.stderr);
});

test('integration runner: a file marked serial runs after the others, alone', () => {
  const a = join(dir, 'a.test.mjs');
  const b = join(dir, 'b.test.mjs');
  writeFileSync(a, "import test from 'node:test';\ntest('side by side', () => {});\n");
  writeFileSync(b, "// serial: this test's reason\nimport test from 'node:test';\ntest('alone', () => {});\n");
  const r = run('tests/integration/run.sh', [a, b], false);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /integration: 1 files, \d+ at a time/);
  assert.match(r.stdout, /integration: 1 files marked serial, one at a time: b\.test\.mjs/);
  assert.ok(r.stdout.indexOf('side by side') < r.stdout.indexOf('alone'), 'the serial file ran second');
  assert.match(r.stdout, /integration: 2 passed, 0 failed, 0 skipped/);
});

test('unit runner: a cmocka skip() fails the run; HM_ALLOW_SKIP=1 lets it pass', () => {
  const src = join(dir, 'skips.c');
  const bin = join(dir, 'test_skips');
  writeFileSync(src, `#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
static void needs_root(void **state) { (void)state; skip(); }
static void runs(void **state) { (void)state; }
int main(void)
{
    const struct CMUnitTest t[] = {cmocka_unit_test(needs_root), cmocka_unit_test(runs)};
    return cmocka_run_group_tests(t, NULL, NULL);
}
`);
  const cc = spawnSync('cc', ['-o', bin, src, '-lcmocka'], { encoding: 'utf8' });
  assert.equal(cc.status, 0, cc.stderr);
  const strict = run('tests/run.sh', [bin], false);
  assert.equal(strict.status, 1, strict.stdout + strict.stderr);
  assert.match(strict.stdout, /unit: 1 passed, 0 failed .*1 tests skipped/);
  assert.match(strict.stdout, /SKIPPED \] needs_root/);
  const lenient = run('tests/run.sh', [bin], true);
  assert.equal(lenient.status, 0, lenient.stdout + lenient.stderr);
});
