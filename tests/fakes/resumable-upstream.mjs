// resumable-upstream.mjs — a real MCP SDK 1.x Streamable HTTP server with resumability on (the
// SDK's InMemoryEventStore), for the gateway's resumption tests (tests/integration/gateway/gwresume.test.mjs).
// Its tools close the SSE stream answering the call before the result, the way a server switches a
// long call to polling (the SDK's closeSSEStream) or a proxy's idle timeout cuts it; a careful
// client then resumes with GET + Last-Event-ID and gets the rest from the event store.
//   tool pause    progress 1, closes the stream, waits arguments.ms (default 300), progress 2,
//                 then answers "resumed: " + arguments.message
//   tool flaky    closes the stream every 100 ms and never answers (each resume gets nothing new)
//   tool vanish   closes the stream, then this process exits (the resume finds no server)
//   tool ask      closes the stream, then asks the client elicitation/create (message
//                 arguments.message) and answers "answer: " + the JSON of the client's result
// argv: --port N (0: any; prints "listening on PORT" on stderr)  --retry MS (the priming event's
//       retry: field; none by default)  --record FILE (one JSON line per HTTP request: t (ms since
//       the epoch), method, last_event_id, session, protocol; for the stream closes {t, closed};
//       for a notifications/cancelled {t, method: POST, cancelled: its requestId})
// The SDK is imported from the tools/ install by path: tests/fakes has no node_modules of its own.
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SDK = join(dirname(fileURLToPath(import.meta.url)),
  '../../tools/sdk/node_modules/@modelcontextprotocol/sdk/dist/esm');
const load = (p) => import(pathToFileURL(join(SDK, p)).href);
const { Server } = await load('server/index.js');
const { StreamableHTTPServerTransport } = await load('server/streamableHttp.js');
const { InMemoryEventStore } = await load('examples/shared/inMemoryEventStore.js');
const { CallToolRequestSchema, ListToolsRequestSchema, ElicitResultSchema, isInitializeRequest } =
  await load('types.js');

const args = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const record = (o) => { if (opt('--record')) appendFileSync(opt('--record'), JSON.stringify({ t: Date.now(), ...o }) + '\n'); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const retryInterval = opt('--retry') !== undefined ? Number(opt('--retry')) : undefined;

const TOOLS = ['pause', 'flaky', 'vanish', 'ask'].map((name) => ({ name, description: `resumable ${name}`,
  inputSchema: { type: 'object', properties: { message: { type: 'string' }, ms: { type: 'number' } } } }));

function mcpServer() {
  const server = new Server({ name: 'resumable-upstream', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const { name, arguments: a = {} } = req.params;
    const token = req.params._meta?.progressToken;
    const progress = (n) => token !== undefined && extra.sendNotification({ method: 'notifications/progress',
      params: { progressToken: token, progress: n, total: 2 } });
    const close = () => { record({ closed: name }); extra.closeSSEStream?.(); };
    // The event store orders ids by their millisecond, then at random: events a few ms apart.
    if (name === 'pause') {
      await sleep(20);
      await progress(1);
      await sleep(20); // the progress event is out before the stream closes
      close();
      await sleep(a.ms ?? 300);
      await progress(2);
      await sleep(20);
      return { content: [{ type: 'text', text: `resumed: ${a.message ?? ''}` }] };
    }
    if (name === 'flaky') {
      for (;;) { close(); await sleep(100); }
    }
    if (name === 'ask') {
      await sleep(20);
      close();
      await sleep(100);
      const answer = await extra.sendRequest({ method: 'elicitation/create', params: { message: a.message ?? 'go on?',
        requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } } }, ElicitResultSchema);
      return { content: [{ type: 'text', text: `answer: ${JSON.stringify(answer)}` }] };
    }
    if (name === 'vanish') {
      close();
      await sleep(50);
      process.exit(0);
    }
    throw new Error(`unknown tool ${name}`);
  });
  return server;
}

const transports = new Map(); // Mcp-Session-Id -> transport
const http = createServer(async (req, res) => {
  const session = req.headers['mcp-session-id'];
  record({ method: req.method, last_event_id: req.headers['last-event-id'] ?? null, session: session ?? null,
    protocol: req.headers['mcp-protocol-version'] ?? null });
  let body;
  if (req.method === 'POST') {
    let text = '';
    for await (const c of req) text += c;
    body = JSON.parse(text);
    if (body.method === 'notifications/cancelled') record({ method: 'POST', cancelled: body.params?.requestId ?? true });
  }
  let transport = session ? transports.get(session) : undefined;
  if (!transport && req.method === 'POST' && isInitializeRequest(body)) {
    transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(),
      eventStore: new InMemoryEventStore(), retryInterval,
      onsessioninitialized: (id) => transports.set(id, transport) });
    await mcpServer().connect(transport);
  }
  if (!transport) {
    res.writeHead(session ? 404 : 400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no such session' } }));
    return;
  }
  await transport.handleRequest(req, res, body);
});
http.listen(Number(opt('--port') ?? 0), '127.0.0.1', () => {
  process.stderr.write(`resumable-upstream listening on ${http.address().port}\n`);
});
