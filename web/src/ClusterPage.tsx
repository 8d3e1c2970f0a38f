// Cluster: masters (the leader marked) and workers with their load, read
// again every 2 s while the tab is visible.
import {Meter, Time, useRead} from './ui';

type Master = {address: string; role: string; epoch?: number; since?: string};
type Worker = {address: string; groups?: string[]; running: number; capacity: number; free_slots?: number; in_flight?: number; cpu: number; memory: number;
  load: number; start_time?: string; last_heartbeat?: string; overloaded?: boolean; overload_reason?: string; skipped?: boolean; skip_reason?: string};
type Cluster = {leader: string; masters: Master[]; workers: Worker[]};

const REFRESH_MS = 2000;
const pct = (v: number) => `${Math.round(v * 10) / 10}%`;

export function ClusterPage() {
  const [c, err] = useRead<Cluster>('/api/v1/cluster', REFRESH_MS);
  return (
    <div className="cluster">
      <div className="titlebar"><h1>Cluster</h1><p className="muted">{c ? (c.leader ? `leader: ${c.leader}` : 'no leader elected') : ''}</p></div>
      {err ? <p className="apierror" role="alert">{err}</p> : null}
      <h2>Masters</h2>
      <table className="grid masters">
        <thead><tr><th>Address</th><th>Role</th><th>Epoch</th><th>Since</th></tr></thead>
        <tbody>{!c ? null : c.masters.length ? c.masters.map((m) => (
          <tr key={m.address} className={m.role === 'active' ? 'leader' : ''}>
            <td>{m.address}{m.address === c.leader ? <span className="tag leader">leader</span> : null}</td>
            <td><span className={'badge ' + (m.role === 'active' ? 'st-running' : 'st-none')}>{m.role}</span></td>
            <td className="num">{m.epoch ? String(m.epoch) : ''}</td><td><Time iso={m.since} /></td>
          </tr>)) : <tr className="empty"><td colSpan={4}>No master is registered.</td></tr>}</tbody>
      </table>
      <h2>Workers</h2>
      <table className="grid workers">
        <thead><tr><th>Address</th><th>Groups</th><th>Running / slots</th><th>CPU</th><th>Memory</th><th>Load</th><th>Started</th><th>Last heartbeat</th></tr></thead>
        <tbody>{!c ? null : c.workers.length ? c.workers.map((w) => (
          <tr key={w.address} data-worker={w.address}>
            <td>{w.address}{w.overloaded ? <span className="tag overloaded" title={w.overload_reason || ''}>overloaded</span> : null}
              {w.skipped && !w.overloaded ? <span className="tag skipped" title={w.skip_reason || ''}>skipped</span> : null}</td>
            <td>{(w.groups || []).join(', ')}</td>
            <td title={`${w.free_slots ?? ''} free, ${w.in_flight ?? ''} in flight${w.skip_reason ? '; skipped: ' + w.skip_reason : ''}`}><Meter used={w.running} capacity={w.capacity} /></td>
            <td className="num">{pct(w.cpu)}</td><td className="num">{pct(w.memory)}</td><td className="num">{w.load.toFixed(2)}</td>
            <td><Time iso={w.start_time} /></td><td><Time iso={w.last_heartbeat} /></td>
          </tr>)) : <tr className="empty"><td colSpan={8}>No worker is registered: tasks wait until one joins.</td></tr>}</tbody>
      </table>
      <p className="hint">Task groups, the concurrency limits shared across workflows, have <a href="#/task-groups">their own page</a>.</p>
    </div>
  );
}
