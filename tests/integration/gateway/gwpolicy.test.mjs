// Guarded tools (plain and conditional confirm) and argument policies (approve, which waits for the
// operator, approvals.test.mjs has the rest): the SDK client lists, then calls, through the gateway
// in front of tests/fakes/fake-upstream.mjs --policy-tools, which records every call it receives. A
// refused call never reaches it; a secret refused is absent from the reply, our log and the audit
// log.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, existsSync, chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import Ajv from 'ajv';
import { ROOT, HERMES, startHermes, jsonLines, gatewayFile, sdkClient, until } from '../../lib/lib.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
const SECRET = 'sk-proj-Zr8Qm2Lx9Vb4Tn7Wc1Ky6Hp3';
let dir, received, srv, client, tools;

const received_calls = () => (existsSync(received) ? jsonLines(readFileSync(received, 'utf8')) : []);

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hm-gwpolicy-'));
  received = join(dir, 'received.jsonl');
  const gw = gatewayFile(dir, `upstreams:
  h:
    command: ${JSON.stringify(process.execPath)}
    args: ${JSON.stringify([FAKE, '--policy-tools', '--received', received])}
    tools:
      include: [echo, cronjob, memory, slow, deploy]
      guard: {cronjob: confirm, "sl*": approve}
      args:
        deploy:
          drop: [model, base_url]
        cronjob:
          drop: [model, provider, base_url]
          fix: {delivery: local}
        memory:
          enum: {kind: [preference, decision]}
          max_items: {tags: 2}
          max_length: {note: 5}
          reject_secrets: [content, tags]
  b:
    command: ${JSON.stringify(process.execPath)}
    args: ${JSON.stringify([FAKE, '--policy-tools', '--received', received])}
    tools:
      include: [cronjob, echo]
      guard: {"*": confirm, cronjob: approve}
      args:
        echo:
          fix: {flag: false, on: True, count: 3, neg: -12, ratio: 0.5, big: 1e3, none: null, tilde: ~,
                quoted: "false", three: '3', word: local, version: 1.2.3, octal: 0o17}
  c:
    command: ${JSON.stringify(process.execPath)}
    args: ${JSON.stringify([FAKE, '--policy-tools', '--received', received])}
    tools:
      include: [cronjob, echo]
      guard: {"*": confirm, cronjob: {confirm: {action: [add]}}, "ec*": {confirm: {message: [rm]}}}
`);
  srv = await startHermes({ GATEWAY_FILE: gw, AUDIT_LOG_PATH: join(dir, 'audit.jsonl') });
  ({ client, tools } = await sdkClient(srv, 'gw-policy'));
});

after(async () => {
  await client?.close();
  if (srv) assert.equal(await srv.stop(), 0);
  rmSync(dir, { recursive: true, force: true });
});

const call = (name, args) => client.callTool({ name, arguments: args });
const errorOf = (r) => (r.isError ? r.structuredContent?.error : null);
const textOf = (r) => JSON.stringify(r);

test('the exposed schema shows confirmed, enum, maxItems, maxLength and hides dropped and fixed fields', () => {
  const cron = tools.h__cronjob.inputSchema;
  assert.equal(cron.properties.confirmed.type, 'boolean');
  assert.match(cron.properties.confirmed.description, /confirmed: true/);
  assert.ok(cron.required.includes('confirmed'));
  for (const hidden of ['model', 'provider', 'base_url', 'delivery']) assert.equal(cron.properties[hidden], undefined, hidden);
  assert.ok(!cron.required.includes('model'));
  assert.deepEqual(Object.keys(cron.properties).sort(), ['action', 'confirmed', 'prompt']);
  const mem = tools.h__memory.inputSchema;
  assert.deepEqual(mem.properties.kind.enum, ['preference', 'decision']);
  assert.equal(mem.properties.tags.maxItems, 2);
  assert.equal(mem.properties.note.maxLength, 5);
  assert.equal(mem.properties.confirmed, undefined);
  assert.equal(tools.h__echo.inputSchema.properties.confirmed, undefined);
});

test('a nested drop leaves the exposed schema at every depth, required included, so a call the schema allows passes', async () => {
  const schema = tools.h__deploy.inputSchema;
  const options = schema.properties.options, step = schema.properties.steps.items;
  assert.deepEqual(Object.keys(options.properties), ['retries']);
  assert.deepEqual(options.required, ['retries']);
  assert.deepEqual(Object.keys(step.properties), ['name']);
  assert.deepEqual(step.required, ['name']);
  assert.deepEqual(schema.required, ['target', 'options']);
  // A client that validates its arguments against the listed schema (as the SDK's Ajv does for
  // output) and then calls: what the schema allows reaches the upstream.
  const args = { target: 'prod', options: { retries: 2 }, steps: [{ name: 'build' }] };
  const validate = new Ajv({ strict: false }).compile(schema);
  assert.ok(validate(args), JSON.stringify(validate.errors));
  assert.ok(!validate({ target: 'prod', options: {} }), 'what stays required is still required');
  const r = await call('h__deploy', args);
  assert.equal(r.isError, undefined, textOf(r));
  assert.deepEqual(received_calls().at(-1), { name: 'deploy', arguments: args });
  // a dropped name sent anyway, nested, is still refused
  const before_ = received_calls().length;
  const refused = await call('h__deploy', { target: 'prod', options: { retries: 2, model: 'gpt-x' } });
  assert.equal(errorOf(refused), 'invalid_arguments');
  assert.equal(received_calls().length, before_);
});

test('confirm: without confirmed: true refused (never upstream); with it, confirmed stripped and the fixed value sent', async () => {
  const before_ = received_calls().length;
  const r = await call('h__cronjob', { action: 'list' });
  assert.equal(errorOf(r), 'confirmation_required');
  assert.equal(received_calls().length, before_);
  const ok = await call('h__cronjob', { action: 'list', confirmed: true });
  assert.equal(ok.isError, undefined, textOf(ok));
  const sent = received_calls().at(-1);
  assert.equal(sent.name, 'cronjob');
  assert.deepEqual(sent.arguments, { action: 'list', delivery: 'local' });
});

test('approve: confirmed: true does not approve; the call waits for the operator, never upstream until decided', async () => {
  const before_ = received_calls().length;
  const waiting = call('h__slow', { ms: 1, confirmed: true });
  const approvals = () => JSON.parse(execFileSync(HERMES, ['approvals', '--json', '--env-file', srv.envFile], { encoding: 'utf8' }));
  const [p] = await until(() => { const l = approvals(); return l.length ? l : null; }, 'the queued request');
  assert.equal(p.tool, 'h__slow');
  assert.equal(received_calls().length, before_);
  execFileSync(HERMES, ['deny', p.id, '--reason', 'test', '--env-file', srv.envFile]);
  const r = await waiting;
  assert.equal(errorOf(r), 'approval_denied');
  assert.equal(received_calls().length, before_);
});

test('the strictest matching guard wins: a broad confirm glob before an approve does not let confirmed: true through', async () => {
  assert.equal(tools.b__cronjob.inputSchema.properties?.confirmed, undefined); // approve, not confirm
  assert.equal(tools.b__echo.inputSchema.properties.confirmed.type, 'boolean'); // only "*" matches: confirm
  const before_ = received_calls().length;
  const waiting = call('b__cronjob', { action: 'add', confirmed: true });
  const approvals = () => JSON.parse(execFileSync(HERMES, ['approvals', '--json', '--env-file', srv.envFile], { encoding: 'utf8' }));
  const [p] = await until(() => { const l = approvals(); return l.length ? l : null; }, 'the queued request');
  assert.equal(p.tool, 'b__cronjob');
  assert.equal(received_calls().length, before_);
  execFileSync(HERMES, ['deny', p.id, '--reason', 'test', '--env-file', srv.envFile]);
  assert.equal(errorOf(await waiting), 'approval_denied');
  assert.equal(received_calls().length, before_);
});

test('a plain confirm glob wins over a conditional one matching the same tool: it asks every time', async () => {
  // c__echo: "*" (plain) and "ec*" (conditional) match: the plain one wins.
  // c__cronjob: "*" (plain) and cronjob (conditional) match: the plain one wins too.
  for (const name of ['c__echo', 'c__cronjob']) {
    const schema = tools[name].inputSchema;
    assert.ok(schema.required.includes('confirmed'), name);
    assert.equal(schema.allOf, undefined, name);
  }
  const before_ = received_calls().length;
  assert.equal(errorOf(await call('c__cronjob', { action: 'list' })), 'confirmation_required');
  assert.equal(errorOf(await call('c__echo', { message: 'hi' })), 'confirmation_required');
  assert.equal(received_calls().length, before_);
});

test('a conditional approve, or a conditional confirm of the wrong shape, stops serve naming upstream and glob', async () => {
  for (const [guard, want] of [
    ['{cronjob: {approve: {action: [add]}}}', /upstream h, key tools\.guard\.cronjob: approve cannot be conditional/],
    ['{cronjob: {confirm: {action: []}}}', /upstream h, key tools\.guard\.cronjob: must be confirm, approve or/],
    ['{"cron*": {confirm: {action: [[add]]}}}', /upstream h, key tools\.guard\.cron\*: must be confirm, approve or/],
    ['{cronjob: {confirm: {action: add}}}', /upstream h, key tools\.guard\.cronjob: must be confirm, approve or/],
    ['{cronjob: {confirms: {action: [add]}}}', /upstream h, key tools\.guard\.cronjob: must be confirm, approve or/],
  ]) {
    const gw = join(dir, 'guard.yaml');
    writeFileSync(gw, `upstreams:\n  h:\n    command: ${JSON.stringify(process.execPath)}\n` +
      `    args: ${JSON.stringify([FAKE, '--policy-tools'])}\n    tools:\n      include: [cronjob]\n` +
      `      guard: ${guard}\n`);
    chmodSync(gw, 0o600);
    const started = await startHermes({ GATEWAY_FILE: gw }).then((s) => s, (e) => e);
    if (!(started instanceof Error)) await started.stop(); // served: the shape went unnoticed
    assert.match(String(started?.message), want, guard);
  }
});

test('fix sends plain YAML scalars with their type (booleans, null, numbers) and quoted ones as strings', async () => {
  const r = await call('b__echo', { message: 'hi', confirmed: true });
  assert.equal(r.isError, undefined, textOf(r));
  const sent = received_calls().at(-1);
  assert.equal(sent.name, 'echo');
  assert.deepEqual(sent.arguments, { message: 'hi', flag: false, on: true, count: 3, neg: -12, ratio: 0.5, big: 1000,
    none: null, tilde: null, quoted: 'false', three: '3', word: 'local', version: '1.2.3', octal: '0o17' });
});

test('dropped and fixed fields sent are refused with invalid_arguments naming them', async () => {
  const before_ = received_calls().length;
  for (const [args, field] of [[{ model: 'gpt-x' }, 'model'], [{ base_url: 'http://evil' }, 'base_url'],
    [{ delivery: 'email' }, 'delivery']]) {
    const r = await call('h__cronjob', { action: 'add', confirmed: true, ...args });
    assert.equal(errorOf(r), 'invalid_arguments', field);
    assert.match(r.content[0].text, new RegExp(`'${field}'`));
  }
  assert.equal(received_calls().length, before_);
});

test('enum, max_items, max_length enforced on the call', async () => {
  const before_ = received_calls().length;
  for (const [args, field] of [[{ kind: 'secret_plan' }, 'kind'], [{ kind: 1 }, 'kind'],
    [{ tags: ['a', 'b', 'c'] }, 'tags'], [{ tags: 'a' }, 'tags'], [{ note: 'héllo!' }, 'note']]) {
    const r = await call('h__memory', args);
    assert.equal(errorOf(r), 'invalid_arguments', JSON.stringify(args));
    assert.match(r.content[0].text, new RegExp(`'${field}'`));
  }
  assert.equal(received_calls().length, before_);
  const ok = await call('h__memory', { kind: 'decision', tags: ['a', 'b'], note: 'héllo', content: 'use tabs' });
  assert.equal(ok.isError, undefined, textOf(ok));
  assert.deepEqual(received_calls().at(-1).arguments, { kind: 'decision', tags: ['a', 'b'], note: 'héllo', content: 'use tabs' });
});

test('a NUL inside a string hides nothing: max_length counts past it, enum compares all of it, reject_secrets reads on', async () => {
  const before_ = received_calls().length;
  for (const [args, field] of [[{ note: 'x\u0000' + 'A'.repeat(5000) }, 'note'], [{ note: 'ab\u0000cdef' }, 'note'],
    [{ kind: 'decision\u0000; drop table' }, 'kind'], [{ content: `fine\u0000${SECRET}` }, 'content'],
    [{ tags: ['x\u0000' + SECRET] }, 'tags']]) {
    const r = await call('h__memory', args);
    assert.equal(errorOf(r), 'invalid_arguments', JSON.stringify(args).slice(0, 60));
    assert.match(r.content[0].text, new RegExp(`'${field}'`));
  }
  assert.equal(received_calls().length, before_);
  const ok = await call('h__memory', { note: 'a\u0000bcd', kind: 'decision' }); // 5 characters, the NUL one of them
  assert.equal(ok.isError, undefined, textOf(ok));
  assert.equal(received_calls().at(-1).arguments.note, 'a\u0000bcd');
});

test('secrets refused with the field named; the value is in no reply, log or audit line', async () => {
  const before_ = received_calls().length;
  for (const [args, field] of [[{ content: `my key is ${SECRET}` }, 'content'], [{ tags: ['x', SECRET] }, 'tags'],
    [{ content: '-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----' }, 'content']]) {
    const r = await call('h__memory', args);
    assert.equal(errorOf(r), 'invalid_arguments');
    assert.match(r.content[0].text, new RegExp(`'${field}'.*secret`));
    assert.doesNotMatch(textOf(r), /Zr8Qm2|MIIB/);
  }
  assert.equal(received_calls().length, before_);
  // a field not named in reject_secrets is not checked
  const ok = await call('h__memory', { note: 'x', kind: 'decision' });
  assert.equal(ok.isError, undefined);
  assert.doesNotMatch(srv.proc.stderrText, /Zr8Qm2/);
  const audit = readFileSync(join(dir, 'audit.jsonl'), 'utf8');
  assert.match(audit, /"invalid_arguments"/); // the refusals are audited...
  assert.doesNotMatch(audit, /Zr8Qm2|MIIB/); // ...without the value
});

test('a policy naming a tool the upstream does not offer stops serve naming upstream and tool', async () => {
  const gw = join(dir, 'typo.yaml');
  writeFileSync(gw, `upstreams:\n  h:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--policy-tools'])}\n    tools:\n      include: [cronjob]\n` +
    '      args: {cronjbo: {drop: [model]}}\n');
  chmodSync(gw, 0o600);
  const started = await startHermes({ GATEWAY_FILE: gw }).then((s) => s, (e) => e);
  if (!(started instanceof Error)) await started.stop(); // served: the typo went unnoticed
  assert.match(String(started?.message), /exited with 1 before listening[\s\S]*upstream h: tools\.args names tool 'cronjbo', which it does not offer/);
});
