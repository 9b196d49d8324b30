// hermes_reset without confirmed: true asks the user when the client can show a form
// (elicitation): in the session era with an elicitation request on the call's stream (the
// official SDK 1.x client and its elicitation handler), in MCP 2026-07-28 with an
// input-required result whose sealed requestState comes back with the user's answer. The
// user's no, or a client without elicitation, gets confirmation_required as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startHermes, modernMeta, modernHeaders } from '../../lib/lib.mjs';

async function legacyClient(srv, answer) {
  const asked = [];
  const client = new Client({ name: 'hm-reset', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    return answer;
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: srv.auth } }));
  await client.listTools();
  return { client, asked };
}

test('session era: the user is asked through elicitation; yes resets, no refuses', async () => {
  const srv = await startHermes({ MCP_SESSIONS: '1' });
  try {
    const yes = await legacyClient(srv, { action: 'accept', content: { confirm: true } });
    const ok = await yes.client.callTool({ name: 'hermes_reset', arguments: {} });
    assert.equal(ok.isError, false, JSON.stringify(ok));
    assert.equal(typeof ok.structuredContent.cleared, 'number');
    assert.equal(yes.asked.length, 1);
    assert.match(yes.asked[0].message, /rebuild/);
    assert.equal(yes.asked[0].requestedSchema.properties.confirm.type, 'boolean');
    await yes.client.close();

    for (const answer of [{ action: 'decline' }, { action: 'accept', content: { confirm: false } }]) {
      const no = await legacyClient(srv, answer);
      const res = await no.client.callTool({ name: 'hermes_reset', arguments: {} });
      assert.equal(res.isError, true);
      assert.equal(res.structuredContent.error, 'confirmation_required');
      assert.equal(no.asked.length, 1);
      await no.client.close();
    }
    // A client that cannot show a form is not asked: the model must get the user's yes.
    const plain = new Client({ name: 'hm-reset-plain', version: '1.0.0' });
    await plain.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: srv.auth } }));
    await plain.listTools();
    const res = await plain.callTool({ name: 'hermes_reset', arguments: {} });
    assert.equal(res.structuredContent.error, 'confirmation_required');
    await plain.close();
  } finally {
    await srv.stop();
  }
});


async function modernReset(srv, id, params, caps = { elicitation: {} }) {
  const r = await fetch(srv.url, {
    method: 'POST',
    headers: { ...srv.auth, ...modernHeaders('tools/call', 'hermes_reset') },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call',
      params: { name: 'hermes_reset', arguments: {}, ...params, _meta: modernMeta(caps, 'reset-it') } }),
  });
  return { status: r.status, json: await r.json() };
}

test('2026-07-28: an input-required round asks the user; only the sealed state with a yes resets', async () => {
  const srv = await startHermes();
  try {
    const r1 = await modernReset(srv, 1, {});
    assert.equal(r1.status, 200);
    const ask = r1.json.result;
    assert.equal(ask.resultType, 'input_required');
    assert.equal(ask.inputRequests.confirm.method, 'elicitation/create');
    assert.equal(typeof ask.requestState, 'string');

    const yes = { confirm: { action: 'accept', content: { confirm: true } } };
    // Answers without the state we sealed are not taken as the user's: asked again.
    const forged = await modernReset(srv, 2, { inputResponses: yes });
    assert.equal(forged.json.result.resultType, 'input_required');
    // A state that was changed is refused outright.
    const tampered = await modernReset(srv, 3, { inputResponses: yes, requestState: ask.requestState + 'x' });
    assert.equal(tampered.json.error.code, -32602);
    assert.equal(tampered.json.id, 3);
    // The user's no.
    const no = await modernReset(srv, 4, { inputResponses: { confirm: { action: 'decline' } }, requestState: ask.requestState });
    assert.equal(no.json.result.structuredContent.error, 'confirmation_required');
    // The user's yes.
    const ok = await modernReset(srv, 5, { inputResponses: yes, requestState: ask.requestState });
    assert.equal(ok.json.result.resultType, 'complete');
    assert.equal(ok.json.result.isError, false, JSON.stringify(ok.json));
    assert.equal(typeof ok.json.result.structuredContent.cleared, 'number');
    // Without elicitation declared the model is told, as before.
    const plain = await modernReset(srv, 6, {}, {});
    assert.equal(plain.json.result.structuredContent.error, 'confirmation_required');
  } finally {
    await srv.stop();
  }
});
