// A real OTLP/HTTP trace receiver for the tests: an http server on 127.0.0.1 that takes
// POST /v1/traces, decodes protobuf bodies with the official OpenTelemetry JS packages
// (@opentelemetry/otlp-transformer's generated protobufjs root; scripts/node-tools.sh otel)
// and JSON bodies as JSON, and keeps every span with its resource. mode: 'ok' (200), 'fail'
// (500), 'hang' (never answers). deadCollector() is a port where nothing listens.
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ROOT, freePort, until } from './lib.mjs';

const require = createRequire(import.meta.url);
const root = require(join(ROOT, 'tools/otel/node_modules/@opentelemetry/otlp-transformer/build/src/generated/root.js'));
const Request = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

const hex = (b) => Buffer.from(b || []).toString('hex');

// An AnyValue (protobuf object or JSON mapping) as a plain JS value.
function anyValue(v) {
  if (v == null) return undefined;
  if (v.stringValue != null) return v.stringValue;
  if (v.boolValue != null) return v.boolValue;
  if (v.intValue != null) return Number(v.intValue);
  if (v.doubleValue != null) return v.doubleValue;
  return undefined;
}
const attrs = (list) => Object.fromEntries((list || []).map((kv) => [kv.key, anyValue(kv.value)]));

// One span, the same shape from either encoding: ids as lowercase hex, times as BigInt.
function normalise(span, resource, scope, json) {
  const id = (v) => (json ? (v || '') : hex(v));
  return {
    name: span.name,
    traceId: id(span.traceId),
    spanId: id(span.spanId),
    parentSpanId: id(span.parentSpanId),
    traceState: span.traceState || '',
    flags: span.flags || 0,
    kind: span.kind,
    start: BigInt(String(span.startTimeUnixNano)),
    end: BigInt(String(span.endTimeUnixNano)),
    attributes: attrs(span.attributes),
    status: { code: span.status?.code || 0, message: span.status?.message || '' },
    resource,
    scope,
  };
}

function decode(body, contentType) {
  const json = /json/.test(contentType || '');
  const req = json ? JSON.parse(body.toString('utf8'))
    : Request.toObject(Request.decode(body), { longs: String, bytes: Buffer, enums: Number, defaults: false });
  const spans = [];
  for (const rs of req.resourceSpans || []) {
    const resource = attrs(rs.resource?.attributes);
    for (const ss of rs.scopeSpans || []) {
      for (const s of ss.spans || []) spans.push(normalise(s, resource, ss.scope || {}, json));
    }
  }
  return spans;
}

export async function startCollector({ mode = 'ok' } = {}) {
  const spans = [];
  const requests = [];
  const hung = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      requests.push({ method: req.method, url: req.url, headers: req.headers, size: body.length });
      if (collector.mode === 'hang') { hung.push(res); return; }
      if (req.method !== 'POST' || req.url !== '/v1/traces') { res.writeHead(404).end(); return; }
      let got;
      try { got = decode(body, req.headers['content-type']); } catch (e) {
        res.writeHead(400).end(String(e));
        return;
      }
      if (collector.mode === 'fail') { res.writeHead(500).end('{}'); return; }
      spans.push(...got);
      res.writeHead(200, { 'Content-Type': req.headers['content-type'] || 'application/x-protobuf' }).end(
        /json/.test(req.headers['content-type'] || '') ? '{}' : '');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  const collector = {
    mode, spans, requests, port,
    endpoint: `http://127.0.0.1:${port}`,
    // Waits for spans matching pred (all spans when none), at least n of them.
    async waitSpans(pred = () => true, n = 1, ms = 8000) {
      return until(() => { const m = spans.filter(pred); return m.length >= n ? m : null; }, `${n} span(s)`, ms);
    },
    async stop() {
      for (const res of hung) res.destroy();
      server.closeAllConnections?.();
      await new Promise((r) => server.close(r));
    },
  };
  return collector;
}

// An endpoint where nothing listens: exports there are refused.
export async function deadCollector() {
  const port = await freePort();
  return { endpoint: `http://127.0.0.1:${port}`, port };
}
