// nginx (Debian's nginx-light, deps.apt) in front of the real servers, run as the tests' user:
// each startNginx() gets its own prefix directory (pid, temp files, error log) and a free port,
// runs in the foreground (daemon off, one worker), and is gone with its directory at stop().
// The configurations come from the documentation itself (nginxBlocks), so what the guides print
// is what the tests run.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import { ROOT, freePort, until } from './lib.mjs';

export const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));

// The ```nginx fences of a page (a path under the checkout), in order.
export function nginxBlocks(page) {
  const text = readFileSync(join(ROOT, page), 'utf8');
  return [...text.matchAll(/```nginx\n([\s\S]*?)```/g)].map((m) => m[1]);
}

// Replaces each [from, to] in text, failing when a from is not there (the page changed).
export function substitute(text, pairs) {
  for (const [from, to] of pairs) {
    if (!text.includes(from)) throw new Error(`the nginx block no longer holds ${JSON.stringify(from)}`);
    text = text.split(from).join(to);
  }
  return text;
}

// Starts nginx with http(port) as the body of its http {} block (port: the one it must listen
// on). Resolves { port, base, dir, errors(), stop() } once it accepts connections.
export async function startNginx(http) {
  if (!NGINX) throw new Error('nginx is not installed (scripts/deps.sh installs nginx-light)');
  const dir = mkdtempSync(join(tmpdir(), 'hm-nginx-'));
  for (const d of ['body', 'proxy', 'logs']) mkdirSync(join(dir, d));
  const port = await freePort();
  writeFileSync(join(dir, 'nginx.conf'), `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path ${dir}/body;
    proxy_temp_path ${dir}/proxy;
${http(port)}
}
`);
  const proc = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  await until(() => new Promise((res, rej) => {
    if (proc.exitCode !== null) return rej(new Error(`nginx exited: ${err}`));
    const s = net.connect(port, '127.0.0.1', () => { s.destroy(); res(true); });
    s.on('error', () => res(false));
  }), 'nginx to listen');
  const errors = () => { try { return readFileSync(join(dir, 'logs/error.log'), 'utf8'); } catch { return ''; } };
  return {
    port, dir, errors, base: `http://127.0.0.1:${port}`,
    async stop() {
      if (proc.exitCode === null) {
        // A fast shutdown: a graceful one (SIGQUIT) waits for streams a client left open.
        proc.kill('SIGTERM');
        await new Promise((r) => (proc.exitCode !== null ? r() : proc.on('close', r)));
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
