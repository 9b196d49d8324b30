// The official TypeScript SDK client (1.32.x) against the real binaries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CreateMessageRequestSchema, ElicitRequestSchema, LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { startHermes, startConformance, connectClient } from '../../lib/lib.mjs';

async function connect(srv, capabilities = {}) {
  const client = await connectClient(srv, { name: 'hm-it', capabilities });
  return { client, transport: client.transport };
}

test('hermes-mcp (stateless): initialize, list, call, ping', async () => {
  const srv = await startHermes();
  try {
    const { client, transport } = await connect(srv);
    assert.equal(transport.sessionId, undefined, 'stateless: no session id issued');
    assert.equal(client.getServerVersion().name, 'hermes-mcp');
    assert.ok(client.getServerCapabilities().tools, 'tools capability advertised');
    assert.equal(client.getServerCapabilities().resources, undefined, 'no resources: not advertised');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['hermes_cancel', 'hermes_files',
      'hermes_reset', 'hermes_result', 'hermes_status', 'hermes_task', 'list_agents', 'whoami']);
    for (const t of tools) {
      assert.ok(t.description && t.inputSchema && t.outputSchema && t.annotations, t.name);
    }
    const res = await client.callTool({ name: 'list_agents', arguments: {} });
    assert.equal(res.isError, false);
    assert.equal(res.structuredContent.default, 'hermes');
    assert.deepEqual(JSON.parse(res.content[0].text), res.structuredContent);
    assert.deepEqual(await client.ping(), {});
    await client.close();
  } finally {
    assert.equal(await srv.stop(), 0, 'SIGTERM exits 0');
  }
});

test('hermes-mcp (sessions): session id issued, used, ended with DELETE', async () => {
  const srv = await startHermes({ MCP_SESSIONS: '1' });
  try {
    const { client, transport } = await connect(srv);
    const sid = transport.sessionId;
    assert.match(sid, /^[0-9a-f]{64}$/, 'random 256-bit session id');
    assert.equal((await client.listTools()).tools.length, 8);
    await transport.terminateSession();
    assert.equal(transport.sessionId, undefined);
    // The ended session is gone: a request with its id gets 404.
    const r = await fetch(srv.url, {
      method: 'POST',
      headers: { ...srv.auth, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sid },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }),
    });
    assert.equal(r.status, 404);
    await client.close();
  } finally {
    await srv.stop();
  }
});

test('hermes-mcp: wrong token is refused before anything else', async () => {
  const srv = await startHermes();
  try {
    const bad = { ...srv, auth: { Authorization: 'Bearer ' + '0'.repeat(64) } };
    await assert.rejects(connect(bad), /401|Unauthorized/i);
  } finally {
    await srv.stop();
  }
});

test('conformance-server via SDK: progress, logging, sampling, elicitation, resources, prompts', async () => {
  const srv = await startConformance();
  try {
    const { client } = await connect(srv, { sampling: {}, elicitation: {} });
    client.setRequestHandler(CreateMessageRequestSchema, async (req) => ({
      role: 'assistant', model: 'fake',
      content: { type: 'text', text: `echo:${req.params.messages[0].content.text}` },
    }));
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { response: 'yes' } }));
    const logs = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
    await client.setLoggingLevel('debug');

    const progress = [];
    const p = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined,
      { onprogress: (ev) => progress.push(ev.progress) });
    assert.deepEqual(progress, [0, 50, 100]);
    assert.match(p.content[0].text, /^\d+$/, 'answers with the numeric token');

    await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
    assert.deepEqual(logs.map((l) => l.data),
      ['Tool execution started', 'Tool processing data', 'Tool execution completed']);

    const s = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'hi' } });
    assert.equal(s.content[0].text, 'LLM response: echo:hi');
    const e = await client.callTool({ name: 'test_elicitation', arguments: { message: 'ok?' } });
    assert.equal(e.content[0].text, 'User response: action=accept, content={"response":"yes"}');

    const r = await client.readResource({ uri: 'test://template/42/data' });
    assert.equal(JSON.parse(r.contents[0].text).id, '42');
    await assert.rejects(client.readResource({ uri: 'test://nope' }), /-32002|not found/i);
    const g = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 'b' } });
    assert.equal(g.messages[0].content.text, "Prompt with arguments: arg1='a', arg2='b'");
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /-32602/);
    await client.close();
  } finally {
    await srv.stop();
  }
});
