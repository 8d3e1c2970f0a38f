// Which lines of a task's log came from stderr: the log is one text of
// stdout and stderr interleaved, and the API names stderr's byte ranges
// (GET .../log/streams), so lines are found by their byte offsets.

export type Span = [number, number]; // [start, end) bytes of the whole log
export type StreamFilter = 'all' | 'stdout' | 'stderr';

// addLineStarts appends to starts the offsets where lines begin in bytes,
// a page of the log read from offset ('\n' is one byte in UTF-8, so the
// lines match the decoded text's). starts begins as [0].
export function addLineStarts(starts: number[], bytes: Uint8Array, offset: number): void {
  for (let i = bytes.indexOf(10); i >= 0; i = bytes.indexOf(10, i + 1)) starts.push(offset + i + 1);
}

// lineAt is the line holding byte b.
function lineAt(starts: number[], b: number): number {
  let lo = 0, hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= b) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// stderrLines marks, of n lines, those holding a byte of a span.
export function stderrLines(starts: number[], n: number, spans: Span[]): Uint8Array {
  const out = new Uint8Array(n);
  for (const [s, e] of spans) {
    if (e <= s) continue;
    const last = Math.min(lineAt(starts, e - 1), n - 1);
    for (let i = lineAt(starts, s); i <= last; i++) out[i] = 1;
  }
  return out;
}

// viewOf lists the lines the filter shows; null: all of them.
export function viewOf(flags: Uint8Array, filter: StreamFilter): number[] | null {
  if (filter === 'all') return null;
  const want = filter === 'stderr' ? 1 : 0;
  const out: number[] = [];
  flags.forEach((f, i) => { if (f === want) out.push(i); });
  return out;
}
