// The read-only DAG of an instance: @xyflow/react draws, pans and zooms it;
// graph.ts lays it out. Nodes show their state by colour, symbol and text.
import {memo, useEffect, useMemo, useRef} from 'react';
import {Background, Controls, Handle, MiniMap, Position, ReactFlow, useReactFlow, ReactFlowProvider,
  type Edge, type Node, type NodeProps} from '@xyflow/react';
import {layout, NODE_H, NODE_W, type SpecTask} from './graph';
import {STATE_SYMBOL, stateClass} from './states';

export interface NodeInfo {
  state: string;
  label: string;
  title: string;
}

type TaskData = {name: string; info: NodeInfo; selected: boolean; hit: boolean; critical: boolean};

const TaskNode = memo(function TaskNode({data}: NodeProps<Node<TaskData>>) {
  const {name, info} = data;
  return (
    <div className={['dagnode', 'node', stateClass(info.state), data.selected && 'selected', data.hit && 'hit', data.critical && 'critical']
      .filter(Boolean).join(' ')} data-task={name} data-state={info.state} title={info.title}>
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <span className="sym" aria-hidden="true">{STATE_SYMBOL[info.state] ?? '•'}</span>
      <span className="txt"><span className="name">{name}</span><span className="sub">{info.label}</span></span>
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
});

const nodeTypes = {task: TaskNode};

interface Props {
  tasks: SpecTask[];
  info: (name: string) => NodeInfo;
  selected: string;
  search: string;
  critical?: Set<string>;
  onSelect: (name: string) => void;
  onReady?: () => void;
  version: number; // bumps when the states change
}

function Flow({tasks, info, selected, search, critical, onSelect, onReady, version}: Props) {
  const rf = useReactFlow();
  // The layout depends on the graph's shape only, not on states.
  const shapeKey = useMemo(() => tasks.map((t) => t.name + '<' + (t.depends_on || []).join(',')).join(';'), [tasks]);
  const pos = useMemo(() => layout(tasks), [shapeKey]); // eslint-disable-line react-hooks/exhaustive-deps
  const q = search.trim().toLowerCase();
  const prev = useRef(new Map<string, Node<TaskData>>());
  const nodes = useMemo(() => {
    const out: Node<TaskData>[] = [];
    const next = new Map<string, Node<TaskData>>();
    for (const t of tasks) {
      const i = info(t.name);
      const hit = !!q && t.name.toLowerCase().includes(q);
      const sel = t.name === selected;
      const crit = !!critical?.has(t.name);
      const p = pos.get(t.name)!;
      const old = prev.current.get(t.name);
      // Keep the node object when nothing it shows changed, so React Flow
      // re-renders only the nodes a live update touched.
      if (old && old.data.info.state === i.state && old.data.info.label === i.label && old.data.selected === sel &&
          old.data.hit === hit && old.data.critical === crit && old.position === p) {
        out.push(old);
        next.set(t.name, old);
        continue;
      }
      const n: Node<TaskData> = {id: t.name, type: 'task', position: p, width: NODE_W, height: NODE_H,
        data: {name: t.name, info: i, selected: sel, hit, critical: crit}, draggable: false, connectable: false};
      out.push(n);
      next.set(t.name, n);
    }
    prev.current = next;
    return out;
  }, [tasks, pos, version, selected, q, critical]); // eslint-disable-line react-hooks/exhaustive-deps
  const edges = useMemo(() => {
    const names = new Set(tasks.map((t) => t.name));
    const out: Edge[] = [];
    for (const t of tasks) for (const d of t.depends_on || []) {
      if (names.has(d)) out.push({id: `${d}>${t.name}`, source: d, target: t.name, data: {from: d, to: t.name},
        className: critical?.has(d) && critical?.has(t.name) ? 'critical' : ''});
    }
    return out;
  }, [shapeKey, critical]); // eslint-disable-line react-hooks/exhaustive-deps

  // Search: centre the first match.
  useEffect(() => {
    if (!q) return;
    const hit = tasks.find((t) => t.name.toLowerCase().includes(q));
    if (!hit) return;
    const p = pos.get(hit.name)!;
    rf.setCenter(p.x + NODE_W / 2, p.y + NODE_H / 2, {zoom: Math.max(rf.getZoom(), 1), duration: 0});
  }, [q]); // eslint-disable-line react-hooks/exhaustive-deps

  return (
    <ReactFlow nodes={nodes} edges={edges} nodeTypes={nodeTypes} fitView minZoom={0.02} maxZoom={2}
      onlyRenderVisibleElements={tasks.length > 300} nodesDraggable={false} nodesConnectable={false}
      elementsSelectable={false} proOptions={{hideAttribution: true}}
      onNodeClick={(_, n) => onSelect(n.id)}
      onInit={() => onReady && requestAnimationFrame(() => onReady())}
      aria-label="workflow DAG">
      <Background gap={24} />
      <Controls showInteractive={false} aria-label="zoom and fit" />
      <MiniMap pannable zoomable ariaLabel="overview of the DAG" nodeClassName={(n) => stateClass((n.data as TaskData).info.state)} />
    </ReactFlow>
  );
}

export function Dag(props: Props) {
  return (
    <div className="dag flowbox" data-ready="">
      <ReactFlowProvider><Flow {...props} /></ReactFlowProvider>
    </div>
  );
}
