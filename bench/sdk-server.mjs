// The peer "what a user would pick instead": an MCP server on the official TypeScript SDK
// (@modelcontextprotocol/sdk 1.32.x), the way its documentation builds one: an Express app from
// createMcpExpressApp (localhost Host check, JSON body parser), a bearer check, and per request a
// fresh McpServer plus a stateless StreamableHTTPServerTransport with JSON responses (the SDK
// refuses to reuse a stateless transport).
//
// It exposes the same tools as hermes-mcp (the bridge's eight): names, titles, descriptions,
// annotations and schemas are taken from hermes-mcp's own tools/list at start-up and turned into
// zod schemas (z.fromJSONSchema), so the SDK validates arguments and converts schemas back to
// JSON Schema as it would for a hand-written server. hermes_result answers from the same task
// directory; the other tools answer a fixed result.
//
// bench/run.sh copies this file next to its node_modules (bench/.work/node/) and runs it with:
//   BENCH_TOKEN (bearer token), HERMES_URL (hermes-mcp's /mcp), TASKS_DIR, PORT (0: any free one)
// Prints "sdk-server: listening on http://127.0.0.1:PORT/mcp" once ready.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { timingSafeEqual } from 'node:crypto';
import * as z from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';

const { BENCH_TOKEN: token, HERMES_URL: hermesUrl, TASKS_DIR: tasksDir } = process.env;
const port = Number(process.env.PORT || 0);
if (!token || !hermesUrl || !tasksDir) {
  console.error('sdk-server: BENCH_TOKEN, HERMES_URL and TASKS_DIR are required');
  process.exit(2);
}

// The tool definitions, exactly as hermes-mcp lists them.
const listed = await fetch(hermesUrl, {
  method: 'POST',
  headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
    Authorization: `Bearer ${token}` },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
}).then((r) => r.json());
// hermes-mcp's outputSchema is anyOf [success shape, error shape]; the SDK's McpServer takes an
// object schema, so it gets the success shape.
const success = (s) => (s?.anyOf ? s.anyOf[0] : s);
const tools = listed.result.tools.map((t) => ({
  ...t,
  outputSchema: success(t.outputSchema),
  zodInput: z.fromJSONSchema(t.inputSchema),
  zodOutput: t.outputSchema ? z.fromJSONSchema(success(t.outputSchema)) : undefined,
}));

const text = (obj, isError = false) => ({
  content: [{ type: 'text', text: JSON.stringify(obj) }], structuredContent: obj, isError,
});

// hermes_result: the stored result.json, reduced to the public fields like hermes-mcp does.
async function hermesResult({ id }) {
  let r;
  try {
    r = JSON.parse(await readFile(join(tasksDir, id, 'result.json'), 'utf8'));
  } catch (e) {
    if (e.code === 'ENOENT') return text({ error: 'not_found', message: `no task with id '${id}'` }, true);
    return text({ error: 'upstream_error', message: `result.json of task '${id}' is unreadable` }, true);
  }
  const pub = { id: r.id, status: r.status, summary: r.summary, artifacts: r.artifacts,
    next_steps: r.next_steps };
  if (r.details !== undefined) pub.details = r.details;
  if (r.run_id !== undefined) pub.run_id = r.run_id;
  return text(pub);
}

// Any other tool: a fixed result that satisfies its output schema's required fields.
function fixedResult(tool) {
  const out = {};
  const props = tool.outputSchema?.properties ?? {};
  for (const k of tool.outputSchema?.required ?? []) {
    const type = props[k]?.type;
    out[k] = type === 'array' ? [] : type === 'boolean' ? false : type === 'integer' ? 0
      : type === 'object' ? {} : 'fixed';
  }
  return async () => text(out);
}

function buildServer() {
  const server = new McpServer({ name: 'sdk-bench-server', version: '1.0.0' });
  for (const t of tools) {
    server.registerTool(t.name, {
      title: t.title, description: t.description, annotations: t.annotations,
      inputSchema: t.zodInput, outputSchema: t.zodOutput,
    }, t.name === 'hermes_result' ? hermesResult : fixedResult(t));
  }
  return server;
}

const expected = Buffer.from(`Bearer ${token}`);
function bearer(req, res, next) {
  const got = Buffer.from(req.get('authorization') ?? '');
  if (got.length === expected.length && timingSafeEqual(got, expected)) return next();
  res.status(401).json({ jsonrpc: '2.0', error: { code: -32001, message: 'unauthorized' }, id: null });
}

const app = createMcpExpressApp();
app.post('/mcp', bearer, async (req, res) => {
  const server = buildServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined,
    enableJsonResponse: true });
  res.on('close', () => { transport.close(); server.close(); });
  try {
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  } catch (e) {
    console.error('sdk-server:', e);
    if (!res.headersSent) {
      res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: 'internal error' }, id: null });
    }
  }
});

const listener = app.listen(port, '127.0.0.1', () => {
  console.log(`sdk-server: listening on http://127.0.0.1:${listener.address().port}/mcp`);
});
process.on('SIGTERM', () => listener.close(() => process.exit(0)));
