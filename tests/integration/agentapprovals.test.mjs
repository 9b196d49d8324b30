// The Hermes agent's own approvals (issue 15, behaviour 3). First the fake agent's approval
// states, over its HTTP API (waiting_for_approval, POST /approval once|deny, 409, 400), then the
// bridge: a run a hermes_task follows that waits for approval is in the operator's queue
// (`hermes-mcp approvals`), and `approve`/`deny` answer the agent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, until, parseSse } from './lib.mjs';

const authed = (fake) => ({ authorization: `Bearer ${fake.key}`, 'content-type': 'application/json' });

async function startRun(fake, input) {
  const r = await fetch(`${fake.base}/v1/runs`, { method: 'POST', headers: authed(fake), body: JSON.stringify({ input }) });
  assert.equal(r.status, 202);
  return (await r.json()).run_id;
}
const runStatus = async (fake, id) => (await (await fetch(`${fake.base}/v1/runs/${id}`, { headers: authed(fake) })).json());
const answer = (fake, id, body) => fetch(`${fake.base}/v1/runs/${id}/approval`, { method: 'POST', headers: authed(fake), body: JSON.stringify(body) });

// Reads a run's event stream to its end, calling onFrame for each event as it arrives.
async function readEvents(fake, id, onFrame) {
  const r = await fetch(`${fake.base}/v1/runs/${id}/events`, { headers: authed(fake) });
  assert.equal(r.status, 200);
  const dec = new TextDecoder();
  let buf = '';
  const events = [];
  for await (const chunk of r.body) {
    buf += dec.decode(chunk, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, cut + 2);
      buf = buf.slice(cut + 2);
      for (const ev of parseSse(frame).filter((e) => e.data)) {
        const j = JSON.parse(ev.data);
        events.push(j);
        await onFrame?.(j);
      }
    }
  }
  return events;
}

test('fake agent: [approval] waits for approval; once continues the run to its answer', async (t) => {
  const fake = await startFake();
  t.after(() => fake.stop());
  const id = await startRun(fake, 'clean up [approval=rm -rf /tmp/x] [text=all clean]');
  const st = await until(async () => { const s = await runStatus(fake, id); return s.status === 'waiting_for_approval' && s; }, 'waiting');
  assert.equal(st.approval.command, 'rm -rf /tmp/x');
  assert.equal(typeof st.approval.description, 'string');
  assert.deepEqual(st.approval.choices, ['once', 'session', 'always', 'deny']);
  const events = await readEvents(fake, id, async (ev) => {
    if (ev.event !== 'approval.request') return;
    assert.equal(ev.command, 'rm -rf /tmp/x');
    const r = await answer(fake, id, { choice: 'once' });
    assert.equal(r.status, 200);
    assert.deepEqual(await r.json(), { resolved: 1 });
  });
  const names = events.map((e) => e.event);
  assert.ok(names.indexOf('approval.request') < names.indexOf('approval.responded'), names.join());
  assert.deepEqual(events.find((e) => e.event === 'approval.responded').choice, 'once');
  assert.equal(names.at(-1), 'run.completed');
  const done = await runStatus(fake, id);
  assert.equal(done.status, 'completed');
  assert.equal(done.output, 'all clean');
  assert.equal(done.approval, undefined);
  // Answered once: nothing is pending any more.
  const again = await answer(fake, id, { choice: 'once' });
  assert.equal(again.status, 409);
  assert.equal((await again.json()).error.code, 'approval_not_pending');
});

test('fake agent: deny ends the run failed; 409 when nothing waits; 400 for a bad choice', async (t) => {
  const fake = await startFake();
  t.after(() => fake.stop());
  const plain = await startRun(fake, 'no approval here [delay=3000]');
  const r409 = await answer(fake, plain, { choice: 'once' });
  assert.equal(r409.status, 409);
  assert.equal((await r409.json()).error.code, 'approval_not_pending');
  const id = await startRun(fake, 'deploy [approval=git push --force]');
  await until(async () => (await runStatus(fake, id)).status === 'waiting_for_approval', 'waiting');
  for (const bad of [{ choice: 'maybe' }, {}, { choice: 7 }]) {
    const r = await answer(fake, id, bad);
    assert.equal(r.status, 400, JSON.stringify(bad));
    assert.equal((await r.json()).error.type, 'invalid_request_error');
  }
  assert.equal((await runStatus(fake, id)).status, 'waiting_for_approval');
  const r = await answer(fake, id, { choice: 'deny' });
  assert.equal(r.status, 200);
  const st = await until(async () => { const s = await runStatus(fake, id); return s.status === 'failed' && s; }, 'failed');
  assert.match(st.error, /denied.*git push --force/);
  assert.equal(st.approval, undefined);
  const gone = await fetch(`${fake.base}/v1/runs/nope/approval`, { method: 'POST', headers: authed(fake), body: '{"choice":"once"}' });
  assert.equal(gone.status, 404);
});

test('fake agent: a stop while waiting cancels the run', async (t) => {
  const fake = await startFake();
  t.after(() => fake.stop());
  const id = await startRun(fake, 'x [approval]');
  await until(async () => (await runStatus(fake, id)).status === 'waiting_for_approval', 'waiting');
  const r = await fetch(`${fake.base}/v1/runs/${id}/stop`, { method: 'POST', headers: authed(fake) });
  assert.equal(r.status, 200);
  const st = await until(async () => { const s = await runStatus(fake, id); return s.status === 'cancelled' && s; }, 'cancelled');
  assert.equal(st.approval, undefined);
});
