// The read-only DAG of an instance: @xyflow/react draws, pans and zooms it;
// graph.ts lays it out. Nodes show their state by colour, symbol and text.
//
// Live updates do not go through React Flow: its nodes array changes only
// when the graph's shape does. What a node shows (state, label, selected,
// search hit, critical) lives in a small store keyed by task name, which
// writes a change straight to that node's element.
import {memo, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState} from 'react';
import {Background, ControlButton, Controls, MiniMap, Position, ReactFlow, useReactFlow, useStore, useStoreApi, ReactFlowProvider,
  getViewportForBounds, type Edge, type Node, type NodeProps} from '@xyflow/react';
import {collapse, inBox, layout, nearBox, nearKey, NODE_H, NODE_W, step, type Collapsed, type Pos, type SpecTask} from './graph';
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
export class LookStore {
  private looks = new Map<string, Look>();
  private els = new Map<string, HTMLDivElement>();
  // onChange is told of every change (the overview redraws).
  onChange: (() => void) | null = null;
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
    this.onChange?.();
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
const NO_NODES: Node<TaskData>[] = [];
// A big graph (more than BIG tasks) zoomed out below LOD_ZOOM is drawn on
// one canvas (a box per task, coloured and marked by state) instead of as
// React Flow nodes: fitted, 5,000 nodes are a few pixels each, and
// mounting them cost most of the time to open the page. Zoomed in, the
// nodes in view are React Flow's again.
const BIG = 300;
export const LOD_ZOOM = 0.4;
const PAD = 0.1;

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
  // onCursor is told where the arrow keys moved the cursor (the chosen
  // task, shown selected); Enter then goes to onSelect. Without it the
  // arrows choose through onSelect.
  onCursor?: (name: string) => void;
  onReady?: () => void;
  version: number; // bumps when the states change
  changed?: Set<string> | null; // the tasks whose state this version changed (null: any)
  refit?: boolean;  // flips when the box changes width (the side panel opens or closes)
}

function Flow({tasks, info, selected, search, critical, onSelect, onCursor, onReady, version, changed, refit}: Props) {
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

  // fit shows the whole graph: React Flow's fitView for a small one; for a
  // big one, whose nodes React Flow may not hold, the layout's bounds,
  // through the overview. Until its first fit a big graph gives React Flow
  // no nodes: it would mount those in view at zoom 1 only to drop them.
  const big = shape.length > BIG;
  const [fitting, fitBig] = useBigFit(pos, big);
  const fit = useCallback(() => (big ? fitBig() : void rf.fitView(FIT)), [big, fitBig, rf]);

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
      else fit();
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
  useLayoutEffect(() => perf.mark('dag committed'), []);
  const onNodeClick = useCallback((_: unknown, n: Node) => sel.current(n.id), []);
  const onInit = useCallback(() => {
    perf.mark('flow ready');
    if (big) fit();
    requestAnimationFrame(() => ready.current?.());
  }, []); // eslint-disable-line react-hooks/exhaustive-deps
  const mmClass = useCallback((n: Node) => stateClass(store.get(n.id).state), [store]);
  // A click on the overview: the task under it, zoomed in and chosen.
  const onPaneClick = useCallback((e: {clientX: number; clientY: number}) => {
    if (rf.getZoom() >= LOD_ZOOM) return;
    const at = rf.screenToFlowPosition({x: e.clientX, y: e.clientY});
    for (const [name, p] of pos) {
      if (at.x >= p.x && at.x <= p.x + NODE_W && at.y >= p.y && at.y <= p.y + NODE_H) {
        rf.setCenter(p.x + NODE_W / 2, p.y + NODE_H / 2, {zoom: 1, duration: 0});
        sel.current(name);
        return;
      }
    }
  }, [pos, rf]);

  // A big graph zoomed out far shows no edges: thousands of paths a few
  // pixels long cost more to draw than they show; zoomed in they are back
  // (only those in view). Zoomed out further its nodes are the overview.
  const close = useStore((s) => s.transform[2] >= EDGE_ZOOM);
  const lod = useStore((s) => s.transform[2] < LOD_ZOOM) && big || fitting;
  // Zoomed in on a big graph, React Flow holds the nodes and edges near
  // the screen only (useNear), not all 5,000.
  const near = useNear(big && !lod);
  const nearNodes = useMemo(() => {
    if (!near) return nodes;
    const b = nearBox(near);
    return nodes.filter((n) => inBox(b, n.position));
  }, [near, nodes]);
  const nearEdges = useMemo(() => {
    if (!near) return edges;
    const b = nearBox(near);
    return edges.filter((e) => inBox(b, pos.get(e.source)) && inBox(b, pos.get(e.target)));
  }, [near, edges, pos]);
  // The same element while nothing it shows changed: FlowView (memo)
  // then skips a live update, which the overview redraws by itself.
  const overview = useMemo(() => (big ? <Overview pos={pos} store={store} on={lod} /> : null), [big, pos, store, lod]);

  // The keyboard: the arrows move the cursor along the edges and within a
  // column, centring the task; Enter opens it (its log), as a click does.
  const [said, setSaid] = useState('');
  const onKeyDown = (e: React.KeyboardEvent) => {
    if (e.target !== e.currentTarget || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === 'Enter' || e.key === ' ') {
      if (!selected) return;
      e.preventDefault();
      sel.current(selected);
      return;
    }
    if (!['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home'].includes(e.key)) return;
    e.preventDefault();
    const to = step(shape, pos, selected, e.key);
    if (!to) return;
    const p = pos.get(to)!;
    rf.setCenter(p.x + NODE_W / 2, p.y + NODE_H / 2, {zoom: Math.max(rf.getZoom(), LOD_ZOOM), duration: 0});
    (onCursor || sel.current)(to);
    setSaid(`${info(to).title}. Enter opens it.`);
  };
  return (
    <div className="dagkeys" tabIndex={0} role="group" onKeyDown={onKeyDown} data-cursor={selected}
      aria-label="workflow DAG: the arrow keys move between tasks, Enter opens the chosen one">
      <FlowView nodes={lod ? NO_NODES : nearNodes} edges={big && (!close || lod) ? NO_EDGES : nearEdges} big={big}
        minimap={shape.length <= MINIMAP_LIMIT} onNodeClick={onNodeClick} onInit={onInit} mmClass={mmClass}
        onFit={fit} onPaneClick={onPaneClick}>{overview}</FlowView>
      <span className="sr-only" aria-live="polite" id="dag-cursor">{said}</span>
    </div>
  );
}

export function boundsOf(pos: Map<string, Pos>) {
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (const p of pos.values()) {
    x0 = Math.min(x0, p.x); y0 = Math.min(y0, p.y);
    x1 = Math.max(x1, p.x + NODE_W); y1 = Math.max(y1, p.y + NODE_H);
  }
  if (x0 === Infinity) return {x: 0, y: 0, width: 1, height: 1};
  return {x: x0, y: y0, width: x1 - x0, height: y1 - y0};
}

// useNear is nearKey of the viewport as it moves; '' when off.
export function useNear(on: boolean): string {
  return useStore((st) => (on ? nearKey(st.transform, st.width, st.height) : ''));
}

// useBigFit fits a big graph to its layout's bounds (pos) through the
// overview: for a frame React Flow is given no nodes (fitting: the caller
// shows the overview instead), then the viewport moves. Moving it at once
// (or React Flow's own fit) would render every node, at its new small
// zoom, in the frame before the caller hands React Flow none: all 5,000
// mounted. fitting starts as initially says (a graph not yet fitted).
export function useBigFit(pos: Map<string, Pos>, initially = false): [boolean, () => void] {
  const rf = useReactFlow();
  const st = useStoreApi();
  const [fitting, setFitting] = useState(initially);
  const fit = useCallback(() => {
    setFitting(true);
    requestAnimationFrame(() => {
      const el = st.getState().domNode;
      if (el) rf.setViewport(getViewportForBounds(boundsOf(pos), el.clientWidth, el.clientHeight, 0.02, 1, PAD), {duration: 0});
      setFitting(false);
    });
  }, [pos, rf, st]);
  return [fitting, fit];
}

// FitControls are React Flow's zoom and fit buttons; for a big graph the
// fit button is onFit (useBigFit's), as React Flow's own fits over its
// nodes first, mounting them all.
export function FitControls({big, onFit, showInteractive = true}: {big: boolean; onFit: () => void; showInteractive?: boolean}) {
  return (
    <Controls aria-label="zoom and fit" showFitView={!big} showInteractive={showInteractive}>
      {big ? <ControlButton className="react-flow__controls-fitview" onClick={onFit} title="fit view" aria-label="fit view">⤢</ControlButton> : null}
    </Controls>
  );
}

// colours reads each state's colours from the stylesheet (st-<state>),
// all at once (one style computation), so the overview matches the nodes.
let COLOURS: Map<string, {fg: string; bg: string}> | null = null;
function colour(state: string) {
  if (!COLOURS) {
    COLOURS = new Map();
    const box = document.createElement('div');
    box.style.display = 'none';
    const probes = Object.keys(STATE_SYMBOL).map((st) => {
      const p = document.createElement('span');
      p.className = 'dagnode ' + stateClass(st);
      box.appendChild(p);
      return [st, p] as const;
    });
    document.body.appendChild(box);
    for (const [st, p] of probes) {
      const cs = getComputedStyle(p);
      COLOURS.set(st, {fg: cs.color || '#57606a', bg: cs.backgroundColor || '#fff'});
    }
    box.remove();
  }
  return COLOURS.get(state) || COLOURS.get('')!;
}

// Overview draws every task of a big graph on one canvas, in screen
// coordinates, as the viewport moves and as looks change: a box per task
// in its state's colours, its symbol when there is room, the chosen task
// and search hits outlined.
export function Overview({pos, store, on}: {pos: Map<string, Pos>; store: LookStore; on: boolean}) {
  const ref = useRef<HTMLCanvasElement>(null);
  const [tx, ty, zoom] = useStore((s) => s.transform);
  const w = useStore((s) => s.width), h = useStore((s) => s.height);
  const draw = useRef(() => {});
  draw.current = () => {
    const c = ref.current;
    if (!c || !on) return;
    const dpr = window.devicePixelRatio || 1;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr); c.height = Math.round(h * dpr);
    }
    const g = c.getContext('2d');
    if (!g) return;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const bw = Math.max(1, NODE_W * zoom), bh = Math.max(1, NODE_H * zoom);
    // One path per state, filled and stroked once: a few draw calls
    // however many tasks (one per task cost most of a frame at 1,000).
    const byState = new Map<string, Path2D>();
    const marks = bh >= 14 ? new Map<string, [number, number][]>() : null;
    const outlined = new Path2D();
    for (const [name, p] of pos) {
      const x = p.x * zoom + tx, y = p.y * zoom + ty;
      if (x + bw < 0 || y + bh < 0 || x > w || y > h) continue;
      const l = store.get(name);
      let path = byState.get(l.state);
      if (!path) byState.set(l.state, path = new Path2D());
      path.rect(x + 0.5, y + 0.5, bw - 1, bh - 1);
      if (marks) (marks.get(l.state) || marks.set(l.state, []).get(l.state)!).push([x, y]);
      if (l.selected || l.hit) outlined.rect(x - 2, y - 2, bw + 4, bh + 4);
    }
    g.lineWidth = 1;
    for (const [st, path] of byState) {
      const k = colour(st);
      g.fillStyle = k.bg;
      g.fill(path);
      if (bw >= 3) { g.strokeStyle = k.fg; g.stroke(path); }
    }
    if (marks) {
      g.font = `${Math.min(12, bh * 0.5)}px sans-serif`;
      g.textBaseline = 'middle';
      for (const [st, at] of marks) {
        g.fillStyle = colour(st).fg;
        const sym = STATE_SYMBOL[st] ?? '•';
        for (const [x, y] of at) g.fillText(sym, x + 3, y + bh / 2);
      }
    }
    g.strokeStyle = '#0969da'; g.lineWidth = 2;
    g.stroke(outlined);
    perf.mark('overview drawn');
  };
  useLayoutEffect(() => { draw.current(); });
  useEffect(() => {
    let frame = 0;
    store.onChange = () => { if (!frame) frame = requestAnimationFrame(() => { frame = 0; draw.current(); }); };
    return () => { store.onChange = null; cancelAnimationFrame(frame); };
  }, [store]);
  return <canvas ref={ref} className="overview" role="img" hidden={!on} style={{width: w, height: h}}
    aria-label={`Overview of ${pos.size} tasks, coloured by state: zoom in, search or click a task to see it`} />;
}

// FlowView takes only stable props, so a live update (which re-renders
// Flow) does not re-render React Flow's tree.
const FlowView = memo(function FlowView({nodes, edges, big, minimap, onNodeClick, onInit, mmClass, onFit, onPaneClick, children}: {
  nodes: Node<TaskData>[]; edges: Edge[]; big: boolean; minimap: boolean;
  onNodeClick: (e: unknown, n: Node) => void; onInit: () => void; mmClass: (n: Node) => string;
  onFit: () => void; onPaneClick: (e: {clientX: number; clientY: number}) => void; children?: React.ReactNode;
}) {
  return (
    <ReactFlow nodes={nodes} edges={edges} nodeTypes={nodeTypes} fitView={!big} fitViewOptions={FIT} minZoom={0.02} maxZoom={2}
      onlyRenderVisibleElements={big} nodesDraggable={false} nodesConnectable={false}
      elementsSelectable={false} proOptions={PRO} onNodeClick={onNodeClick} onInit={onInit} onPaneClick={onPaneClick}
      aria-label="workflow DAG">
      <Background gap={24} />
      {children}
      <FitControls big={big} onFit={onFit} showInteractive={false} />
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

// FOLD_ABOVE: a graph of more tasks opens collapsed by prefix (its full
// layout and drawing would cost seconds at 100,000 tasks).
const FOLD_ABOVE = 5000;

// useFold is a graph's collapse by prefix (each family of tasks, part_1,
// part_2, …, one node): on by itself past FOLD_ABOVE tasks unless folding
// would not help, else as the user sets it.
export function useFold(tasks: SpecTask[]): [Collapsed | null, (on: boolean) => void] {
  const [choice, setChoice] = useState<boolean | null>(null);
  const fold = useMemo(() => {
    if (!(choice ?? tasks.length > FOLD_ABOVE)) return null;
    const f = collapse(tasks);
    return choice === null && f.tasks.length > FOLD_ABOVE ? null : f;
  }, [choice, tasks]);
  return [fold, setChoice];
}
