// fake-example-upstreams.mjs — stand-ins for two of the four upstreams behind the Hermes MCP
// Gateway, so that contrib/gateway/hermes-gateway.yaml (the worked example of that contract) can be
// run as it is by tests/integration/gateway/gwexample.test.mjs. (Its hermes and memory upstreams
// are the real contrib/hermes-tools over the fake Hermes of tests/fakes/hermes/.) Each role
// advertises the real upstream's tool names with plausible input schemas. A call answers a JSON
// text echoing the tool and its arguments (what reached the upstream is then visible to the test).
//   node fake-example-upstreams.mjs ROLE [--calls FILE] [--http PORT] [-- ARGS...]
//   ROLE      context  Context Mode: the 11 ctx_* tools (over Streamable HTTP with --http PORT)
//             graph    Samchon Graph: exactly inspect_code_graph
//   --calls FILE   append each tools/call's tool name to FILE
//   -- ARGS        the arguments the real upstream would get (the example's args:); they must
//                  equal the role's real command line, else the fake exits 2 saying so
// Stdio is newline-delimited JSON-RPC, protocol 2025-11-25.
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';

const argv = process.argv.slice(2);
const role = argv[0];
const dash = argv.indexOf('--');
const opts = dash >= 0 ? argv.slice(1, dash) : argv.slice(1);
const passed = dash >= 0 ? argv.slice(dash + 1) : [];
const opt = (name) => { const i = opts.indexOf(name); return i >= 0 ? opts[i + 1] : undefined; };

const str = (description) => ({ type: 'string', description });
const int = (description) => ({ type: 'integer', description });
const bool = (description) => ({ type: 'boolean', description });
const obj = (properties, required = []) => ({ type: 'object', properties, required });

const CONTEXT = {
  ctx_execute: obj({ language: str('shell, javascript, python, ...'), code: str('code to run'),
    timeout: int('milliseconds') }, ['language', 'code']),
  ctx_execute_file: obj({ path: str('file to process'), language: str('language'),
    code: str('code that reads FILE_CONTENT') }, ['path', 'language', 'code']),
  ctx_index: obj({ content: str('text to index'), path: str('file to index'),
    source: str('label') }),
  ctx_search: obj({ queries: { type: 'array', items: { type: 'string' } }, source: str('label'),
    limit: int('results per query') }, ['queries']),
  ctx_fetch_and_index: obj({ url: str('page to fetch'), source: str('label') }, ['url']),
  ctx_batch_execute: obj({ commands: { type: 'array', items: obj({ label: str('label'),
    command: str('shell command') }) }, queries: { type: 'array', items: { type: 'string' } } },
  ['commands']),
  ctx_stats: obj({}),
  ctx_doctor: obj({}),
  ctx_upgrade: obj({}),
  ctx_purge: obj({ confirm: bool('really delete the index') }),
  ctx_insight: obj({ port: int('dashboard port') }),
};

const GRAPH = {
  inspect_code_graph: obj({ cwd: str('absolute path inside the project'),
    query: str('symbol, file or question'), depth: int('hops') }, ['cwd', 'query']),
};

const ROLES = {
  context: { tools: CONTEXT, args: [] },
  graph: { tools: GRAPH, args: [] },
};

function die(why) {
  process.stderr.write(`fake-example-upstreams ${role}: ${why}\n`);
  process.exit(2);
}

const spec = ROLES[role];
if (!spec) die('role must be context or graph');
if (JSON.stringify(passed) !== JSON.stringify(spec.args))
  die(`arguments ${JSON.stringify(passed)}, the real upstream takes ${JSON.stringify(spec.args)}`);

const tools = Object.entries(spec.tools).map(([name, inputSchema]) => ({
  name, description: `${name} (fake of the ${role} upstream)`, inputSchema }));

// One JSON-RPC request in, its answer out (null for a notification).
function answer(msg) {
  if (msg.id === undefined) return null;
  if (msg.method === 'initialize') {
    return { jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-11-25',
      capabilities: { tools: {} }, serverInfo: { name: `fake-${role}`, version: '1.0.0' } } };
  }
  if (msg.method === 'tools/list') return { jsonrpc: '2.0', id: msg.id, result: { tools } };
  if (msg.method !== 'tools/call')
    return { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } };
  const { name, arguments: args = {} } = msg.params;
  if (opt('--calls')) appendFileSync(opt('--calls'), `${name}\n`);
  if (!spec.tools[name])
    return { jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: `Unknown tool: ${name}` } };
  const text = JSON.stringify({ success: true, upstream: role, tool: name, arguments: args });
  return { jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text }] } };
}

if (opt('--http')) serveHttp(Number(opt('--http')));
else createInterface({ input: process.stdin }).on('line', (line) => {
  const reply = answer(JSON.parse(line));
  if (reply) process.stdout.write(JSON.stringify(reply) + '\n');
});

// Streamable HTTP as Context Mode serves it: a session from initialize, JSON answers.
function serveHttp(port) {
  const sessions = new Set();
  createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      const sid = req.headers['mcp-session-id'];
      if (req.method === 'DELETE') { sessions.delete(sid); res.writeHead(200); return res.end(); }
      const msg = body ? JSON.parse(body) : {};
      const headers = { 'Content-Type': 'application/json' };
      if (msg.method === 'initialize') {
        const id = randomUUID();
        sessions.add(id);
        headers['Mcp-Session-Id'] = id;
      } else if (!sessions.has(sid)) {
        res.writeHead(sid === undefined ? 400 : 404);
        return res.end('unknown session');
      }
      const reply = answer(msg);
      if (!reply) { res.writeHead(202); return res.end(); }
      res.writeHead(200, headers);
      res.end(JSON.stringify(reply));
    });
  }).listen(port, '127.0.0.1', () => console.error(`fake-example-upstreams context listening on ${port}`));
}
