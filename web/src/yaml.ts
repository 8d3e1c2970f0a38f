// toYAML writes a stored spec (JSON) as YAML for reading and editing. It is
// conservative: a string is written plain only when no YAML reader could
// take it for anything else, as a literal block when it has lines, and
// otherwise double-quoted (JSON string syntax is valid YAML), so applying
// the text unchanged gives back the same spec.

const ORDER = ['name', 'description', 'type', 'command', 'depends_on', 'params', 'failure_strategy',
  'retries', 'retry_interval', 'timeout', 'timeout_strategy', 'priority', 'worker_group', 'task_group', 'tasks'];

const RESERVED = /^(y|yes|n|no|true|false|on|off|null|~)$/i;
const PLAIN = /^[A-Za-z_][A-Za-z0-9_.\/-]*( [A-Za-z0-9_.\/-]+)*$/;
const DURATION = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;

function quote(s: string): string {
  return JSON.stringify(s);
}

function plain(s: string): boolean {
  return (PLAIN.test(s) || DURATION.test(s)) && !RESERVED.test(s);
}

function scalar(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return plain(v) ? v : quote(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v); // JSON is YAML flow syntax
}

// block returns the lines of a literal block for a multi-line string
// indented two more than its key, or null when the string must be
// quoted instead.
function block(s: string, indent: number): {head: string; lines: string[]} | null {
  if (!s.includes('\n') || /[\u0000-\u0008\u000b-\u001f\u007f\u0085\u2028\u2029\ufeff]/.test(s)) return null;
  let body = s, chomp = '-';
  if (s.endsWith('\n')) {
    body = s.replace(/\n+$/, '');
    chomp = s.length - body.length === 1 ? '' : '+';
  }
  if (body === '') return null;
  const lines = s.slice(0, chomp === '+' ? s.length - 1 : body.length).split('\n');
  const pad = ' '.repeat(indent);
  // A first line starting with a space would set the indentation; say it
  // (relative to the key's indentation).
  const ind = /^[ \t]/.test(lines[0]) ? '2' : '';
  // A line of only blanks reads back as an empty line (or sets the indentation).
  if (lines.some((l, i) => (i === 0 || l !== '') && /^\s*$/.test(l))) return null;
  return {head: '|' + ind + chomp, lines: lines.map((l) => (l === '' ? '' : pad + l))};
}

function keys(obj: Record<string, unknown>): string[] {
  return Object.keys(obj).sort((a, b) => {
    const ia = ORDER.indexOf(a), ib = ORDER.indexOf(b);
    if (ia !== ib) return (ia < 0 ? ORDER.length : ia) - (ib < 0 ? ORDER.length : ib);
    return a < b ? -1 : a > b ? 1 : 0;
  });
}

function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function emitObject(obj: Record<string, unknown>, indent: number, out: string[]): void {
  const pad = ' '.repeat(indent);
  for (const k of keys(obj)) {
    const v = obj[k];
    const key = pad + scalar(k) + ':';
    if (isObj(v)) {
      if (!Object.keys(v).length) out.push(key + ' {}');
      else {
        out.push(key);
        emitObject(v, indent + 2, out);
      }
    } else if (Array.isArray(v)) {
      if (!v.length) out.push(key + ' []');
      else if (v.every((x) => !isObj(x) && !Array.isArray(x))) {
        out.push(key + ' [' + v.map(scalar).join(', ') + ']');
      } else {
        out.push(key);
        for (const item of v) {
          if (isObj(item)) {
            const sub: string[] = [];
            emitObject(item, indent + 4, sub);
            if (!sub.length) sub.push(pad + '    {}');
            sub[0] = pad + '  - ' + sub[0].slice(indent + 4);
            out.push(...sub);
          } else {
            out.push(pad + '  - ' + scalar(item)); // multi-line items are quoted
          }
        }
      }
    } else {
      const b = typeof v === 'string' && block(v, indent + 2);
      if (b) out.push(key + ' ' + b.head, ...b.lines);
      else out.push(key + ' ' + scalar(v));
    }
  }
}

export function toYAML(obj: unknown): string {
  const out: string[] = [];
  if (!isObj(obj)) return scalar(obj) + '\n';
  emitObject(obj, 0, out);
  return out.join('\n') + '\n';
}
