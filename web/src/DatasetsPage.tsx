// Lineage you can see: a project's datasets (who produces and consumes
// each, its newest partition), one dataset's producers -> dataset ->
// consumers with its partitions' state and the runs that read them, and
// (RunDatasets, on the instance page) what a run waited for and produced.
import {useEffect, useState} from 'react';
import {describe} from './api';
import {call, pathOf, type DatasetConsumer, type DatasetDetail, type DatasetEvent, type DatasetFire, type DatasetList,
  type RunDatasets as RunLineage} from './client';
import {covers, partitionState} from './lineage';
import {Err, Time, enc, useList, useRead} from './ui';

const REFRESH_MS = 10000;

export const datasetHref = (project: string, name: string) => `#/datasets/${enc(project)}/${enc(name)}`;
const workflowHref = (project: string, name: string) => `#/workflows/${enc(project)}/${enc(name)}`;

// DatasetsIndex lets the user pick a project.
export function DatasetsIndex() {
  const [items, err] = useList<{name: string}>('/api/v1/projects');
  return (
    <div className="datasets">
      <h1>Datasets</h1>
      <p className="hint">Datasets are named per project: tasks produce their partitions, workflows scheduled on them consume them.</p>
      <Err text={err} />
      <ul id="dataset-projects">{(items || []).map((p) => <li key={p.name}><a href={`#/datasets/${enc(p.name)}`}>{p.name}</a></li>)}</ul>
    </div>
  );
}

function grains(c: DatasetConsumer[] | null): string {
  return [...new Set((c || []).map((x) => x.grain).filter(Boolean))].join(', ');
}

export function DatasetsPage({project}: {project: string}) {
  const [r, err] = useRead<DatasetList>(pathOf('GET /api/v1/projects/{project}/datasets', {project}), REFRESH_MS);
  const [find, setFind] = useState('');
  const all = r ? r.datasets || [] : null;
  const ds = all && all.filter((d) => d.name.includes(find.trim()));
  return (
    <div className="datasets">
      <h1>Datasets of {project}</h1>
      <Err text={err} />
      <p><label className="find">Find dataset <input type="search" id="dataset-find" value={find} spellCheck={false}
        onChange={(e) => setFind(e.target.value)} /></label></p>
      <table className="grid datasets-table">
        <thead><tr><th scope="col">Dataset</th><th scope="col">Grain</th><th scope="col">Producers</th><th scope="col">Consumers</th>
          <th scope="col">Partitions</th><th scope="col">Latest partition</th><th scope="col">Produced</th></tr></thead>
        <tbody>{ds === null ? <tr className="empty"><td colSpan={7}>Loading…</td></tr> : ds.length ? ds.map((d) => (
          <tr key={d.name} data-dataset={d.name}>
            <td><a href={datasetHref(project, d.name)}>{d.name}</a></td>
            <td>{grains(d.consumers) || <span className="muted">–</span>}</td>
            <td>{(d.producers || []).map((p) => <div key={p.workflow + '/' + p.task}><a href={workflowHref(project, p.workflow)}>{p.workflow}</a>.{p.task}</div>)}</td>
            <td>{(d.consumers || []).map((c) => <div key={c.workflow}><a href={workflowHref(project, c.workflow)}>{c.workflow}</a></div>)}</td>
            <td>{d.partitions}</td>
            <td>{d.last_partition ? <code>{d.last_partition}</code> : <span className="muted">none yet</span>}</td>
            <td><Time iso={d.last_event_at} /></td>
          </tr>)) : <tr className="empty"><td colSpan={7}>{all?.length ? `No dataset named like “${find.trim()}”.` : "No dataset: a task's produces or a workflow's on_datasets names one."}</td></tr>}</tbody>
      </table>
    </div>
  );
}

// useFires reads the ledgers of the dataset's consumers.
function useFires(project: string, consumers: string[], tick: unknown): [Record<string, DatasetFire[]>, string] {
  const [fires, setFires] = useState<Record<string, DatasetFire[]>>({});
  const [err, setErr] = useState('');
  const key = consumers.join('\n');
  useEffect(() => {
    const ctrl = new AbortController();
    Promise.all(consumers.map((w) => call('GET /api/v1/projects/{project}/workflows/{name}/dataset-fires', {project, name: w}, undefined, ctrl.signal)
      .then((r) => [w, r.fires || []] as const)))
      .then((all) => { setFires(Object.fromEntries(all)); setErr(''); })
      .catch((e: any) => { if (e.name !== 'AbortError') setErr(describe(e)); });
    return () => ctrl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [project, key, tick]);
  return [fires, err];
}

function producerText(e: DatasetEvent) {
  if (e.run_id) return <a href={`#/instances/${e.run_id}`}>run #{e.run_id}</a>;
  return <span>{e.produced_by ? `posted by ${e.produced_by}` : 'posted from outside'}</span>;
}

export function DatasetPage({project, name}: {project: string; name: string}) {
  const [d, err] = useRead<DatasetDetail>(pathOf('GET /api/v1/projects/{project}/datasets/{dataset}', {project, dataset: name}) + '?limit=200', REFRESH_MS);
  const consumers = (d?.consumers || []).map((c) => c.workflow);
  const [fires, ferr] = useFires(project, consumers, d);
  const parts = d ? d.partition_list || [] : null;
  return (
    <div className="datasets dataset">
      <h1>Dataset <code>{name}</code> <span className="muted">in {project}</span></h1>
      <p><a href={`#/datasets/${enc(project)}`}>All datasets of {project}</a></p>
      <Err text={err} />
      <Err text={ferr} />
      <section className="lineage" aria-label="lineage">
        <div className="lineage-col" id="dataset-producers">
          <h2>Producers</h2>
          {d && (d.producers || []).length ? <ul>{(d.producers || []).map((p) => <li key={p.workflow + '/' + p.task}>
            <a href={workflowHref(project, p.workflow)}>{p.workflow}</a> <span className="muted">task</span> <code>{p.task}</code></li>)}</ul>
            : <p className="muted">{d ? 'No task declares it (events may come from outside).' : 'Loading…'}</p>}
        </div>
        <div className="lineage-arrow" aria-hidden="true">→</div>
        <div className="lineage-col lineage-self"><h2>Dataset</h2><p><code>{name}</code></p>
          {d ? <p className="muted">{d.partitions} partition{d.partitions === 1 ? '' : 's'}</p> : null}</div>
        <div className="lineage-arrow" aria-hidden="true">→</div>
        <div className="lineage-col" id="dataset-consumers">
          <h2>Consumers</h2>
          {d && (d.consumers || []).length ? <ul>{(d.consumers || []).map((c) => <li key={c.workflow} data-consumer={c.workflow}>
            <a href={workflowHref(project, c.workflow)}>{c.workflow}</a> <span className="muted">reads {c.grain}, runs {c.run_grain}, late data: {c.late_data}</span></li>)}</ul>
            : <p className="muted">{d ? 'No workflow is scheduled on it.' : ''}</p>}
        </div>
      </section>
      <h2>Partitions <span className="muted">(the newest 200)</span></h2>
      <table className="grid partitions">
        <thead><tr><th scope="col">Partition</th><th scope="col">State</th><th scope="col">Produced by</th><th scope="col">Produced</th>
          <th scope="col">Consumer runs</th></tr></thead>
        <tbody>{parts === null ? <tr className="empty"><td colSpan={5}>Loading…</td></tr> : parts.length ? parts.map((p) => {
          const mine = Object.values(fires).flat().filter((f) => covers(f.partition, p.key));
          const state = partitionState(p.events, consumers, mine);
          const last = p.events[p.events.length - 1];
          return <tr key={p.key} data-partition={p.key} data-state={state}>
            <td><code>{p.key}</code></td>
            <td><span className={'badge partition-state ' + state.replace('-', '')}>{state}</span></td>
            <td>{p.events.map((e) => <div key={e.id}>{producerText(e)}</div>)}</td>
            <td><Time iso={last?.produced_at} /></td>
            <td>{mine.length ? mine.map((f) => <div key={f.id}>{f.workflow} {f.run_id ? <a href={`#/instances/${f.run_id}`}>#{f.run_id}</a> : null}{' '}
              <span className="muted">{f.outcome}{f.rerun ? ' (rerun)' : ''}</span></div>) : <span className="muted">none yet</span>}</td>
          </tr>;
        }) : <tr className="empty"><td colSpan={5}>No partition produced yet.</td></tr>}</tbody>
      </table>
    </div>
  );
}

// RunDatasets is the instance page's section: the inputs the run waited
// for and what its tasks produced, each linking to its dataset (none for
// a run that did neither).
export function RunDatasets({id, project}: {id: number; project: string}) {
  const [r, err] = useRead<RunLineage>(pathOf('GET /api/v1/instances/{id}/datasets', {id}), REFRESH_MS);
  const waited = r?.waited_for || [];
  const produced = r?.produced || [];
  // Most runs neither wait for nor produce a dataset: no section for them.
  if (!err && (!r || (!r.fire && !produced.length))) return null;
  return (
    <section className="run-datasets" id="run-datasets" aria-label="datasets">
      <h2>Datasets</h2>
      <Err text={err} />
      {r?.fire ? <p id="run-fire">Started for partition <code>{r.fire.partition}</code>{r.fire.rerun ? ' (a rerun: produced again)' : ''} when its inputs were ready, <Time iso={r.fire.fired_at} />.</p> : null}
      {r?.fire ? <><h3>Waited for</h3>
      {waited.length ? <table className="grid waited">
        <thead><tr><th scope="col">Dataset</th><th scope="col">Partition</th><th scope="col">Ready</th></tr></thead>
        <tbody>{waited.map((w) => <tr key={w.dataset + '@' + w.partition} data-input={w.dataset + '@' + w.partition}>
          <td><a href={datasetHref(project, w.dataset)}>{w.dataset}</a></td><td><code>{w.partition}</code></td>
          <td>{w.produced ? <Time iso={w.ready_at} /> : <span className="muted">not produced</span>}</td></tr>)}</tbody>
      </table> : <p className="muted">No input recorded.</p>}</> : null}
      <h3>Produced</h3>
      {produced.length ? <table className="grid produced">
        <thead><tr><th scope="col">Dataset</th><th scope="col">Partition</th><th scope="col">Produced</th></tr></thead>
        <tbody>{produced.map((e) => <tr key={e.id} data-produced={e.dataset + '@' + e.partition}>
          <td><a href={datasetHref(project, e.dataset)}>{e.dataset}</a></td><td><code>{e.partition}</code></td><td><Time iso={e.produced_at} /></td></tr>)}</tbody>
      </table> : <p className="muted">No partition produced.</p>}
    </section>
  );
}
