// What a span says, in the cases a review found wrong: service.name from OTEL_RESOURCE_ATTRIBUTES,
// the principal (OTEL_SPAN_PRINCIPAL), a failed agent run's CLIENT span, initialize's negotiated
// protocol version, tracestate over several header lines and over the cap, and span names of
// OAuth endpoints asked with a method of the client's own making.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { startHermes, startFake, agentEnv, post, INIT, startOAuth } from '../../lib/lib.mjs';
import { startCollector } from '../../lib/otlp.mjs';

const V = '2025-11-25';
const H = { 'MCP-Protocol-Version': V };
const rid = (n) => randomBytes(n).toString('hex');
const tp = (trace) => `00-${trace}-${rid(8)}-01`;
const otelEnv = (c, more = {}) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: c.endpoint, OTEL_BSP_SCHEDULE_DELAY: '20', ...more });

// A POST with header lines as given (an array value: one line each, as fetch cannot send them).
function rawPost(srv, body, headers) {
  return new Promise((resolve, reject) => {
    const req = request(srv.url, { method: 'POST', headers: { 'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream', ...srv.auth, ...headers } }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

test('service.name from OTEL_RESOURCE_ATTRIBUTES when OTEL_SERVICE_NAME is unset; the principal by OTEL_SPAN_PRINCIPAL', async () => {
  for (const [env, service, principal] of [
    [{ OTEL_RESOURCE_ATTRIBUTES: 'service.name=from%20attrs,team=x' }, 'from attrs', undefined],
    [{ OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attrs', OTEL_SERVICE_NAME: 'named', OTEL_SPAN_PRINCIPAL: 'plain' }, 'named', 'owner'],
    [{ OTEL_SPAN_PRINCIPAL: 'off' }, 'hermes-mcp', null],
  ]) {
    const c = await startCollector();
    const srv = await startHermes(otelEnv(c, env));
    try {
      const trace = rid(16);
      const r = await post(srv, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { ...H, traceparent: tp(trace) });
      assert.equal(r.status, 200);
      const [s] = await c.waitSpans((x) => x.traceId === trace);
      assert.equal(s.resource['service.name'], service, JSON.stringify(env));
      assert.equal(s.attributes['enduser.id'], undefined);
      if (principal === undefined) assert.match(s.attributes['hermes.principal'], /^sha256:[0-9a-f]{16}$/);
      else if (principal === null) assert.equal(s.attributes['hermes.principal'], undefined);
      else assert.equal(s.attributes['hermes.principal'], principal);
    } finally {
      await srv.stop();
      await c.stop();
    }
  }
});

test('a failed agent run: its CLIENT span has an error status; initialize: the version answered', async () => {
  const c = await startCollector();
  const fake = await startFake();
  const srv = await startHermes({ ...otelEnv(c), HERMES_ENV_PATH: agentEnv(fake) });
  try {
    let trace = rid(16);
    let r = await post(srv, { jsonrpc: '2.0', id: 1, method: 'tools/call',
      params: { name: 'hermes_task', arguments: { task: 'do it [fail=broken]', mode: 'sync' } } }, { ...H, traceparent: tp(trace) });
    assert.equal(r.status, 200, r.text);
    const [run] = await c.waitSpans((s) => s.traceId === trace && s.kind === 3);
    assert.equal(run.name, 'invoke_agent hermes');
    assert.equal(run.status?.code, 2, `ERROR: ${JSON.stringify(run.attributes)}`);
    assert.equal(run.attributes['error.type'], 'failed');

    trace = rid(16);
    r = await post(srv, { jsonrpc: '2.0', id: 2, method: 'tools/call',
      params: { name: 'hermes_task', arguments: { task: 'what is 6 * 7', mode: 'sync' } } }, { ...H, traceparent: tp(trace) });
    assert.equal(r.status, 200, r.text);
    const [ok] = await c.waitSpans((s) => s.traceId === trace && s.kind === 3);
    assert.equal(ok.status?.code ?? 0, 0, 'a run that succeeded has no error');

    trace = rid(16);
    r = await post(srv, INIT('1999-01-01', 3), { traceparent: tp(trace) });
    assert.equal(r.status, 200, r.text);
    const answered = JSON.parse(r.text).result.protocolVersion;
    assert.notEqual(answered, '1999-01-01');
    const [init] = await c.waitSpans((s) => s.traceId === trace);
    assert.equal(init.attributes['mcp.protocol.version'], answered, 'the negotiated version, not the one asked for');
  } finally {
    await srv.stop();
    await fake.stop();
    await c.stop();
  }
});

test('tracestate: several header lines joined with commas; over the cap, cut at a member boundary', async () => {
  const c = await startCollector();
  const srv = await startHermes(otelEnv(c));
  try {
    let trace = rid(16);
    let r = await rawPost(srv, { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { ...H, traceparent: tp(trace), tracestate: ['a=1', 'b=2 , c=3'] });
    assert.equal(r.status, 200, r.text);
    let [s] = await c.waitSpans((x) => x.traceId === trace);
    assert.equal(s.traceState, 'a=1,b=2,c=3');

    // 20 members of 30 bytes: 619 bytes, over the 512 kept; whole members from the start stay.
    const members = Array.from({ length: 20 }, (_, i) => `k${String(i).padStart(2, '0')}=${'v'.repeat(26)}`);
    trace = rid(16);
    r = await post(srv, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, { ...H, traceparent: tp(trace), tracestate: members.join(',') });
    assert.equal(r.status, 200, r.text);
    [s] = await c.waitSpans((x) => x.traceId === trace);
    assert.ok(s.traceState.length <= 512 && s.traceState.length > 400, s.traceState);
    assert.deepEqual(s.traceState.split(','), members.slice(0, s.traceState.split(',').length), 'whole members only');

    // One line of 100 members (3100 bytes, over what a request keeps before capping): the
    // leading members that fit still come through, not nothing.
    const many = Array.from({ length: 100 }, (_, i) => `k${String(i).padStart(2, '0')}=${'v'.repeat(26)}`);
    trace = rid(16);
    r = await post(srv, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, { ...H, traceparent: tp(trace), tracestate: many.join(',') });
    assert.equal(r.status, 200, r.text);
    [s] = await c.waitSpans((x) => x.traceId === trace);
    assert.ok(s.traceState && s.traceState.length > 400, `kept: ${s.traceState}`);
    assert.deepEqual(s.traceState.split(','), many.slice(0, s.traceState.split(',').length), 'whole members only');
  } finally {
    await srv.stop();
    await c.stop();
  }
});

test('an OAuth endpoint asked with a method of the client\'s making: the span is named HTTP', async () => {
  const c = await startCollector();
  const { srv, issuer } = await startOAuth(otelEnv(c));
  try {
    const r = await fetch(`${issuer}/token`, { method: 'BREWCOFFEE', headers: { traceparent: tp(rid(16)) } });
    assert.ok(r.status >= 400, String(r.status));
    const [s] = await c.waitSpans((x) => x.attributes['http.route'] === '/token');
    assert.equal(s.name, 'HTTP /token');
    assert.equal(s.attributes['http.request.method'], '_OTHER');
  } finally {
    await srv.stop();
    await c.stop();
  }
});
