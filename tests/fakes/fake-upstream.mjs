// fake-upstream.mjs — a misbehaving stdio MCP server for the gateway's recovery and readiness
// tests (tests/integration/gateway/gwrecover.test.mjs). It answers initialize and tools/list like a
// real server (newline-delimited JSON-RPC, protocol 2025-11-25) and misbehaves on request:
//   tool echo     answers {content: [{type: text, text: "Echo: MESSAGE"}]}
//   tool crash    exits (status 3) in the middle of the call, without answering
//   tool hang     never answers
//   tool garbage  writes a line that is not JSON, then nothing
//   tool slow     answers "slow done" after arguments.ms milliseconds (default 300)
//   tool huge     answers with a 5 MiB message, its id first ({"jsonrpc","id","result"})
//   tool hugetail the same with its id last, as the MCP SDKs order it ({"result","jsonrpc","id"})
//                 (both with arguments.spaced: written with ": " and ", " as Python's json.dumps)
// Options (argv): --starts FILE  append "start PID" to FILE at each start (restarts are counted)
//                 --hang-init    never answer initialize (a child stuck past connect_timeout)
//                 --detach       one more tool, detach: starts a command in the background from
//                                  a shell that exits at once (an orphan), answers its pid; the
//                                  orphan waits until the file named by arguments.message exists;
//                                  with "group:" before the path it is `timeout`, which leads its
//                                  own process group in our session
//                 --crash-init   exit (status 4) on initialize
//                 --templates    resources: none; resource templates: "fake://item/{id}" (read:
//                                the URI back as text) and "fake://tree{/path*}" (an operator)
//                 --template-item T  the first template is T instead of "fake://item/{id}"
//                 --crash-init-in NAME  the same when this process's cwd ends in /NAME (an
//                                  instance that never starts: gwinstances.test.mjs)
//                 --pages        tools/list in pages of 3 tools (nextCursor "page-N")
//                 --describe FILE  echo's description is FILE's text when FILE exists (read at
//                                  each tools/list: a test changes it between starts, a rug pull)
//                 --drop FILE    tools/list leaves out the tools named in FILE (one a line) when
//                                  FILE exists (a tool that disappears after a restart)
//                 --fail-starts N  exit (status 5) on initialize in starts 2 to N+1 (counted in
//                                  the --starts file; the first serves, so its tools are
//                                  exposed): drives the circuit breaker
//                 --calls FILE     append each tools/call's tool name to FILE
//                 --smoke-tools    three more tools for the smoke call (gwsmoke.test.mjs):
//   tool provider  a successful result whose text is JSON; while --provider-down FILE exists it
//                  is a nested provider error {"success": false, "error": "... sk-fake-SECRET ..."}
//   tool iserror   a result with isError: true
//   tool rpcerror  a JSON-RPC error
//                 --elicit         one more tool, for the relay of requests (gwrelay-modern):
//   tool ask       sends elicitation/create (message: arguments.message; with arguments.mode
//                  "url" a url-mode one; with "sample-tools" sampling/createMessage with tools
//                  instead) and answers the call
//                  with "answer: " + the JSON of the client's result (or "error: " + its error),
//                  arguments.ms milliseconds after the client's answer (default 0)
//                 --calls FILE also gets "cancelled ID" for each notifications/cancelled
//                 --prompts        offers prompts: prompts/get of "sampler" sends sampling/createMessage
//                                  and answers with "sampled: " + the JSON of the client's
//                                  result (or error) as its one message
//                 --huge-request   one more tool, for an oversized server->client request:
//   tool hugeask   sends a 5 MiB sampling/createMessage whose id is the id of this very call (a
//                  pending call's id in the gateway's id space), and answers the call with
//                  "answered: " + the JSON of the gateway's error (or result) for it
//                 --where          one more tool for per-root instances (gwinstances.test.mjs):
//   tool where     answers JSON text {cwd, pid} of this process and arg (arguments.cwd as
//                  received) after arguments.ms (default 0), and not before the file
//                  arguments.gate exists when it is given (checked every 20 ms)
//                 --stowaway-in NAME  when this process's cwd ends in /NAME, tools/list also offers
//                                  a tool "stowaway" (an instance whose tools differ)
//                 --policy-tools   two tools with richer schemas for the argument policies
//                                  (gwpolicy.test.mjs), both answering "ok":
//   tool cronjob   {action, prompt, model, provider, base_url, delivery}, model required
//   tool memory    {kind, content, tags (array), note}
//   tool deploy    {target, options: {model, base_url, retries} (model and retries required),
//                  steps: [{name, model}] (both required)}, target and options required: names
//                  an argument policy drops, nested
//                 --received FILE  append each tools/call as one JSON line {name, arguments}
//                 --received-meta  those lines carry the call's params._meta too, as meta (the
//                                  trace context passed on: otel/gateway.test.mjs); with
//                                  --templates each resources/read gets a line {method, uri, meta}
//                 --ignore-sigterm FILE  SIGTERM only appends "sigterm PID" to FILE, and the
//                                  process outlives the end of its stdin (a child that must be
//                                  SIGKILLed: gwlife.test.mjs)
//                 --notify       one more tool, notify: sends notifications/tools/list_changed and
//                                  a notifications/message (level with a newline in it, data of
//                                  2000 "z" then "END"), then answers "notified"
//                 --flood          two more tools, for the stderr cap (gwlife.test.mjs):
//   tool flood     writes arguments.lines (default 5000) lines to stderr, then "last words
//                  PID" without a newline, and answers "flooded"
//   tool badbytes  writes "bad \xff\xfe bytes" and a 1401-byte line of "a" and 700 "é" (cut
//                  by the log's cap inside a character) to stderr, answers "written"
// Streamable HTTP mode (tests/integration/gateway/gwhttp.test.mjs): --http PORT serves POST/DELETE /mcp
// on 127.0.0.1:PORT instead of stdio, with sessions (Mcp-Session-Id from initialize; an unknown
// one gets 404, none gets 400); answers are JSON, or SSE for tool progress (progress events,
// then the answer) and with --sse for everything. More tools there:
//   tool progress  three notifications/progress (when the call has a progressToken), then "done"
//   tool hugesse   the 5 MiB answer as one SSE event
//   tool fail500   HTTP 500 (the upstream seems broken)
//                 --expire-after N  the session is forgotten after N tools/call (the next call
//                                   on it gets 404, like a restarted server: mcp-proxy #149)
//                 --record FILE     appends one JSON line per HTTP request: method, the JSON-RPC
//                                   method, id, tool, the headers that matter (traceparent and
//                                   tracestate among them), params._meta, the HTTP status
//                 --delete-delay MS a DELETE is recorded when it arrives (with t, ms since the
//                                   epoch) and answered MS later (the gateway's shutdown)
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';

const args = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
if (opt('--starts')) appendFileSync(opt('--starts'), `start ${process.pid}\n`);
if (opt('--ignore-sigterm')) {
  process.on('SIGTERM', () => appendFileSync(opt('--ignore-sigterm'), `sigterm ${process.pid}\n`));
  setInterval(() => {}, 1000); // alive after stdin ends
}

const asking = new Map(); // our elicitation/create id -> what to do with the client's answer
const send = (msg) => process.stdout.write(JSON.stringify(msg) + '\n');
const description = (name) => (name === 'echo' && opt('--describe') && existsSync(opt('--describe'))
  ? readFileSync(opt('--describe'), 'utf8') : `fake ${name}`);
const tool = (name) => ({ name, description: description(name),
  inputSchema: { type: 'object', properties: { message: { type: 'string' } } } });

if (opt('--http')) serveHttp(Number(opt('--http')));
else createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.method === 'initialize') {
    if (args.includes('--hang-init')) return;
    if (args.includes('--crash-init')) process.exit(4);
    if (opt('--crash-init-in') && process.cwd().endsWith(`/${opt('--crash-init-in')}`)) process.exit(4);
    const start = opt('--fail-starts') && readFileSync(opt('--starts'), 'utf8').trim().split('\n').length;
    if (start && start >= 2 && start <= Number(opt('--fail-starts')) + 1) process.exit(5);
    send({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-11-25',
      capabilities: { tools: {}, ...(args.includes('--prompts') ? { prompts: {} } : {}) },
      serverInfo: { name: 'fake-upstream', version: '1.0.0' } } });
  } else if (msg.method === 'resources/list' && args.includes('--templates')) {
    send({ jsonrpc: '2.0', id: msg.id, result: { resources: [] } });
  } else if (msg.method === 'resources/templates/list' && args.includes('--templates')) {
    send({ jsonrpc: '2.0', id: msg.id, result: { resourceTemplates: [
      { uriTemplate: opt('--template-item') ?? 'fake://item/{id}', name: 'item' }, { uriTemplate: 'fake://tree{/path*}', name: 'tree' }] } });
  } else if (msg.method === 'resources/read' && args.includes('--templates')) {
    if (opt('--received') && args.includes('--received-meta')) {
      appendFileSync(opt('--received'), JSON.stringify({ method: msg.method, uri: msg.params.uri, meta: msg.params._meta }) + '\n');
    }
    send({ jsonrpc: '2.0', id: msg.id, result: { contents: [{ uri: msg.params.uri, text: `read ${msg.params.uri}` }] } });
  } else if (msg.method === 'prompts/list' && args.includes('--prompts')) {
    send({ jsonrpc: '2.0', id: msg.id, result: { prompts: [{ name: 'sampler', description: 'asks for a sample' }] } });
  } else if (msg.method === 'prompts/get' && args.includes('--prompts')) {
    const sampleId = `sample-${msg.id}`;
    asking.set(sampleId, (answer) => send({ jsonrpc: '2.0', id: msg.id, result: { messages: [{ role: 'user',
      content: { type: 'text', text: `sampled: ${JSON.stringify(answer.error ?? answer.result)}` } }] } }));
    send({ jsonrpc: '2.0', id: sampleId, method: 'sampling/createMessage', params: { maxTokens: 10,
      messages: [{ role: 'user', content: { type: 'text', text: 'for the prompt' } }] } });
  } else if (msg.method === 'tools/list') {
    const all = ['echo', 'slow', 'crash', 'hang', 'garbage', 'huge', 'hugetail',
      ...(args.includes('--smoke-tools') ? ['provider', 'iserror', 'rpcerror'] : []),
      ...(opt('--stowaway-in') && process.cwd().endsWith(`/${opt('--stowaway-in')}`) ? ['stowaway'] : []),
      ...(args.includes('--elicit') ? ['ask'] : []),
      ...(args.includes('--huge-request') ? ['hugeask'] : []),
      ...(args.includes('--flood') ? ['flood', 'badbytes'] : []), ...(args.includes('--detach') ? ['detach'] : []),
      ...(args.includes('--notify') ? ['notify'] : [])].map(tool);
    if (opt('--extra-tool')) all.push(tool(opt('--extra-tool')));
    if (args.includes('--where')) all.push({ name: 'where', description: 'fake where',
      inputSchema: { type: 'object', properties: { cwd: { type: 'string' }, ms: { type: 'number' },
        gate: { type: 'string' } } } });
    if (args.includes('--policy-tools')) {
      const str = { type: 'string' };
      all.push({ name: 'cronjob', description: 'fake cronjob', inputSchema: { type: 'object',
        properties: { action: str, prompt: str, model: str, provider: str, base_url: str, delivery: str },
        required: ['action', 'model'] } });
      all.push({ name: 'memory', description: 'fake memory', inputSchema: { type: 'object',
        properties: { kind: str, content: str, tags: { type: 'array', items: str }, note: str } } });
      all.push({ name: 'deploy', description: 'fake deploy', inputSchema: { type: 'object',
        properties: { target: str,
          options: { type: 'object', properties: { model: str, base_url: str, retries: { type: 'integer' } },
            required: ['model', 'retries'] },
          steps: { type: 'array', items: { type: 'object', properties: { name: str, model: str },
            required: ['name', 'model'] } } },
        required: ['target', 'options'] } });
    }
    if (opt('--drop') && existsSync(opt('--drop'))) {
      const dropped = readFileSync(opt('--drop'), 'utf8').split('\n');
      all.splice(0, all.length, ...all.filter((t) => !dropped.includes(t.name)));
    }
    if (!args.includes('--pages')) {
      send({ jsonrpc: '2.0', id: msg.id, result: { tools: all } });
      return;
    }
    const from = Number((msg.params?.cursor ?? 'page-0').slice(5)) * 3;
    const page = { tools: all.slice(from, from + 3) };
    if (from + 3 < all.length) page.nextCursor = `page-${from / 3 + 1}`;
    send({ jsonrpc: '2.0', id: msg.id, result: page });
  } else if (msg.method === 'tools/call') {
    const name = msg.params.name;
    if (opt('--calls')) appendFileSync(opt('--calls'), `${name}\n`);
    if (opt('--received')) appendFileSync(opt('--received'), JSON.stringify({ name, arguments: msg.params.arguments,
      ...(args.includes('--received-meta') ? { meta: msg.params._meta } : {}) }) + '\n');
    const text = (t) => send({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: t }] } });
    if (name === 'provider') {
      const down = opt('--provider-down') && existsSync(opt('--provider-down'));
      text(JSON.stringify(down ? { success: false, error: 'provider rejected key sk-fake-SECRET' }
        : { success: true, results: [{ url: 'https://example.org', title: 'ok', error: null }] }));
    } else if (name === 'iserror') {
      send({ jsonrpc: '2.0', id: msg.id, result: { isError: true, content: [{ type: 'text',
        text: 'it broke with token sk-fake-SECRET' }] } });
    } else if (name === 'rpcerror') {
      send({ jsonrpc: '2.0', id: msg.id, error: { code: -32000, message: 'no sk-fake-SECRET' } });
    } else if (name === 'echo') {
      send({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text',
        text: `Echo: ${msg.params.arguments.message}` }] } });
    } else if (name === 'cronjob' || name === 'memory' || name === 'deploy') {
      text('ok');
    } else if (name === 'where') {
      const gate = msg.params.arguments?.gate;
      const answer = () => (gate && !existsSync(gate) ? setTimeout(answer, 20)
        : text(JSON.stringify({ cwd: process.cwd(), pid: process.pid, arg: msg.params.arguments?.cwd })));
      setTimeout(answer, msg.params.arguments?.ms ?? 0);
    } else if (name === 'slow') {
      setTimeout(() => send({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text',
        text: 'slow done' }] } }), msg.params.arguments?.ms ?? 300);
    } else if (name === 'ask') {
      const askId = `ask-${msg.id}`;
      asking.set(askId, (answer) => setTimeout(() => text(answer.error
        ? `error: ${JSON.stringify(answer.error)}` : `answer: ${JSON.stringify(answer.result)}`),
      msg.params.arguments?.ms ?? 0));
      const how = msg.params.arguments?.mode; // "url": url-mode elicitation; "sample-tools": sampling with tools
      if (how === 'sample-tools') send({ jsonrpc: '2.0', id: askId, method: 'sampling/createMessage', params: {
        maxTokens: 10, messages: [{ role: 'user', content: { type: 'text', text: 'use a tool' } }],
        tools: [{ name: 'lookup', inputSchema: { type: 'object' } }] } });
      else if (how === 'url') send({ jsonrpc: '2.0', id: askId, method: 'elicitation/create', params: {
        mode: 'url', message: 'sign in', url: 'https://example.org/sign-in', elicitationId: 'e-1' } });
      else send({ jsonrpc: '2.0', id: askId, method: 'elicitation/create', params: {
        message: msg.params.arguments?.message ?? 'ask', requestedSchema: { type: 'object',
          properties: { name: { type: 'string' } } } } });
    } else if (name === 'hugeask') {
      asking.set(msg.id, (answer) => text(`answered: ${JSON.stringify(answer.error ?? answer.result)}`));
      send({ jsonrpc: '2.0', id: msg.id, method: 'sampling/createMessage', params: { maxTokens: 10,
        messages: [{ role: 'user', content: { type: 'text', text: 'x'.repeat(5 * 1024 * 1024) } }] } });
    } else if (name === 'detach') { // a command that leaves its parent: `cmd &` in a shell
      const m = /^(group:)?(.+)$/.exec(msg.params.arguments?.message ?? '');
      const wait = `while [ ! -e "$1" ]; do sleep 0.05; done`;
      const cmd = m[1] ? `timeout 600 sh -c '${wait}' sh "$1"` : wait;
      const r = spawnSync('sh', ['-c', `${cmd} >/dev/null 2>&1 & echo $!`, 'sh', m[2]], { encoding: 'utf8' });
      text(r.stdout.trim());
    } else if (name === 'flood') {
      for (let i = 0; i < (msg.params.arguments?.lines ?? 5000); i++) process.stderr.write(`flood line ${i}\n`);
      process.stderr.write(`last words ${process.pid}`);
      text('flooded');
    } else if (name === 'notify') {
      send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      send({ jsonrpc: '2.0', method: 'notifications/message',
        params: { level: 'info\nINJECTED line', data: `${'z'.repeat(2000)}END` } });
      text('notified');
    } else if (name === 'badbytes') {
      process.stderr.write(Buffer.concat([Buffer.from('bad '), Buffer.from([0xff, 0xfe]), Buffer.from(' bytes\n')]));
      process.stderr.write(`a${'é'.repeat(700)}\n`);
      text('written');
    } else if (name === 'crash') {
      setTimeout(() => process.exit(3), 100);
    } else if (name === 'garbage') {
      process.stdout.write('this is not JSON\n');
    } else if (name === 'huge' || name === 'hugetail') {
      const result = { content: [{ type: 'text', text: 'x'.repeat(5 * 1024 * 1024) }] };
      const id = JSON.stringify(msg.id), r = JSON.stringify(result);
      if (msg.params.arguments?.spaced) // as Python's json.dumps writes it: ": " and ", "
        process.stdout.write(name === 'huge' ? `{"jsonrpc": "2.0", "id": ${id}, "result": ${r}}\n`
          : `{"result": ${r}, "jsonrpc": "2.0", "id": ${id} }\n`);
      else send(name === 'huge' ? { jsonrpc: '2.0', id: msg.id, result } : { result, jsonrpc: '2.0', id: msg.id });
    }
  } else if (msg.method === 'notifications/cancelled') {
    if (opt('--calls')) appendFileSync(opt('--calls'), `cancelled ${msg.params?.requestId}\n`);
  } else if (msg.id !== undefined && msg.method) {
    send({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
  } else if (msg.id !== undefined && asking.has(msg.id)) { // an answer to our elicitation
    const done = asking.get(msg.id);
    asking.delete(msg.id);
    // for the gateway's log (tests read it): how the request it made ended
    process.stderr.write(`fake: ${msg.id} answered: ${JSON.stringify(msg.error ?? msg.result)}\n`);
    done(msg);
  }
});

function serveHttp(port) {
  const sessions = new Map(); // id -> tools/call count
  const expireAfter = opt('--expire-after') ? Number(opt('--expire-after')) : Infinity;
  const record = (entry) => opt('--record') && appendFileSync(opt('--record'), JSON.stringify(entry) + '\n');
  const result = (id, text) => ({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } });
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      const msg = body ? JSON.parse(body) : {};
      const sid = req.headers['mcp-session-id'];
      const entry = { http: req.method, method: msg.method, id: msg.id, tool: msg.params?.name,
        requestId: msg.params?.requestId, session: sid, version: req.headers['mcp-protocol-version'],
        accept: req.headers.accept, authorization: req.headers.authorization,
        traceparent: req.headers.traceparent, tracestate: req.headers.tracestate, meta: msg.params?._meta };
      const status = (code, extra = {}) => { record({ ...entry, status: code }); res.writeHead(code, extra); };
      const json = (m, headers = {}) => {
        if (args.includes('--sse')) return sse([m], headers);
        status(200, { 'Content-Type': 'application/json', ...headers });
        res.end(JSON.stringify(m));
      };
      function sse(msgs, headers = {}, gap = 0) {
        status(200, { 'Content-Type': 'text/event-stream', ...headers });
        const next = () => {
          const m = msgs.shift();
          if (!m) return res.end();
          res.write(`event: message\ndata: ${JSON.stringify(m)}\n\n`);
          setTimeout(next, gap);
        };
        next();
      }
      if (req.method === 'DELETE') {
        sessions.delete(sid);
        const delay = Number(opt('--delete-delay') ?? 0);
        if (delay === 0) {
          status(200);
          return res.end();
        }
        record({ ...entry, t: Date.now(), status: 'held' });
        return setTimeout(() => { res.writeHead(200); res.end(); }, delay);
      }
      if (msg.method === 'initialize') {
        if (args.includes('--hang-init')) return record({ ...entry, status: 'hang' });
        const id = randomUUID();
        sessions.set(id, 0);
        return json({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-11-25',
          capabilities: { tools: {} }, serverInfo: { name: 'fake-upstream-http', version: '1.0.0' } } },
        { 'Mcp-Session-Id': id });
      }
      if (sid === undefined) { status(400); return res.end('Mcp-Session-Id required'); }
      if (!sessions.has(sid)) { status(404); return res.end('unknown session'); }
      if (msg.id === undefined) { status(202); return res.end(); }
      if (msg.method === 'tools/list') {
        return json({ jsonrpc: '2.0', id: msg.id, result: { tools: ['echo', 'slow', 'hang', 'huge',
          'hugesse', 'progress', 'fail500'].map(tool) } });
      }
      if (msg.method !== 'tools/call') {
        return json({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
      }
      const calls = sessions.get(sid) + 1;
      sessions.set(sid, calls);
      if (calls > expireAfter) {
        sessions.delete(sid);
        status(404);
        return res.end('session expired');
      }
      const name = msg.params.name;
      const big = () => 'x'.repeat(5 * 1024 * 1024);
      if (name === 'echo') json(result(msg.id, `Echo: ${msg.params.arguments.message}`));
      else if (name === 'slow') setTimeout(() => json(result(msg.id, 'slow done')), msg.params.arguments?.ms ?? 300);
      else if (name === 'hang') record({ ...entry, status: 'hang' });
      else if (name === 'huge') json(result(msg.id, big()));
      else if (name === 'hugesse') sse([result(msg.id, big())]);
      else if (name === 'fail500') { status(500); res.end('broken'); }
      else if (name === 'progress') {
        const token = msg.params._meta?.progressToken;
        const notes = token === undefined ? [] : [1, 2, 3].map((progress) => ({ jsonrpc: '2.0',
          method: 'notifications/progress', params: { progressToken: token, progress, total: 3,
            message: `step ${progress}` } }));
        sse([...notes, result(msg.id, 'done')], {}, 50);
      }
    });
  });
  server.listen(port, '127.0.0.1', () => console.error(`fake-upstream listening on ${port}`));
}
