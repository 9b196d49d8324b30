// fake-upstream.mjs — a misbehaving stdio MCP server for the gateway's recovery and readiness
// tests (tests/integration/gwrecover.test.mjs). It answers initialize and tools/list like a
// real server (newline-delimited JSON-RPC, protocol 2025-11-25) and misbehaves on request:
//   tool echo     answers {content: [{type: text, text: "Echo: MESSAGE"}]}
//   tool crash    exits (status 3) in the middle of the call, without answering
//   tool hang     never answers
//   tool garbage  writes a line that is not JSON, then nothing
//   tool slow     answers "slow done" after arguments.ms milliseconds (default 300)
//   tool huge     answers with a 5 MiB message, its id first ({"jsonrpc","id","result"})
//   tool hugetail the same with its id last, as the MCP SDKs order it ({"result","jsonrpc","id"})
// Options (argv): --starts FILE  append "start PID" to FILE at each start (restarts are counted)
//                 --hang-init    never answer initialize (a child stuck past connect_timeout)
//                 --crash-init   exit (status 4) on initialize
//                 --pages        tools/list in pages of 3 tools (nextCursor "page-N")
//                 --describe FILE  echo's description is FILE's text when FILE exists (read at
//                                  each tools/list: a test changes it between starts, a rug pull)
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const args = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
if (opt('--starts')) appendFileSync(opt('--starts'), `start ${process.pid}\n`);

const send = (msg) => process.stdout.write(JSON.stringify(msg) + '\n');
const description = (name) => (name === 'echo' && opt('--describe') && existsSync(opt('--describe'))
  ? readFileSync(opt('--describe'), 'utf8') : `fake ${name}`);
const tool = (name) => ({ name, description: description(name),
  inputSchema: { type: 'object', properties: { message: { type: 'string' } } } });

createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.method === 'initialize') {
    if (args.includes('--hang-init')) return;
    if (args.includes('--crash-init')) process.exit(4);
    send({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-11-25',
      capabilities: { tools: {} }, serverInfo: { name: 'fake-upstream', version: '1.0.0' } } });
  } else if (msg.method === 'tools/list') {
    const all = ['echo', 'slow', 'crash', 'hang', 'garbage', 'huge', 'hugetail'].map(tool);
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
    if (name === 'echo') {
      send({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text',
        text: `Echo: ${msg.params.arguments.message}` }] } });
    } else if (name === 'slow') {
      setTimeout(() => send({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text',
        text: 'slow done' }] } }), msg.params.arguments?.ms ?? 300);
    } else if (name === 'crash') {
      setTimeout(() => process.exit(3), 100);
    } else if (name === 'garbage') {
      process.stdout.write('this is not JSON\n');
    } else if (name === 'huge' || name === 'hugetail') {
      const result = { content: [{ type: 'text', text: 'x'.repeat(5 * 1024 * 1024) }] };
      send(name === 'huge' ? { jsonrpc: '2.0', id: msg.id, result } : { result, jsonrpc: '2.0', id: msg.id });
    }
  } else if (msg.id !== undefined && msg.method) {
    send({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
  }
});
