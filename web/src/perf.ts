// Figures the browser tests read (window.belugaPerf): when the DAG was
// fitted and interactive, the main-thread time of each live update, and
// counts (how many times the editor's nodes rendered).
const w = window as unknown as {belugaPerf?: unknown};
const store: {ready: {tasks: number; drawn: number; at: number; page?: string}[]; updates: {ms: number; tasks: number; kind: string}[];
  marks: Record<string, number>; counts: Record<string, number>} = {ready: [], updates: [], marks: {}, counts: {}};
w.belugaPerf = store;

export const perf = {
  mark(name: string) { if (!(name in store.marks)) store.marks[name] = performance.now(); },
  // tasks: the graph's; drawn: its nodes drawn (fewer when collapsed)
  // page: which page drew it (the instance page's leave it out)
  ready(tasks: number, drawn = tasks, page?: string) { store.ready.push({tasks, drawn, at: performance.now(), ...(page ? {page} : {})}); },
  count(name: string, by = 1) { store.counts[name] = (store.counts[name] || 0) + by; },
  // kind: 'event' (applied from the event stream) or 'read' (a read's answer)
  update(ms: number, tasks: number, kind: string) {
    store.updates.push({ms, tasks, kind});
    if (store.updates.length > 200) store.updates.shift();
  },
};
