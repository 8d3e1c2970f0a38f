// A list read a page at a time on the API's keyset cursors (?limit=&
// cursor=&prefix=, answered with next_cursor): each page is one indexed
// read however long the list, so 10,000 workflows page as fast as 10.
// The name prefix searched is kept in the address (replaced, not a new
// history entry, so typing does not reload the page).
import {useEffect, useState} from 'react';
import {useRead} from './ui';

export const PAGE_SIZE = 50;

type Answer<T> = {items: T[]; next_cursor?: string};

export type Paged<T> = {items: T[] | null; err: string; page: number; more: boolean; next: () => void; prev: () => void; reload: () => void};

// usePaged reads path (which may hold a query) a page at a time, the
// names starting with prefix; every > 0 reads the page shown again.
export function usePaged<T>(path: string | null, prefix: string, every = 0, limit = PAGE_SIZE): Paged<T> {
  // cursors[i] is the cursor of page i (page 0: none); a new prefix or
  // path starts again from the first page.
  const key = `${path}\n${prefix}`;
  const [st, setSt] = useState<{key: string; cs: string[]}>({key, cs: ['']});
  const cs = st.key === key ? st.cs : [''];
  const setCursors = (c: string[]) => setSt({key, cs: c});
  const cur = cs[cs.length - 1];
  const q = new URLSearchParams({limit: String(limit)});
  if (prefix) q.set('prefix', prefix);
  if (cur) q.set('cursor', cur);
  const [r, err, reload] = useRead<Answer<T>>(path ? path + (path.includes('?') ? '&' : '?') + q : null, every);
  return {
    items: r ? r.items || [] : err ? [] : null, err, page: cs.length, more: !!r?.next_cursor,
    next: () => { if (r?.next_cursor) setCursors([...cs, r.next_cursor]); },
    prev: () => { if (cs.length > 1) setCursors(cs.slice(0, -1)); },
    reload,
  };
}

// usePrefix is the prefix search box's value, kept in the address's
// query under "prefix" (typed at once; read 250 ms after typing stops).
export function usePrefix(initial: string): [string, string, (v: string) => void] {
  const [typed, setTyped] = useState(initial);
  const [prefix, setPrefix] = useState(initial);
  useEffect(() => {
    const t = setTimeout(() => {
      const v = typed.trim();
      setPrefix(v);
      const [path, qs] = location.hash.split('?');
      const q = new URLSearchParams(qs || '');
      if (v) q.set('prefix', v); else q.delete('prefix');
      const s = q.toString();
      history.replaceState(history.state, '', path + (s ? '?' + s : ''));
    }, 250);
    return () => clearTimeout(t);
  }, [typed]);
  return [typed, prefix, setTyped];
}

export function Pager<T>({p, what}: {p: Paged<T>; what: string}) {
  if (p.page === 1 && !p.more) return null;
  return (
    <nav className="pager" aria-label={`pages of ${what}`}>
      <button type="button" className="small" id="page-prev" disabled={p.page === 1} onClick={p.prev}>← Previous</button>
      <span className="muted" id="page-no">page {p.page}</span>
      <button type="button" className="small" id="page-next" disabled={!p.more} onClick={p.next}>Next →</button>
    </nav>
  );
}

export function PrefixBox({id, label, value, onChange}: {id: string; label: string; value: string; onChange: (v: string) => void}) {
  return <label className="find">{label} <input type="search" id={id} value={value} spellCheck={false} placeholder="name starts with…"
    onChange={(e) => onChange(e.target.value)} /></label>;
}
