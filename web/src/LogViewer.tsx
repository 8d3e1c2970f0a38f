// The log of one task attempt: read by pages from the API, followed while
// the task runs, shown by a window of lines (a 4 MB log stays fast), with
// search, wrap, line numbers, jump to the end and download. Lines that came
// from stderr are marked "err" (and coloured) and can be filtered.
import {useEffect, useMemo, useRef, useState} from 'react';
import {describe, get, readLog} from './api';
import {addLineStarts, stderrLines, viewOf, type Span, type StreamFilter} from './logstreams';
import {taskFinished} from './states';
import type {TaskAttempt} from './graph';

const LOG_PAGE = 256 << 10;
const MAX_LOG = 4 << 20;
const LOG_POLL_MS = 1000;
const LINE_H = 18;

interface Props {
  task: TaskAttempt;
  onClose: () => void;
}

export function LogViewer({task, onClose}: Props) {
  const [text, setText] = useState('');
  const [status, setStatus] = useState('loading…');
  const [err, setErr] = useState(false);
  const [done, setDone] = useState(false);
  const [follow, setFollow] = useState(true);
  const [wrap, setWrap] = useState(false);
  const [numbers, setNumbers] = useState(true);
  const [q, setQ] = useState('');
  const [cur, setCur] = useState(0);
  const [scroll, setScroll] = useState(0);
  const [stream, setStream] = useState<StreamFilter>('all');
  // Where lines begin (bytes) and stderr's ranges, as loaded: the spans
  // state changes with each page that has stderr.
  const starts = useRef<number[]>([0]);
  const [spans, setSpans] = useState<Span[]>([]);
  const [height, setHeight] = useState(480);
  const box = useRef<HTMLDivElement>(null);
  const stateRef = useRef(task.state);
  stateRef.current = task.state;

  useEffect(() => {
    const ctrl = new AbortController();
    const dec = new TextDecoder('utf-8');
    let offset = 0, timer = 0, alive = true, acc = '';
    let got: Span[] = [];
    starts.current = [0];
    setText(''); setSpans([]); setDone(false); setErr(false); setStatus('loading…');
    async function more() {
      for (;;) {
        if (!alive) return;
        const finishedBefore = taskFinished(stateRef.current);
        let page;
        try {
          page = await readLog(task.id, offset, LOG_PAGE, ctrl.signal);
        } catch (e: any) {
          if (!alive || e.name === 'AbortError') return;
          setStatus(describe(e)); setErr(true);
          if (e.status === 409 && finishedBefore) return;
          timer = window.setTimeout(more, 2000);
          return;
        }
        if (!alive) return;
        if (page.next > offset) {
          // The worker records a range before its bytes: asked after
          // them, the ranges cover the page.
          try {
            const st = await get(`/api/v1/task-instances/${task.id}/log/streams?offset=${offset}&limit=${page.next - offset}`, {signal: ctrl.signal});
            if (!alive) return;
            if (st && st.stderr && st.stderr.length) { got = got.concat(st.stderr); setSpans(got); }
          } catch (e: any) {
            if (!alive || e.name === 'AbortError') return;
            // The lines still show, unmarked.
          }
          addLineStarts(starts.current, page.bytes, offset);
        }
        setErr(false);
        const t = dec.decode(page.bytes, {stream: true});
        if (t) { acc += t; setText(acc); }
        offset = page.next;
        if (offset >= MAX_LOG) {
          setStatus(`showing the first ${offset} bytes; read the rest with: beluga task log ${task.id}`);
          return;
        }
        if (page.bytes.length === LOG_PAGE) continue;
        if (finishedBefore) {
          const rest = dec.decode();
          if (rest) { acc += rest; setText(acc); }
          setStatus(`${offset} bytes · end of log`);
          setDone(true);
          return;
        }
        setStatus(`${offset} bytes · following (task ${stateRef.current})…`);
        timer = window.setTimeout(more, LOG_POLL_MS);
        return;
      }
    }
    more();
    return () => { alive = false; ctrl.abort(); clearTimeout(timer); };
  }, [task.id]);

  const lines = useMemo(() => {
    const l = text.split('\n');
    if (l.length && l[l.length - 1] === '') l.pop();
    return l;
  }, [text]);
  const errs = useMemo(() => stderrLines(starts.current, lines.length, spans), [lines, spans]);
  const hasErr = spans.length > 0;
  // The lines shown, by position in view; null: all, position = line.
  const view = useMemo(() => viewOf(errs, stream), [errs, stream]);
  const shown = view ? view.length : lines.length;
  const lineOf = (k: number) => (view ? view[k] : k);
  // Search hits are positions in view.
  const hits = useMemo(() => {
    if (!q) return [] as number[];
    const lq = q.toLowerCase();
    const out: number[] = [];
    for (let k = 0; k < shown; k++) if (lines[view ? view[k] : k].toLowerCase().includes(lq)) out.push(k);
    return out;
  }, [lines, q, view, shown]);
  const hitSet = useMemo(() => new Set(hits), [hits]);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setHeight(el.clientHeight || 480));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  // Following keeps the end in view as lines arrive.
  useEffect(() => {
    const el = box.current;
    if (el && follow && !q) el.scrollTop = el.scrollHeight;
  }, [lines.length, follow, q, stream]);

  function jump(i: number) {
    const el = box.current;
    if (!el || !hits.length) return;
    const k = ((i % hits.length) + hits.length) % hits.length;
    setCur(k);
    setFollow(false);
    el.scrollTop = Math.max(0, hits[k] * LINE_H - el.clientHeight / 2);
  }
  function toEnd() {
    const el = box.current;
    if (el) el.scrollTop = el.scrollHeight;
    setFollow(true);
  }
  function download() {
    const url = URL.createObjectURL(new Blob([text], {type: 'text/plain'}));
    const a = document.createElement('a');
    a.href = url;
    a.download = `${task.name}-${task.attempt}-${task.id}.log`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  // The window: the lines in view plus a margin; wrapped lines have no
  // fixed height, so wrap shows the last 5,000 lines in flow instead.
  const first = wrap ? Math.max(0, shown - 5000) : Math.max(0, Math.floor(scroll / LINE_H) - 50);
  const last = wrap ? shown : Math.min(shown, Math.ceil((scroll + height) / LINE_H) + 50);
  const gutter = String(lines.length).length;

  return (
    <section className="logpanel" data-task={task.id} aria-label={`Log of ${task.name}`}>
      <div className="titlebar">
        <h2>Log of <code>{task.name}</code> attempt {task.attempt} (task instance {task.id})</h2>
        <button type="button" className="small" onClick={onClose}>Close</button>
      </div>
      <div className="logtools">
        <label>Search log <input type="search" className="logsearch" value={q} spellCheck={false}
          onChange={(e) => { setQ(e.target.value); setCur(0); }}
          onKeyDown={(e) => { if (e.key === 'Enter') jump(e.shiftKey ? cur - 1 : cur + 1); }} /></label>
        <span className="loghits" aria-live="polite">{q ? (hits.length ? `${cur + 1} of ${hits.length} matches` : 'no match') : ''}</span>
        <button type="button" className="small" disabled={!hits.length} onClick={() => jump(cur - 1)}>Previous</button>
        <button type="button" className="small" disabled={!hits.length} onClick={() => jump(cur + 1)}>Next</button>
        <label><input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> Follow</label>
        <label><input type="checkbox" checked={wrap} onChange={(e) => setWrap(e.target.checked)} /> Wrap</label>
        <label><input type="checkbox" checked={numbers} onChange={(e) => setNumbers(e.target.checked)} /> Line numbers</label>
        <label>Stream <select className="logstream" value={stream}
          onChange={(e) => { setStream(e.target.value as StreamFilter); setCur(0); }}>
          <option value="all">all</option>
          <option value="stdout">stdout</option>
          <option value="stderr">stderr</option>
        </select></label>
        <button type="button" className="small" onClick={toEnd}>Jump to end</button>
        <button type="button" className="small" onClick={download} disabled={!text}>Download</button>
      </div>
      <p className={['logstatus', err ? 'err' : 'muted', done && 'done'].filter(Boolean).join(' ')}>{status} · {lines.length} lines{hasErr ? ` · ${errs.reduce((a, f) => a + f, 0)} from stderr` : ''}{view ? ` · showing ${shown} (${stream})` : ''}</p>
      <div ref={box} className={['log', wrap && 'wrap'].filter(Boolean).join(' ')} tabIndex={0} role="log" aria-label="log lines"
        onScroll={(e) => {
          const el = e.currentTarget;
          setScroll(el.scrollTop);
          if (el.scrollTop + el.clientHeight < el.scrollHeight - 4 && follow && !wrap) setFollow(false);
        }}>
        <div className="logspace" style={wrap ? undefined : {height: shown * LINE_H}}>
          {Array.from({length: Math.max(0, last - first)}, (_, j) => {
            const k = first + j, i = lineOf(k), isErr = errs[i] === 1;
            return (
              <div key={i} className={['ln', isErr && 'stderr', hitSet.has(k) && 'match', hits[cur] === k && 'current'].filter(Boolean).join(' ')}
                style={wrap ? undefined : {top: k * LINE_H}} data-line={i + 1} data-stream={isErr ? 'stderr' : undefined}>
                {numbers ? <span className="ln-no" aria-hidden="true">{String(i + 1).padStart(gutter)}</span> : null}
                {hasErr ? <span className="ln-err" title={isErr ? 'from stderr' : undefined}>{isErr ? 'err' : ''}</span> : null}
                <span className="ln-text">{lines[i]}</span>
              </div>
            );
          })}
        </div>
      </div>
    </section>
  );
}
