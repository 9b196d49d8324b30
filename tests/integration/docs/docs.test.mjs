// The documentation as a reader follows it: README.md stays a front door (at most 200 lines),
// every relative link in the checkout's Markdown (README.md, docs/, contrib/, ...) leads to a file
// that exists and, for #anchor, to a heading of that file (GitHub's anchors), and every
// docs/...md#anchor the binary's messages name exists too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');

// What is not the project's own text: tools and builds, dependencies, local settings.
const SKIP = new Set(['.git', 'tools', 'build', 'node_modules', '.dev']);

function walk(dir, out = []) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) { if (!SKIP.has(e.name)) walk(p, out); }
    else if (e.name.endsWith('.md')) out.push(p);
  }
  return out;
}

// Every Markdown page of the checkout: README.md and its siblings, docs/, and the READMEs of
// contrib/, tests/ and bench/.
function pages() {
  return walk(ROOT);
}

// Markdown without its fenced code blocks (a `#` or `[x](y)` inside one is not markup).
function prose(text) {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

// GitHub's heading anchors: lower case, punctuation other than - and _ dropped, spaces to -,
// a repeated anchor numbered -1, -2, ...
export function anchors(text) {
  const seen = new Map();
  const out = new Set();
  for (const m of prose(text).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = m[1].replace(/<[^>]*>/g, '').toLowerCase().trim()
      .replace(/[^\p{L}\p{N}\p{M}\- _]/gu, '').replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

// [text](target) links that are not to another site, and <a href>s.
function links(text) {
  const out = [];
  const body = prose(text).replace(/`[^`\n]*`/g, '');
  for (const m of body.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) out.push(m[1]);
  for (const m of body.matchAll(/href="([^"]+)"/g)) out.push(m[1]);
  return out.filter((l) => !/^[a-z][a-z0-9+.-]*:/i.test(l));
}

// Where a link leads: an error text, or null when the file (and heading) exist.
function broken(from, link) {
  const [path, anchor] = link.split('#');
  const target = path ? join(dirname(from), decodeURIComponent(path)) : from;
  if (!existsSync(target)) return `${link}: no such file`;
  if (anchor === undefined) return null;
  if (!statSync(target).isFile() || !target.endsWith('.md')) return `${link}: an anchor into a file that is not Markdown`;
  return anchors(readFileSync(target, 'utf8')).has(anchor) ? null : `${link}: no heading with that anchor`;
}

test('README.md is at most 200 lines', () => {
  const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length - 1;
  assert.ok(lines <= 200, `README.md has ${lines} lines`);
});

test('every relative link of README.md, docs/ and the other pages leads to a file and heading that exist', () => {
  const all = pages();
  assert.ok(all.some((p) => p.endsWith('docs/getting-started.md')), 'docs/ is there');
  const bad = [];
  let count = 0;
  for (const page of all) {
    for (const link of links(readFileSync(page, 'utf8'))) {
      count++;
      const why = broken(page, link);
      if (why) bad.push(`${relative(ROOT, page)}: ${why}`);
    }
  }
  assert.ok(count > 50, `links found: ${count}`);
  assert.deepEqual(bad, []);
});

test('every docs/ page is reached from README.md by links (a folder link reaches its pages)', () => {
  const reached = new Set();
  const queue = [join(ROOT, 'README.md')];
  while (queue.length) {
    const page = queue.shift();
    if (reached.has(page)) continue;
    reached.add(page);
    for (const link of links(readFileSync(page, 'utf8'))) {
      const path = link.split('#')[0];
      const target = join(dirname(page), path);
      if (!path || !existsSync(target)) continue;
      // A folder link (GitHub lists the folder) reaches the pages in it.
      if (statSync(target).isDirectory())
        queue.push(...readdirSync(target).filter((f) => f.endsWith('.md')).map((f) => join(target, f)));
      else if (path.endsWith('.md')) queue.push(target);
    }
  }
  const unreached = walk(join(ROOT, 'docs')).filter((p) => !reached.has(p)).map((p) => relative(ROOT, p));
  assert.deepEqual(unreached, []);
});

test('the docs/ pages and anchors the binary\'s messages name exist', () => {
  const named = [];
  const srcFiles = [];
  (function collect(dir) {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) collect(p);
      else if (/\.[ch]$/.test(e.name)) srcFiles.push(p);
    }
  })(join(ROOT, 'src'));
  for (const f of srcFiles) {
    // String literals only: a message, not a comment.
    const text = readFileSync(f, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');
    for (const m of text.matchAll(/docs\/[A-Za-z0-9_./-]+\.md(?:#[A-Za-z0-9_-]+)?/g)) named.push([f, m[0]]);
  }
  assert.ok(named.length >= 2, `messages naming docs/: ${named.length}`);
  const bad = named.map(([f, l]) => [f, broken(join(ROOT, 'x'), l)]).filter(([, why]) => why)
    .map(([f, why]) => `${relative(ROOT, f)}: ${why}`);
  assert.deepEqual(bad, []);
  // And none still sends the reader to the README.
  const readme = srcFiles.filter((f) => /"[^"\n]*README[^"\n]*"/.test(
    readFileSync(f, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '')));
  assert.deepEqual(readme.map((f) => relative(ROOT, f)), []);
});

test('every file of the checkout the pages name in code spans exists (src/, scripts/, tests/, contrib/)', () => {
  const bad = [];
  let count = 0;
  for (const page of pages()) {
    const text = readFileSync(page, 'utf8');
    for (const m of text.matchAll(/`((?:src|scripts|tests|contrib|bench)\/[A-Za-z0-9_./-]+\.(?:c|h|mjs|sh|yaml|md|json))`/g)) {
      count++;
      if (!existsSync(join(ROOT, m[1]))) bad.push(`${relative(ROOT, page)}: ${m[1]}`);
    }
  }
  assert.ok(count > 20, `files named: ${count}`);
  assert.deepEqual(bad, []);
});
