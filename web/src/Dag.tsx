// The read-only DAG of an instance: @xyflow/react draws, pans and zooms it;
// graph.ts lays it out. Nodes show their state by colour, symbol and text.
//
// Live updates do not go through React Flow: its nodes array changes only
// when the graph's shape does. What a node shows (state, label, selected,
// search hit, critical) lives in a small store keyed by task name, which
// writes a change straight to that node's element.
import {memo, useCallback, useEffect, useLayoutEffect, useMemo, useRef} from 'react';
import {Background, Controls, MiniMap, Position, ReactFlow, useReactFlow, useStore, ReactFlowProvider,
  type Edge, type Node, type NodeProps} from '@xyflow/react';
import {layout, NODE_H, NODE_W, type SpecTask} from './graph';
import {STATE_SYMBOL, stateClass} from './states';
import {perf} from './perf';

export interface NodeInfo {
  state: string;
  label: string;
  title: string;
}

interface Look extends NodeInfo { selected: boolean; hit: boolean; critical: boolean }

const NONE: Look = {state: '', label: '', title: '', selected: false, hit: false, critical: false};

// LookStore holds each node's look and applies a change to the node's
// element itself: a poll that moves 500 of 1,000 tasks then costs a few
// attribute writes per node, not 500 React renders. A node that React
// renders again reads its look from here, so the two never disagree.
class LookStore {
  private looks = new Map<string, Look>();
  private els = new Map<string, HTMLDivElement>();
  get = (name: string) => this.looks.get(name) || NONE;
  attach(name: string, el: HTMLDivElement | null) {
    if (el) {
      this.els.set(name, el);
      paint(el, this.get(name));
    } else this.els.delete(name);
  }
  set(name: string, l: Look) {
    const o = this.looks.get(name);
    if (o && o.state === l.state && o.label === l.label && o.title === l.title && o.selected === l.selected &&
        o.hit === l.hit && o.critical === l.critical) return;
    this.looks.set(name, l);
    const el = this.els.get(name);
    if (el) paint(el, l);
  }
}

function classOf(l: Look) {
  return ['dagnode', 'node', stateClass(l.state), l.selected && 'selected', l.hit && 'hit', l.critical && 'critical'].filter(Boolean).join(' ');
}

function paint(el: HTMLDivElement, l: Look) {
  const c = classOf(l);
  if (el.className !== c) el.className = c;
  if (el.dataset.state !== l.state) el.dataset.state = l.state;
  if (el.title !== l.title) el.title = l.title;
  const sym = el.querySelector('.sym'), sub = el.querySelector('.sub');
  const sy = STATE_SYMBOL[l.state] ?? '•';
  if (sym && sym.textContent !== sy) sym.textContent = sy;
  if (sub && sub.textContent !== l.label) sub.textContent = l.label;
}

type TaskData = {name: string; store: LookStore};

const TaskNode = memo(function TaskNode({data}: NodeProps<Node<TaskData>>) {
  const {name, store} = data;
  const ref = useCallback((el: HTMLDivElement | null) => store.attach(name, el), [store, name]);
  const l = store.get(name);
  return (
    <div ref={ref} className={classOf(l)} data-task={name} data-state={l.state} title={l.title}>
      <div className="react-flow__handle react-flow__handle-left target" data-handlepos="left" />
      <span className="sym" aria-hidden="true">{STATE_SYMBOL[l.state] ?? '•'}</span>
      <span className="txt"><span className="name">{name}</span><span className="sub">{l.label}</span></span>
      <div className="react-flow__handle react-flow__handle-right source" data-handlepos="right" />
    </div>
  );
});

const nodeTypes = {task: TaskNode};

const MINIMAP_LIMIT = 400;
const EDGE_ZOOM = 0.25;
const NO_EDGES: Edge[] = [];

// The handles are plain elements React Flow measures (and given here for
// before it does), not Handle components: each of those subscribes to
// React Flow's store, and 10,000 of them make every change slow.
const HANDLES = [
  {type: 'target' as const, position: Position.Left, x: 0, y: NODE_H / 2, width: 1, height: 1},
  {type: 'source' as const, position: Position.Right, x: NODE_W - 1, y: NODE_H / 2, width: 1, height: 1},
];

interface Props {
  tasks: SpecTask[];
  info: (name: string) => NodeInfo;
  selected: string;
  search: string;
  critical?: Set<string>;
  onSelect: (name: string) => void;
  onReady?: () => void;
  version: number; // bumps when the states change
  changed?: Set<string> | null; // the tasks whose state this version changed (null: any)
  refit?: boolean;  // flips when the box changes width (the side panel opens or closes)
}

function Flow({tasks, info, selected, search, critical, onSelect, onReady, version, changed, refit}: Props) {
  const rf = useReactFlow();
  const store = useMemo(() => new LookStore(), []);
  // The layout depends on the graph's shape only, not on states.
  const shapeKey = useMemo(() => tasks.map((t) => t.name + '<' + (t.depends_on || []).join(',')).join(';'), [tasks]);
  const shape = useMemo(() => tasks, [shapeKey]); // eslint-disable-line react-hooks/exhaustive-deps
  const pos = useMemo(() => { const p = layout(shape); perf.mark('laid out'); return p; }, [shape]);
  const q = search.trim().toLowerCase();

  // Looks first, so nodes mounting now read them.
  const look = (name: string) => store.set(name, {...info(name), selected: name === selected,
    hit: !!q && name.toLowerCase().includes(q), critical: !!critical?.has(name)});
  const looks = () => { for (const t of shape) look(t.name); };
  const first = useRef(true);
  if (first.current) { first.current = false; looks(); }
  // A live update that says which tasks changed looks at those only.
  const was = useRef({shape, selected, q, critical});
  useLayoutEffect(() => {
    const w = was.current;
    was.current = {shape, selected, q, critical};
    if (changed && w.shape === shape && w.selected === selected && w.q === q && w.critical === critical) {
      for (const n of changed) if (pos.has(n)) look(n);
    } else looks();
  }, [shape, version, selected, q, critical]); // eslint-disable-line react-hooks/exhaustive-deps

  const nodes = useMemo(() => shape.map((t): Node<TaskData> => ({id: t.name, type: 'task', position: pos.get(t.name)!,
    width: NODE_W, height: NODE_H, handles: HANDLES, data: {name: t.name, store}, draggable: false, connectable: false})),
  [shape, pos, store]);
  const edges = useMemo(() => {
    const names = new Set(shape.map((t) => t.name));
    const out: Edge[] = [];
    for (const t of shape) for (const d of t.depends_on || []) {
      if (names.has(d)) out.push({id: `${d}>${t.name}`, source: d, target: t.name,
        className: critical?.has(d) && critical?.has(t.name) ? 'critical' : ''});
    }
    return out;
  }, [shape, critical]);

  // A narrower or wider box: fit again once it has its new size.
  const refitted = useRef(refit);
  useEffect(() => {
    if (refitted.current === refit) return;
    refitted.current = refit;
    // With a task chosen, keep it in the middle at the zoom the user has
    // (a big DAG searched stays where it was); else fit the whole graph.
    const p = selected ? pos.get(selected) : undefined;
    const id = requestAnimationFrame(() => {
      if (p) rf.setCenter(p.x + NODE_W / 2, p.y + NODE_H / 2, {zoom: rf.getZoom(), duration: 0});
      else rf.fitView(FIT);
    });
    return () => cancelAnimationFrame(id);
  }, [refit]); // eslint-disable-line react-hooks/exhaustive-deps

  // Search: centre the first match.
  useEffect(() => {
    if (!q) return;
    const hit = shape.find((t) => t.name.toLowerCase().includes(q));
    if (!hit) return;
    const p = pos.get(hit.name)!;
    rf.setCenter(p.x + NODE_W / 2, p.y + NODE_H / 2, {zoom: Math.max(rf.getZoom(), 1), duration: 0});
  }, [q]); // eslint-disable-line react-hooks/exhaustive-deps

  // Stable handlers: a new function would be a change React Flow stores.
  const sel = useRef(onSelect);
  sel.current = onSelect;
  const ready = useRef(onReady);
  ready.current = onReady;
  const onNodeClick = useCallback((_: unknown, n: Node) => sel.current(n.id), []);
  const onInit = useCallback(() => requestAnimationFrame(() => ready.current?.()), []);
  const mmClass = useCallback((n: Node) => stateClass(store.get(n.id).state), [store]);

  // A big graph zoomed out far shows no edges: thousands of paths a few
  // pixels long cost more to draw than they show; zoomed in they are back
  // (only those in view).
  const big = shape.length > 300;
  const near = useStore((s) => s.transform[2] >= EDGE_ZOOM);
  return <FlowView nodes={nodes} edges={big && !near ? NO_EDGES : edges} big={big} minimap={shape.length <= MINIMAP_LIMIT}
    onNodeClick={onNodeClick} onInit={onInit} mmClass={mmClass} />;
}

// FlowView takes only stable props, so a live update (which re-renders
// Flow) does not re-render React Flow's tree.
const FlowView = memo(function FlowView({nodes, edges, big, minimap, onNodeClick, onInit, mmClass}: {
  nodes: Node<TaskData>[]; edges: Edge[]; big: boolean; minimap: boolean;
  onNodeClick: (e: unknown, n: Node) => void; onInit: () => void; mmClass: (n: Node) => string;
}) {
  return (
    <ReactFlow nodes={nodes} edges={edges} nodeTypes={nodeTypes} fitView fitViewOptions={FIT} minZoom={0.02} maxZoom={2}
      onlyRenderVisibleElements={big} nodesDraggable={false} nodesConnectable={false}
      elementsSelectable={false} proOptions={PRO} onNodeClick={onNodeClick} onInit={onInit}
      aria-label="workflow DAG">
      <Background gap={24} />
      <Controls showInteractive={false} aria-label="zoom and fit" />
      {/* The minimap redraws every node on every change: past a few
          hundred tasks it costs more than it shows; fit view does its job. */}
      {minimap ? <MiniMap pannable zoomable ariaLabel="overview of the DAG" nodeClassName={mmClass} /> : null}
    </ReactFlow>
  );
});

const PRO = {hideAttribution: true};
// A small DAG is fitted at its natural size, not blown up.
const FIT = {maxZoom: 1};

export function Dag(props: Props) {
  return (
    <div className="dag flowbox">
      <ReactFlowProvider><Flow {...props} /></ReactFlowProvider>
    </div>
  );
}
