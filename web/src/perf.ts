// Figures the browser tests read (window.belugaPerf): when the DAG was
// fitted and interactive, and the main-thread time of each live update.
const w = window as unknown as {belugaPerf?: {ready: {tasks: number; at: number}[]; updates: {ms: number; tasks: number}[]}};
const store: {ready: {tasks: number; at: number}[]; updates: {ms: number; tasks: number}[]} = {ready: [], updates: []};
w.belugaPerf = store;

export const perf = {
  ready(tasks: number) { store.ready.push({tasks, at: performance.now()}); },
  update(ms: number, tasks: number) {
    store.updates.push({ms, tasks});
    if (store.updates.length > 200) store.updates.shift();
  },
};
