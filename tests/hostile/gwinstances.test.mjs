// Hostile paths for per-root instances: a caller chooses which upstream
// process serves it, and in which directory, by the instances.by argument, so it must not
// reach outside the roots by "..", a symlink, a trailing slash, a sibling sharing the root's
// prefix (/srv/work2 vs /srv/work), a relative path, a NUL or an overlong value. Each is
// answered invalid_arguments naming the argument (never echoing the value), starts no process
// and reaches no upstream (tests/fakes/fake-upstream.mjs --starts and --calls record both).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, existsSync, chmodSync, mkdtempSync, mkdirSync, rmSync, realpathSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ROOT, startHermes } from '../lib/lib.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
let dir, work, srv, client;

const starts = () => readFileSync(join(dir, 'fake.starts'), 'utf8').trim().split('\n').length;
const upstreamCalls = () => (existsSync(join(dir, 'calls'))
  ? readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n') : []);

before(async () => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'hm-gwinst-hostile-')));
  work = join(dir, 'work');
  for (const p of ['work/proj', 'work2/proj', 'outside']) mkdirSync(join(dir, p), { recursive: true });
  symlinkSync(join(dir, 'outside'), join(work, 'proj/escape'));
  symlinkSync(join(dir, 'work2'), join(work, 'sibling'));
  const gw = join(dir, 'gw.yaml');
  writeFileSync(gw, 'upstreams:\n  graph:\n' +
    `    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--where', '--starts', join(dir, 'fake.starts'), '--calls', join(dir, 'calls')])}\n` +
    `    tools: {include: [where]}\n    instances: {by: cwd, roots: [${JSON.stringify(work)}], max: 2}\n`);
  chmodSync(gw, 0o600);
  srv = await startHermes({ GATEWAY_FILE: gw });
  client = new Client({ name: 'gw-instances-hostile', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: srv.auth } }));
  const { tools } = await client.listTools();
  assert.ok(tools.some((t) => t.name === 'graph__where'));
});
after(async () => {
  await client?.close();
  await srv?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('paths escaping the roots are refused before any process starts', async () => {
  const hostile = [
    join(work, 'proj/../../work2/proj'),       // ..
    join(work, '..'),
    `${work}/../outside`,
    join(work, 'proj/escape'),                 // a symlink inside the root pointing out
    join(work, 'proj/escape') + '/',           // the same with a trailing slash
    join(work, 'sibling/proj'),                // a symlink to the sibling root
    join(dir, 'work2/proj'),                   // work2 shares work's prefix, not its components
    join(dir, 'work2') + '/',
    'work/proj',                               // relative
    '~/work/proj',
    '',
    `${work}/proj\u0000/../../outside`,        // a NUL inside the JSON string
    '/' + 'a'.repeat(70000),                   // overlong
    join(work, 'proj/missing'),
  ];
  for (const cwd of hostile) {
    const r = await client.callTool({ name: 'graph__where', arguments: { cwd } });
    assert.equal(r.isError, true, cwd.slice(0, 80));
    assert.equal(r.structuredContent.error, 'invalid_arguments', cwd.slice(0, 80));
    assert.match(r.structuredContent.message, /^argument cwd /);
    assert.ok(r.structuredContent.message.length < 300, 'the value is not echoed');
    assert.doesNotMatch(r.structuredContent.message, /outside|work2|aaaa/);
  }
  for (const cwd of [1, null, ['/'], { path: work }]) {
    const r = await client.callTool({ name: 'graph__where', arguments: { cwd } });
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent.error, 'invalid_arguments');
  }
  const said = async (cwd) => (await client.callTool({ name: 'graph__where', arguments: { cwd } })).structuredContent.message;
  assert.equal(await said(join(dir, 'outside')), await said(join(dir, 'no-such-dir')),
    'no oracle for whether a path outside the roots exists');
  assert.equal(starts(), 1, 'only the discovery instance ever started');
  assert.deepEqual(upstreamCalls(), []);
  // the trailing slash and a symlink that stays inside are the same project
  const a = JSON.parse((await client.callTool({ name: 'graph__where', arguments: { cwd: join(work, 'proj') + '/' } })).content[0].text);
  assert.equal(a.cwd, join(work, 'proj'));
  assert.equal(starts(), 2);
  // the upstream is sent the path as resolved, never the link: a link swapped after the check
  // cannot send it elsewhere
  symlinkSync(join(work, 'proj'), join(work, 'via-link'));
  const b = JSON.parse((await client.callTool({ name: 'graph__where', arguments: { cwd: join(work, 'via-link') + '/' } })).content[0].text);
  assert.equal(b.arg, join(work, 'proj'));
  assert.equal(b.cwd, join(work, 'proj'));
});
