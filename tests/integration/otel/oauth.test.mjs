// With OAuth on, the authorization server's endpoints get SERVER spans of their own (route and
// status, a caller's traceparent as parent); /mcp keeps its MCP span.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startOAuth, registerClient } from '../../lib/lib.mjs';
import { startCollector } from '../../lib/otlp.mjs';

test('/register and /token answer under SERVER spans', async () => {
  const c = await startCollector();
  const { srv, issuer } = await startOAuth({ OTEL_EXPORTER_OTLP_ENDPOINT: c.endpoint, OTEL_BSP_SCHEDULE_DELAY: '20' });
  try {
    const r = await registerClient(issuer, { redirect_uris: ['http://127.0.0.1:9/cb'], client_name: 'otel', token_endpoint_auth_method: 'none' });
    assert.equal(r.status, 201);
    const trace = randomBytes(16).toString('hex'), parent = randomBytes(8).toString('hex');
    const t = await fetch(`${issuer}/token`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded', traceparent: `00-${trace}-${parent}-01` },
      body: 'grant_type=authorization_code&code=nope&client_id=x' });
    assert.ok(t.status >= 400, String(t.status));
    const [reg] = await c.waitSpans((s) => s.name === 'POST /register');
    assert.equal(reg.kind, 2);
    assert.equal(reg.attributes['http.route'], '/register');
    assert.equal(reg.attributes['http.response.status_code'], 201);
    assert.equal(reg.attributes['mcp.method.name'], undefined);
    const [tok] = await c.waitSpans((s) => s.name === 'POST /token');
    assert.equal(tok.traceId, trace);
    assert.equal(tok.parentSpanId, parent);
    assert.equal(tok.attributes['http.response.status_code'], t.status);
  } finally {
    await srv.stop();
    await c.stop();
  }
});
