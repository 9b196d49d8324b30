// Hostile paths for guarded tools and argument policies. A model that
// wants a confirm-guarded tool to run, a dropped argument through or a secret stored will try
// variants: confirmed as "true", 1, nested or in _meta; a dropped name in another case, with
// '-' for '_', nested, inside an array, or spelled with a Unicode lookalike; a secret in any
// position of a named argument (nested objects, arrays, keys, inside prose). Each is refused
// and reaches no upstream (tests/fakes/fake-upstream.mjs --received records what arrives); a
// refused secret is in no reply and not in our log. What is refused is documented in
// docs/guides/gateway.md#guarded-tools-and-argument-policies.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, startHermes, jsonLines, gatewayFile, sdkClient } from '../lib/lib.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
let dir, received, srv, client;
const arrived = () => (existsSync(received) ? jsonLines(readFileSync(received, 'utf8')).length : 0);
const call = (name, args, _meta) => client.callTool({ name, arguments: args, ...(_meta ? { _meta } : {}) });

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hm-gwpolicy-hostile-'));
  received = join(dir, 'received.jsonl');
  const gw = gatewayFile(dir, `upstreams:
  h:
    command: ${JSON.stringify(process.execPath)}
    args: ${JSON.stringify([FAKE, '--policy-tools', '--received', received])}
    tools:
      include: [cronjob, memory]
      guard: {cronjob: confirm}
      args:
        cronjob: {drop: [model, base_url], fix: {delivery: local}}
        memory: {reject_secrets: [content, tags, note]}
`);
  srv = await startHermes({ GATEWAY_FILE: gw });
  ({ client } = await sdkClient(srv, 'gw-policy-hostile'));
});

after(async () => {
  await client?.close();
  if (srv) assert.equal(await srv.stop(), 0);
  rmSync(dir, { recursive: true, force: true });
});

test('self-approval: confirmed as "true", 1, [true], {}, nested, other case, or in _meta is not confirmation', async () => {
  const attempts = [
    [{ action: 'add', confirmed: 'true' }], [{ action: 'add', confirmed: 1 }],
    [{ action: 'add', confirmed: [true] }], [{ action: 'add', confirmed: {} }],
    [{ action: 'add', options: { confirmed: true } }], [{ action: 'add', Confirmed: true }],
    [{ action: 'add', CONFIRMED: true }], [{ action: 'add', confirmed: null }],
    [{ action: 'add' }, { confirmed: true }], [{ action: 'add' }, { confirmed: true, approved: true }],
  ];
  for (const [args, meta] of attempts) {
    const r = await call('h__cronjob', args, meta);
    assert.equal(r.structuredContent?.error, 'confirmation_required', JSON.stringify([args, meta]));
  }
  assert.equal(arrived(), 0);
});

test('smuggled dropped or fixed fields: case, dashes, nesting, arrays, lookalikes are refused', async () => {
  const smuggled = [
    { Model: 'x' }, { MODEL: 'x' }, { 'base-url': 'http://evil' }, { BaseUrl: 'http://evil' },
    { options: { model: 'x' } }, { list: [{ deep: { model: 'x' } }] }, { Delivery: 'email' },
    { opts: { delivery: 'email' } },
    { 'm\u043edel': 'x' }, // Cyrillic o
    { '\uff4dodel': 'x' }, // fullwidth m
    { 'model\u200b': 'x' }, // zero-width space
  ];
  for (const extra of smuggled) {
    const r = await call('h__cronjob', { action: 'add', confirmed: true, ...extra });
    assert.equal(r.structuredContent?.error, 'invalid_arguments', JSON.stringify(extra));
  }
  assert.equal(arrived(), 0);
  // the honest call still works, with the fixed value the only delivery
  const ok = await call('h__cronjob', { action: 'add', confirmed: true });
  assert.equal(ok.isError, undefined);
  assert.deepEqual(jsonLines(readFileSync(received, 'utf8')).at(-1).arguments, { action: 'add', delivery: 'local' });
});

test('secret-like values in every position of a named argument are refused and never echoed or logged', async () => {
  const before_ = arrived();
  const secrets = ['sk-proj-Zr8Qm2Lx9Vb4Tn7Wc1Ky6Hp3', 'ghp_Zr8Qm2Lx9Vb4Tn7Wc1Ky6Hp3abcdefgh',
    'AKIAZR8QM2LX9VB4TN7W', 'xoxb-998877665544-Zr8Qm2Lx9Vb4',
    'Bearer Zr8Qm2Lx9Vb4Tn7Wc1Ky6Hp3', 'Zr8Qm2Lx9Vb4Tn7Wc1Ky6Hp3Jd5Fs0GaQw7E',
    '-----BEGIN OPENSSH PRIVATE KEY-----\nZr8Qm2Lx9Vb4\n-----END OPENSSH PRIVATE KEY-----'];
  for (const s of secrets) {
    const positions = [
      { content: s }, { content: `remember this for later: ${s} (prod)` }, { content: `key=${s}` },
      { tags: ['ok', s] }, { note: { deep: [{ deeper: s }] } }, { note: { [s]: 'as a key' } },
    ];
    for (const args of positions) {
      const r = await call('h__memory', args);
      assert.equal(r.structuredContent?.error, 'invalid_arguments', JSON.stringify(args));
      assert.match(r.content[0].text, /'(content|tags|note)' looks like it contains a secret/);
      assert.doesNotMatch(JSON.stringify(r), /Zr8Qm2|ZR8QM2/);
    }
  }
  assert.equal(arrived(), before_);
  assert.doesNotMatch(srv.proc.stderrText, /Zr8Qm2|ZR8QM2/);
});
