// Figures the browser tests read (window.belugaPerf): when the DAG was
// fitted and interactive, and the main-thread time of each live update.
const w = window as unknown as {belugaPerf?: unknown};
const store: {ready: {tasks: number; drawn: number; at: number}[]; updates: {ms: number; tasks: number; kind: string}[]; marks: Record<string, number>} = {ready: [], updates: [], marks: {}};
w.belugaPerf = store;

export const perf = {
  mark(name: string) { if (!(name in store.marks)) store.marks[name] = performance.now(); },
  // tasks: the graph's; drawn: its nodes drawn (fewer when collapsed)
  ready(tasks: number, drawn = tasks) { store.ready.push({tasks, drawn, at: performance.now()}); },
  // kind: 'event' (applied from the event stream) or 'read' (a read's answer)
  update(ms: number, tasks: number, kind: string) {
    store.updates.push({ms, tasks, kind});
    if (store.updates.length > 200) store.updates.shift();
  },
};
