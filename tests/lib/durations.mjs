// A reporter for Node's test runner (tests/integration/run.sh): one line per test file, the sum
// of its top-level tests' durations (a file's tests run one after another) and their count,
// slowest first.
import { relative } from 'node:path';

export default async function* durations(source) {
  const files = new Map();
  for await (const ev of source) {
    if ((ev.type !== 'test:pass' && ev.type !== 'test:fail') || ev.data.nesting !== 0 || !ev.data.file) continue;
    const r = files.get(ev.data.file) ?? { ms: 0, tests: 0 };
    r.ms += ev.data.details?.duration_ms ?? 0;
    r.tests++;
    files.set(ev.data.file, r);
  }
  for (const [file, r] of [...files].sort((a, b) => b[1].ms - a[1].ms))
    yield `${(r.ms / 1000).toFixed(1).padStart(7)} s ${String(r.tests).padStart(4)} tests  ${relative(process.cwd(), file)}\n`;
}
