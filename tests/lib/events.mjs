// The server's named log events (docs/reference/log-events.md): a line ends in
// "[event=NAME key=value ...]", the part that stays the same when the prose is reworded. Tests
// wait on and assert on these instead of on the wording. `srv` is what startHermes returns, or
// any child process whose stderr the caller collects in proc.stderrText.
import { until } from './lib.mjs';

const MARK = ' [event=';
const FIELD = /\s*([a-z_]+)=("(?:[^"\\]|\\.)*"|[^\s\]"]*)/y;

// srv: a server (or process) whose log is collected, or a log text already cut out of one.
const textOf = (srv) => (typeof srv === 'string' ? srv : (srv.proc ?? srv).stderrText ?? '');

// A quoted value read back: \" \\ \n \r \t and \xNN (any other control byte) escapes.
const ESCAPES = { n: '\n', r: '\r', t: '\t' };
const unquote = (q) => q.slice(1, -1).replace(/\\(x[0-9a-f]{2}|.)/g,
  (_, e) => (e.length === 3 ? String.fromCharCode(parseInt(e.slice(1), 16)) : ESCAPES[e] ?? e));

// One log line's event as { event, fields, line }, or null for a line without one. A line whose
// fields did not all fit ends in the field truncated=KEY: KEY's value is cut short and the fields
// after it are left out.
export function parseEvent(line) {
  const at = line.indexOf(MARK);
  if (at < 0 || !line.endsWith(']')) return null;
  const body = line.slice(at + MARK.length, -1);
  const name = body.match(/^[a-z_]+/)?.[0];
  if (!name) return null;
  const fields = {};
  FIELD.lastIndex = name.length;
  for (let m; FIELD.lastIndex < body.length && (m = FIELD.exec(body));) {
    fields[m[1]] = m[2].startsWith('"') ? unquote(m[2]) : m[2];
    if (m[0].length === 0) break;
  }
  return { event: name, fields, line };
}

// Where the log stands now: pass it as `since` to see only what comes after.
export const logMark = (srv) => textOf(srv).length;

const matches = (e, name, want) => e && e.event === name &&
  Object.entries(want).every(([k, v]) => (v instanceof RegExp ? v.test(e.fields[k] ?? '') : e.fields[k] === String(v)));

// Every event `name` logged (after `since`) whose fields equal `want` (a RegExp value matches).
export function events(srv, name, want = {}, since = 0) {
  return textOf(srv).slice(since).split('\n').map(parseEvent).filter((e) => matches(e, name, want));
}

// Waits for the first event `name` with fields `want` (after `since`); returns it.
export function waitEvent(srv, name, want = {}, { since = 0, ms = 8000 } = {}) {
  return until(() => events(srv, name, want, since)[0],
    `log event ${name} ${JSON.stringify(want, (k, v) => (v instanceof RegExp ? String(v) : v))}\n` +
    textOf(srv).slice(since).slice(-2000), ms);
}

// Waits for the first of several events (e.g. a reload that is applied or rejected).
export function waitAnyEvent(srv, names, want = {}, { since = 0, ms = 8000 } = {}) {
  return until(() => names.map((n) => events(srv, n, want, since)[0]).find(Boolean),
    `one of the log events ${names.join(', ')}\n${textOf(srv).slice(since).slice(-2000)}`, ms);
}
