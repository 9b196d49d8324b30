// A collector that is dead, failing or hanging costs dropped spans (counted on /metrics), never
// a slow answer: the export runs on its own thread behind a bounded queue.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startHermes, post } from '../../lib/lib.mjs';
import { startCollector, deadCollector } from '../../lib/otlp.mjs';

const H = { 'MCP-Protocol-Version': '2025-11-25' };
const counter = (text, name) => Number((text.match(new RegExp(`^${name} (\\S+)$`, 'm')) || [])[1]);
async function metrics(srv) {
  return (await fetch(`${srv.base}/metrics`, { headers: srv.auth })).text();
}

// The slowest of n sequential tools/list answers, in ms.
async function slowest(srv, n) {
  let worst = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await post(srv, { jsonrpc: '2.0', id: i, method: 'tools/list' }, H);
    assert.equal(r.status, 200);
    worst = Math.max(worst, performance.now() - t0);
  }
  return worst;
}

test('a dead collector: answers stay fast, failures and dropped spans are counted', async () => {
  const dead = await deadCollector();
  const srv = await startHermes({ OTEL_EXPORTER_OTLP_ENDPOINT: dead.endpoint, OTEL_BSP_SCHEDULE_DELAY: '10' });
  try {
    const worst = await slowest(srv, 40);
    assert.ok(worst < 500, `slowest answer ${worst} ms`);
    let m;
    for (let i = 0; i < 200; i++) {
      m = await metrics(srv);
      if (counter(m, 'hermes_mcp_otel_spans_dropped_total') >= 40) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.ok(counter(m, 'hermes_mcp_otel_spans_dropped_total') >= 40, m);
    assert.ok(counter(m, 'hermes_mcp_otel_export_failures_total') >= 1);
    assert.equal(counter(m, 'hermes_mcp_otel_spans_exported_total'), 0);
    const lines = srv.proc.stderrText.split('\n').filter((l) => l.includes('trace export failed'));
    assert.equal(lines.length, 1, `one log line a minute, not one per export:\n${lines.join('\n')}`);
    assert.ok(counter(m, 'hermes_mcp_otel_export_failures_total') > 1, 'several exports failed');
    assert.ok(!lines[0].includes(String(dead.port)), 'the collector URL is not logged');
  } finally {
    await srv.stop();
  }
});

test('a collector answering 500: counted as failures, not retried', async () => {
  const c = await startCollector({ mode: 'fail' });
  const srv = await startHermes({ OTEL_EXPORTER_OTLP_ENDPOINT: c.endpoint, OTEL_BSP_SCHEDULE_DELAY: '10' });
  try {
    await slowest(srv, 5);
    let m;
    for (let i = 0; i < 200; i++) {
      m = await metrics(srv);
      if (counter(m, 'hermes_mcp_otel_spans_dropped_total') >= 5) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.ok(counter(m, 'hermes_mcp_otel_spans_dropped_total') >= 5, m);
    const posts = c.requests.length;
    assert.ok(posts >= 1 && posts <= 5, `${posts} exports for 5 spans: none retried`);
  } finally {
    await srv.stop();
    await c.stop();
  }
});

test('a hanging collector: answers stay fast, the full queue drops spans, the server stops in time', async () => {
  const c = await startCollector({ mode: 'hang' });
  const srv = await startHermes({
    OTEL_EXPORTER_OTLP_ENDPOINT: c.endpoint, OTEL_BSP_SCHEDULE_DELAY: '10',
    OTEL_BSP_MAX_QUEUE_SIZE: '8', OTEL_EXPORTER_OTLP_TIMEOUT: '60000',
  });
  try {
    const worst = await slowest(srv, 60);
    assert.ok(worst < 500, `slowest answer ${worst} ms`);
    const m = await metrics(srv);
    assert.ok(counter(m, 'hermes_mcp_otel_spans_dropped_total') >= 50, m);
    assert.ok(c.requests.length >= 1, 'the export reached the collector and hangs there');
    const t0 = Date.now();
    await srv.stop();
    assert.ok(Date.now() - t0 < 8000, `stopped in ${Date.now() - t0} ms`);
    // Within its own bound: the exporter left libcurl and was joined, not left behind.
    assert.doesNotMatch(srv.proc.stderrText, /did not stop in time/);
  } finally {
    await srv.stop().catch(() => {});
    await c.stop();
  }
});
