// One client interaction per iteration, as a short-lived client (an agent that connects, looks
// at the tools and goes) makes it, for the callgrind count of bench/run.sh:
//   2025-11-25: initialize, notifications/initialized, tools/list (a session era handshake);
//   2026-07-28: tools/list alone (stateless: no handshake; server/discover's answer is cached).
// Usage: BENCH_TOKEN=... node bench/interaction.mjs legacy|modern N URL. Exits 1 on any failure.
const [, , era, n, url] = process.argv;
const base = { Authorization: `Bearer ${process.env.BENCH_TOKEN}`, 'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream' };
const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' } };

async function post(headers, body) {
  const r = await fetch(url, { method: 'POST', headers: { ...base, ...headers }, body: JSON.stringify(body) });
  const text = await r.text();
  if (r.status >= 300 || (r.status === 200 && JSON.parse(text).error)) {
    console.error(`failed: ${r.status} ${text.slice(0, 200)}`);
    process.exit(1);
  }
}

for (let i = 0; i < Number(n); i++) {
  if (era === 'legacy') {
    await post({}, { jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
    const h = { 'MCP-Protocol-Version': '2025-11-25' };
    await post(h, { jsonrpc: '2.0', method: 'notifications/initialized' });
    await post(h, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
  } else {
    await post({ 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/list' },
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta } });
  }
}
console.log(`BENCH_INTERACTIONS n=${n}`);
