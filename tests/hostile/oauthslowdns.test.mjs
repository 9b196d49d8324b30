// A client ID metadata document on a host whose DNS lookup never answers in time: the
// fetch is cancelled (the browser gives up) or times out, and the server's one
// event loop must not wait for the lookup meanwhile. tests/fakes/slowdns.c, preloaded, makes
// every lookup of *.slow.test take SLOWDNS_MS and fail; /health answers fast all along.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startHermes, ROOT, sleep, freePort } from '../lib/lib.mjs';

const SLOW_MS = 8000;
let shim;
after(() => rmSync(dirname(shim), { recursive: true, force: true }));

before(() => {
  shim = join(mkdtempSync(join(tmpdir(), 'hm-slowdns-')), 'slowdns.so');
  const cc = spawnSync('cc', ['-shared', '-fPIC', '-O2', '-o', shim, join(ROOT, 'tests/fakes/slowdns.c'), '-ldl'], { encoding: 'utf8' });
  assert.equal(cc.status, 0, cc.stderr);
});

async function startSlow() {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  // The shim is not built with ASan, so under ASan the runtime is not first in the list.
  const env = { ...process.env, LD_PRELOAD: shim, SLOWDNS_MS: String(SLOW_MS),
    ASAN_OPTIONS: `${process.env.ASAN_OPTIONS ?? ''}:verify_asan_link_order=0` };
  const srv = await startHermes({ MCP_PORT: String(port), OAUTH_ISSUER_URL: issuer }, { env });
  return { srv, issuer };
}

const authorizeUrl = (issuer) => {
  const url = new URL(`${issuer}/authorize`);
  for (const [k, v] of Object.entries({ client_id: 'https://a.slow.test/client.json', response_type: 'code',
    redirect_uri: 'https://a.slow.test/cb', code_challenge: createHash('sha256').update('x'.repeat(50)).digest('base64url'),
    code_challenge_method: 'S256' })) url.searchParams.set(k, v);
  return url;
};

// The slowest of /health answers over the next ms.
async function slowestHealth(issuer, ms) {
  let worst = 0;
  for (const t0 = Date.now(); Date.now() - t0 < ms; await sleep(250)) {
    const t = Date.now();
    assert.equal((await fetch(`${issuer}/health`)).status, 200);
    worst = Math.max(worst, Date.now() - t);
  }
  return worst;
}

test('a metadata fetch cancelled while its DNS lookup hangs does not stop the event loop', async () => {
  const { srv, issuer } = await startSlow();
  try {
    const ac = new AbortController();
    const pending = fetch(authorizeUrl(issuer), { signal: ac.signal }).catch(() => 'aborted');
    await sleep(300);
    ac.abort();
    assert.equal(await pending, 'aborted');
    const worst = await slowestHealth(issuer, 3000);
    assert.ok(worst < 1000, `/health took ${worst} ms while a lookup was pending`);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('a metadata fetch that times out in its DNS lookup answers and does not stop the event loop', async () => {
  const { srv, issuer } = await startSlow();
  try {
    const t0 = Date.now();
    const page = fetch(authorizeUrl(issuer)).then(async (r) => ({ status: r.status, ms: Date.now() - t0, text: await r.text() }));
    const worst = await slowestHealth(issuer, 6500); // past the 5 s fetch timeout, before the lookup ends
    const r = await page;
    assert.ok(worst < 1000, `/health took ${worst} ms while a lookup was pending`);
    assert.equal(r.status, 400, r.text);
    assert.ok(r.ms < SLOW_MS - 1000, `the page waited ${r.ms} ms, for the lookup rather than the 5 s timeout`);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

// The loop's shared HTTP client (src/http/httpc.c: agents, upstreams) has the same resolver: an
// agent whose host never resolves in time (its health probe times out) must not stop the loop.
test('an agent health probe that times out in its DNS lookup does not stop the event loop', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-slowagent-'));
  const agentFile = join(dir, 'agent.env');
  writeFileSync(agentFile, 'API_SERVER_HOST=agent.slow.test\nAPI_SERVER_PORT=8642\nAPI_SERVER_KEY=' + 'k'.repeat(48) + '\n');
  const env = { ...process.env, LD_PRELOAD: shim, SLOWDNS_MS: String(SLOW_MS),
    ASAN_OPTIONS: `${process.env.ASAN_OPTIONS ?? ''}:verify_asan_link_order=0` };
  const srv = await startHermes({ HERMES_ENV_PATH: agentFile }, { env });
  try {
    const worst = await slowestHealth(srv.base, 4000); // past the probe's 2 s connect timeout
    assert.ok(worst < 1000, `/health took ${worst} ms while a lookup was pending`);
  } finally {
    assert.equal(await srv.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  }
});
