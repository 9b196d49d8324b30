// fake-example-upstreams.mjs — stand-ins for the four upstreams behind the Hermes MCP Gateway, so
// that contrib/gateway/hermes-gateway.yaml (the worked example of that contract) can be run as it
// is by tests/integration/gateway/gwexample.test.mjs. Each role advertises the real upstream's tool names
// with plausible input schemas, plus the tools the example must keep hidden, so a mistake in the
// example's allowlist shows up as an extra or missing tool. A call answers a JSON text echoing the
// tool and its arguments (what reached the upstream is then visible to the test).
//   node fake-example-upstreams.mjs ROLE [--calls FILE] [--http PORT] [-- ARGS...]
//   ROLE      context  Context Mode: the 11 ctx_* tools (over Streamable HTTP with --http PORT)
//             hermes   Hermes native tools: the 23 curated ones, the 3 guarded capabilities,
//                      and the ones the contract hides (browser_exec, browser_cdp, computer_use,
//                      raw memory/todo, TTS, Kanban, code execution, messaging)
//             graph    Samchon Graph: exactly inspect_code_graph
//             memory   the Honcho memory adapter: the 5 memory_* tools
//   --calls FILE   append each tools/call's tool name to FILE
//   --fail TOOL    TOOL answers a successful result holding a nested provider error, as
//                  Firecrawl's tools do while the Nous gateway's auth is not usable
//   -- ARGS        the arguments the real upstream would get (the example's args:); they must
//                  equal the role's real command line, else the fake exits 2 saying so
// Stdio is newline-delimited JSON-RPC, protocol 2025-11-25. The hermes role also exits 2 when
// HERMES_HOME or CAMOFOX_URL is missing from its environment (the example passes both).
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

const BROWSER = {
  browser_navigate: obj({ url: str('address') }, ['url']),
  browser_click: obj({ ref: str('element ref from a snapshot') }, ['ref']),
  browser_type: obj({ ref: str('element ref'), text: str('text to type') }, ['ref', 'text']),
  browser_press: obj({ key: str('key name') }, ['key']),
  browser_snapshot: obj({ full: bool('whole page') }),
  browser_scroll: obj({ direction: { type: 'string', enum: ['up', 'down'] } }, ['direction']),
  browser_back: obj({}),
  browser_get_images: obj({}),
  browser_console: obj({ clear: bool('clear after reading') }),
  browser_vision: obj({ question: str('what to look for'), annotate: bool('label elements') },
    ['question']),
};

const HERMES = {
  web_search: obj({ query: str('search query') }, ['query']),
  web_extract: obj({ urls: { type: 'array', items: { type: 'string' }, maxItems: 5 } }, ['urls']),
  vision_analyze: obj({ image_url: str('image URL or path'), question: str('question') },
    ['image_url', 'question']),
  skills_list: obj({ category: str('filter') }),
  skill_view: obj({ name: str('skill'), file_path: str('file inside the skill') }, ['name']),
  read_file: obj({ path: str('file'), offset: int('first line'), limit: int('lines') }, ['path']),
  write_file: obj({ path: str('file'), content: str('whole content') }, ['path', 'content']),
  patch: obj({ path: str('file'), old_string: str('text to find'), new_string: str('replacement'),
    replace_all: bool('every occurrence') }, ['path', 'old_string', 'new_string']),
  search_files: obj({ pattern: str('regex or glob'), target: { type: 'string',
    enum: ['content', 'files'] }, path: str('directory'), file_glob: str('filter'),
  limit: int('results') }, ['pattern']),
  terminal: obj({ command: str('shell command'), background: bool('run in background'),
    timeout: int('seconds'), workdir: str('directory') }, ['command']),
  process: obj({ action: { type: 'string', enum: ['list', 'poll', 'log', 'wait', 'kill', 'write'] },
    session_id: str('process session'), data: str('stdin') }, ['action']),
  image_generate: obj({ prompt: str('image prompt'), aspect_ratio: { type: 'string',
    enum: ['landscape', 'square', 'portrait'] } }, ['prompt']),
  video_analyze: obj({ video_url: str('video URL or path'), question: str('question') },
    ['video_url', 'question']),
  ...BROWSER,
  // The guarded capabilities (the policy layer adds confirmed/approval on top of these).
  session_search: obj({ query: str('full-text query'), limit: int('sessions'),
    role_filter: str('user, assistant, tool') }, ['query']),
  delegate_task: obj({ goal: str('single task'), context: str('background'),
    tasks: { type: 'array', items: obj({ goal: str('task'), context: str('background') }) },
    toolsets: { type: 'array', items: { type: 'string' } }, max_iterations: int('per child') }),
  cronjob: obj({ action: { type: 'string', enum: ['list', 'create', 'update', 'pause', 'resume',
    'remove', 'run'] }, job_id: str('job'), name: str('name'), prompt: str('what to run'),
  schedule: str('cron expression or interval'), deliver: str('where results go'),
  model: str('model override'), provider: str('provider override'), base_url: str('endpoint'),
  script: str('script instead of an agent'), no_agent: { type: 'boolean', description: 'run the script without an agent' },
  monitor: str('watch a command instead of running an agent') }, ['action']),
};

// What the contract says must stay hidden: never in the example's allowlist.
const HERMES_HIDDEN = {
  browser_exec: obj({ code: str('JavaScript to run in the page') }, ['code']),
  browser_cdp: obj({ method: str('CDP method'), params: obj({}) }, ['method']),
  computer_use: obj({ action: str('click, type, screenshot'), x: int('x'), y: int('y') }, ['action']),
  memory: obj({ action: str('add, replace, remove'), target: str('memory or user'),
    content: str('entry') }, ['action']),
  todo: obj({ todos: { type: 'array', items: obj({}) } }),
  text_to_speech: obj({ text: str('text to speak') }, ['text']),
  kanban_list: obj({ board: str('board') }),
  kanban_update: obj({ card: str('card'), column: str('column') }, ['card']),
  execute_code: obj({ code: str('Python with tool access') }, ['code']),
  send_message: obj({ target: str('platform:channel'), message: str('text') }, ['message']),
};

const GRAPH = {
  inspect_code_graph: obj({ cwd: str('absolute path inside the project'),
    query: str('symbol, file or question'), depth: int('hops') }, ['cwd', 'query']),
};

const MEMORY = {
  memory_profile: obj({}),
  memory_search: obj({ query: str('what to find'), limit: int('results') }, ['query']),
  memory_context: obj({ query: str('topic'), tokens: int('budget') }),
  memory_reasoning: obj({ question: str('question about the user') }, ['question']),
  memory_conclude: obj({ content: str('the conclusion'), kind: { type: 'string',
    enum: ['preference', 'decision', 'architecture', 'project_state', 'temporary'] },
  action: { type: 'string', enum: ['create', 'list', 'delete'] }, id: str('conclusion id') }),
};

const ROLES = {
  context: { tools: CONTEXT, args: [] },
  hermes: { tools: { ...HERMES, ...HERMES_HIDDEN }, args: ['mcp', 'serve'] },
  graph: { tools: GRAPH, args: [] },
  memory: { tools: MEMORY, args: [] },
};

function die(why) {
  process.stderr.write(`fake-example-upstreams ${role}: ${why}\n`);
  process.exit(2);
}

const spec = ROLES[role];
if (!spec) die('role must be context, hermes, graph or memory');
if (JSON.stringify(passed) !== JSON.stringify(spec.args))
  die(`arguments ${JSON.stringify(passed)}, the real upstream takes ${JSON.stringify(spec.args)}`);
if (role === 'hermes' && (!process.env.HERMES_HOME || !process.env.CAMOFOX_URL))
  die('HERMES_HOME and CAMOFOX_URL must be in the environment');

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
  const text = JSON.stringify(name === opt('--fail')
    ? { success: false, error: 'Firecrawl: Nous gateway authentication required', upstream: role, tool: name }
    : { success: true, upstream: role, tool: name, arguments: args });
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
