// GET /metrics: Prometheus text format behind the bearer token, checked by promtool (when
// scripts/promtool.sh can fetch it) and by the parser below, and by what each family counts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, startHermes, startFake, agentEnv, post, INIT, until, connectClient } from '../../lib/lib.mjs';

// Parses the text exposition format strictly; throws on anything malformed. Returns
// { samples: Map("name{labels}" → number), types: Map(family → type) }.
export function parseExposition(text) {
  const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
  const types = new Map();
  const helps = new Set();
  const samples = new Map();
  const hist = new Map(); // series (without le) → { buckets: [[le, v]], count }
  assert.ok(text.endsWith('\n'), 'ends with a newline');
  const lines = text.slice(0, -1).split('\n');
  for (const [i, line] of lines.entries()) {
    const where = `line ${i + 1}: ${line}`;
    if (line.startsWith('# HELP ')) {
      const [name] = line.slice(7).split(' ');
      assert.match(name, NAME, where);
      assert.ok(!helps.has(name), `HELP twice: ${where}`);
      helps.add(name);
      continue;
    }
    if (line.startsWith('# TYPE ')) {
      const [name, type, ...rest] = line.slice(7).split(' ');
      assert.match(name, NAME, where);
      assert.ok(['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(type) && !rest.length, where);
      assert.ok(!types.has(name), `TYPE twice: ${where}`);
      types.set(name, type);
      continue;
    }
    assert.ok(!line.startsWith('#') && line.length, `unexpected line: ${where}`);
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/);
    assert.ok(m, `sample syntax: ${where}`);
    const [, name, , labelText = '', valueText] = m;
    const labels = [];
    let rest = labelText;
    while (rest.length) {
      const lm = rest.match(/^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"(,|$)/);
      assert.ok(lm, `label syntax: ${where}`);
      labels.push([lm[1], lm[2]]);
      rest = rest.slice(lm[0].length);
    }
    assert.equal(new Set(labels.map(([k]) => k)).size, labels.length, `duplicate label: ${where}`);
    assert.match(valueText, /^([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|[+-]Inf|NaN)$/, `value: ${where}`);
    const value = valueText === '+Inf' ? Infinity : valueText === '-Inf' ? -Infinity : Number(valueText);
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    const type = types.get(family);
    assert.ok(type, `sample before its TYPE: ${where}`);
    if (type === 'counter') {
      assert.ok(name.endsWith('_total'), `counter without _total: ${where}`);
      assert.ok(value >= 0, `negative counter: ${where}`);
    }
    if (type === 'histogram') {
      const key = family + JSON.stringify(labels.filter(([k]) => k !== 'le'));
      const h = hist.get(key) ?? { buckets: [], count: undefined };
      hist.set(key, h);
      if (name.endsWith('_bucket')) {
        const le = labels.find(([k]) => k === 'le');
        assert.ok(le, `bucket without le: ${where}`);
        h.buckets.push([le[1] === '+Inf' ? Infinity : Number(le[1]), value]);
      } else if (name.endsWith('_count')) h.count = value;
    }
    const key = `${name}{${labels.map(([k, v]) => `${k}="${v}"`).join(',')}}`;
    assert.ok(!samples.has(key), `sample twice: ${where}`);
    samples.set(key, value);
  }
  for (const [key, h] of hist) {
    for (let i = 1; i < h.buckets.length; i++) {
      assert.ok(h.buckets[i][0] > h.buckets[i - 1][0], `bucket bounds ascend: ${key}`);
      assert.ok(h.buckets[i][1] >= h.buckets[i - 1][1], `buckets cumulative: ${key}`);
    }
    const last = h.buckets.at(-1);
    assert.ok(last && last[0] === Infinity, `+Inf bucket: ${key}`);
    assert.equal(last[1], h.count, `+Inf bucket equals _count: ${key}`);
  }
  return { samples, types };
}

function promtool() {
  const r = spawnSync(join(ROOT, 'scripts/promtool.sh'), { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim().split('\n').at(-1) : null;
}

async function scrape(srv, headers = srv.auth) {
  const res = await fetch(`${srv.base}/metrics`, { headers });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

const v = (m, key) => m.samples.get(key) ?? 0;

const connect = (srv) => connectClient(srv, { name: 'metrics-it', version: '1', capabilities: {} });

test('/metrics needs the bearer token and takes GET only', async () => {
  const srv = await startHermes();
  try {
    const none = await scrape(srv, {});
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate'), /^Bearer realm="hermes-mcp"/);
    const wrong = await scrape(srv, { Authorization: `Bearer ${'0'.repeat(64)}` });
    assert.equal(wrong.status, 401);
    assert.match(wrong.headers.get('www-authenticate'), /error="invalid_token"/);
    assert.ok(!none.text.includes('hermes_mcp_'), 'no metrics without the token');
    const postRes = await fetch(`${srv.base}/metrics`, { method: 'POST', headers: srv.auth, body: '' });
    assert.equal(postRes.status, 405);
    assert.equal(postRes.headers.get('allow'), 'GET, HEAD');
    const ok = await scrape(srv);
    assert.equal(ok.status, 200);
    assert.match(ok.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
    const m = parseExposition(ok.text);
    assert.equal(v(m, 'hermes_mcp_auth_failures_total{}'), 2, 'both refused scrapes counted');
    assert.equal(v(m, 'hermes_mcp_http_requests_total{path="/metrics",code="401"}'), 2);
    assert.equal(v(m, 'hermes_mcp_http_requests_total{path="/metrics",code="405"}'), 1);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('requests by method, tool and outcome; agent calls; held calls; promtool accepts it', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), MCP_SESSIONS: '1' });
  const client = await connect(srv);
  try {
    const ok = await client.callTool({ name: 'hermes_task', arguments: { task: 'hello', mode: 'sync', id: 'm-1' } });
    assert.equal(ok.isError, false);
    const missing = await client.callTool({ name: 'hermes_result', arguments: { id: 'no-such-task' } });
    assert.equal(missing.structuredContent.error, 'not_found');
    await client.ping();
    const unauth = await post({ ...srv, auth: {} }, INIT());
    assert.equal(unauth.status, 401);

    // A call the fake agent holds for a while: the scrape sees it waiting.
    const slow = client.callTool({ name: 'hermes_task', arguments: { task: 'wait [delay=1500]', mode: 'sync', id: 'm-2' } });
    await until(() => fake.received().some((r) => JSON.stringify(r.body ?? '').includes('[delay=1500]')),
      'the slow call at the agent');
    const duringText = (await scrape(srv)).text;
    const during = parseExposition(duringText);
    slow.catch(() => {});
    if (process.env.DEBUG_METRICS) console.log(duringText);
    assert.equal(v(during, 'hermes_mcp_requests_held{}'), 1, 'the slow call is held');
    assert.equal(v(during, 'hermes_mcp_streams_open{}'), 1, "the session's GET stream");
    assert.equal(v(during, 'hermes_mcp_agent_requests_in_flight{}'), 1);
    assert.equal(v(during, 'hermes_mcp_jobs{}'), 1);
    assert.equal(v(during, 'hermes_mcp_sessions{}'), 1);
    assert.equal(v(during, 'hermes_mcp_connections{}'), 3, 'the GET stream, the held call, the scrape');
    assert.equal((await slow).isError, false);

    const res = await scrape(srv);
    const m = parseExposition(res.text);
    const rpc = (method, tool, outcome) =>
      v(m, `hermes_mcp_rpc_requests_total{method="${method}",tool="${tool}",outcome="${outcome}"}`);
    assert.equal(rpc('tools/call', 'hermes_task', 'ok'), 2);
    assert.equal(rpc('tools/call', 'hermes_result', 'not_found'), 1);
    assert.equal(v(m, 'hermes_mcp_rpc_requests_total{method="ping",outcome="ok"}'), 1);
    assert.equal(v(m, 'hermes_mcp_rpc_requests_total{method="initialize",outcome="ok"}'), 1);
    assert.equal(v(m, 'hermes_mcp_rpc_duration_seconds_count{method="tools/call",tool="hermes_task"}'), 2);
    assert.ok(v(m, 'hermes_mcp_rpc_duration_seconds_sum{method="tools/call",tool="hermes_task"}') >= 1.4,
      'the held call took its 1.5 s');
    assert.equal(v(m, 'hermes_mcp_rpc_duration_seconds_bucket{method="tools/call",tool="hermes_task",le="0.5"}'), 1);
    assert.equal(v(m, 'hermes_mcp_auth_failures_total{}'), 1);
    assert.equal(v(m, 'hermes_mcp_http_requests_total{path="/mcp",code="401"}'), 1);
    assert.equal(v(m, 'hermes_mcp_agent_requests_total{agent="hermes",endpoint="chat",outcome="ok"}'), 2);
    assert.equal(v(m, 'hermes_mcp_agent_request_duration_seconds_count{agent="hermes",endpoint="chat"}'), 2);
    assert.equal(v(m, 'hermes_mcp_agent_up{agent="hermes"}'), 1);
    assert.equal(v(m, 'hermes_mcp_requests_held{}'), 0);
    assert.equal(v(m, 'hermes_mcp_audit_lines_dropped_total{}'), 0);
    assert.ok(v(m, 'hermes_mcp_audit_lines_written_total{}') >= 5);
    assert.ok(v(m, 'process_resident_memory_bytes{}') > 1e6);
    assert.ok(Math.abs(v(m, 'process_start_time_seconds{}') - Date.now() / 1000) < 120);
    assert.equal(v(m, 'hermes_mcp_build_info{service="hermes-mcp",version="0.1.0"}'), 1);
    // Nothing secret in the page.
    assert.ok(!res.text.includes(srv.token) && !res.text.includes(fake.key));

    const tool = promtool();
    if (tool === null) {
      console.log('# promtool unavailable (scripts/promtool.sh failed): checked by the parser only');
    } else {
      const r = spawnSync(tool, ['check', 'metrics'], { input: res.text, encoding: 'utf8' });
      assert.equal(r.status, 0, `promtool check metrics:\n${r.stdout}${r.stderr}`);
    }
  } finally {
    await client.close().catch(() => {});
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});

test('agent failures and rate limiting are counted', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake, 'f'.repeat(48)), RATE_LIMIT_PER_MIN: '6', RATE_LIMIT_AUTH_PER_MIN: '6' });
  try {
    const call = (id) => post(srv, { jsonrpc: '2.0', id, method: 'tools/call',
      params: { name: 'hermes_task', arguments: { task: 'x', mode: 'sync', id: `rl-${id}` } } });
    const first = await call(1);
    assert.equal(first.json.result.structuredContent.error, 'upstream_auth');
    let limited = 0;
    for (let i = 2; i <= 9; i++) if ((await call(i)).status === 429) limited++;
    assert.ok(limited >= 2, `some calls were limited (${limited})`);
    // A scrape with the token is served even now; a wrong token draws on the address's bucket
    // (not the credential's): 401 until that runs out, then 429.
    const res = await scrape(srv);
    assert.equal(res.status, 200);
    const wrong = { Authorization: `Bearer ${'0'.repeat(64)}` };
    const codes = [];
    for (let i = 0; i < 7; i++) codes.push((await scrape(srv, wrong)).status);
    assert.deepEqual(codes, [401, 401, 401, 401, 401, 401, 429]);
    const m = parseExposition(res.text);
    assert.ok(v(m, 'hermes_mcp_agent_requests_total{agent="hermes",endpoint="chat",outcome="http_401"}') >= 1);
    assert.ok(v(m, 'hermes_mcp_rpc_requests_total{method="tools/call",tool="hermes_task",outcome="upstream_auth"}') >= 1);
    assert.ok(v(m, 'hermes_mcp_rate_limited_total{}') >= limited);
    assert.equal(v(m, 'hermes_mcp_http_requests_total{path="/mcp",code="429"}'), limited);
  } finally {
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});
