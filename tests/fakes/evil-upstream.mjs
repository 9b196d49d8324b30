// evil-upstream.mjs — a Streamable HTTP upstream (2025-11-25) whose answer streams try to abuse
// the gateway's resumption (httpup.c): each tools/call answer is an SSE stream that closes
// before the result, and each GET (a resume) closes at once too, in one of these modes:
//   zero    `retry: 0` and a new id with an empty data line on every stream: a resume storm
//           unless delays have a floor and data-less events do not count as progress;
//   chatty  each resume brings a real message (notifications/message) with a new id, never the
//           answer: only a cap on resumes per call ends it before the call's timeout;
//   longid  an id of 203 bytes (over the decoder's id size): must not be sent cut short;
//   crid    an id with a CR in it (a line end: the id is "abc", the rest another field);
//   ctlid   an id with a control character (0x01): not put in a Last-Event-ID header;
//   idonly  the priming event has an id and no data (WHATWG: it still sets the last event id);
//   open    the answer (text "ok") in an event, then the stream stays open (the spec's SHOULD
//           close, not MUST): the gateway must close it itself, or its connections run out.
// Usage: node evil-upstream.mjs --port N --mode MODE --record FILE (one JSON line per request).
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
const args = process.argv.slice(2);
const opt = (n) => { const i = args.indexOf(n); return i >= 0 ? args[i + 1] : undefined; };
const mode = opt('--mode');
const rec = (o) => appendFileSync(opt('--record'), JSON.stringify({ t: Date.now(), ...o }) + '\n');
let n = 0;
const LONG = 'L'.repeat(200) + 'END';
// insecureHTTPParser: a header with a control character is recorded, not refused by Node.
createServer({ insecureHTTPParser: true }, async (req, res) => {
  let text = '';
  for await (const c of req) text += c;
  if (req.method === 'GET') {
    rec({ method: 'GET', lei: req.headers['last-event-id'] ?? null, lei_len: (req.headers['last-event-id'] ?? '').length, hdrs: Object.keys(req.headers) });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (mode === 'zero') return res.end(`retry: 0\nid: g${++n}\ndata: \n\n`);
    if (mode === 'chatty') {
      const note = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `still here ${++n}` } };
      return res.end(`retry: 0\nid: g${n}\ndata: ${JSON.stringify(note)}\n\n`);
    }
    return res.end(`retry: 0\n`);
  }
  if (req.method === 'DELETE') { res.writeHead(200); return res.end(); }
  const m = JSON.parse(text);
  if (m.method === 'initialize') {
    res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'sess1' });
    return res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'evil', version: '1' } } }));
  }
  if (m.id === undefined) { res.writeHead(202); return res.end(); }
  if (m.method === 'tools/list') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'spin', inputSchema: { type: 'object' } }] } }));
  }
  if (m.method === 'tools/call') {
    rec({ method: 'POST', call: m.id });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (mode === 'zero' || mode === 'chatty') return res.end('retry: 0\nid: p0\ndata: \n\n');
    if (mode === 'longid') return res.end(`retry: 50\nid: ${LONG}\ndata: \n\n`);
    if (mode === 'crid') return res.end('retry: 50\nid: abc\rX-Injected: yes\ndata: \n\n');
    if (mode === 'ctlid') return res.end('retry: 50\nid: abc\x01def\ndata: \n\n');
    if (mode === 'idonly') return res.end('retry: 50\nid: only1\n\n');
    if (mode === 'open') {
      res.on('close', () => rec({ closed: m.id }));
      return res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'ok' }] } })}\n\n`);
    }
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no' } }));
}).listen(Number(opt('--port')), '127.0.0.1', () => process.stderr.write(`listening on ${opt('--port')}\n`));
