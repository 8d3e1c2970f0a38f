// The DAG of a workflow spec drawn as SVG: tasks in layers by dependency
// depth, left to right, edges from each dependency to its dependent.

import {s} from './dom.js';

const W = 168, H = 42, GX = 56, GY = 14, PAD = 12;

// layout places tasks ([{name, depends_on}]) in layers: a task sits one
// layer right of its deepest dependency. Unknown dependencies are ignored
// and a cycle (a spec the API would refuse) cannot loop.
export function layout(tasks) {
  const byName = new Map(tasks.map((t) => [t.name, t]));
  const depth = new Map();
  const visiting = new Set();
  function layerOf(name) {
    if (depth.has(name)) return depth.get(name);
    if (visiting.has(name)) return 0;
    visiting.add(name);
    let d = 0;
    for (const dep of byName.get(name).depends_on || []) {
      if (byName.has(dep)) d = Math.max(d, layerOf(dep) + 1);
    }
    visiting.delete(name);
    depth.set(name, d);
    return d;
  }
  const layers = [];
  for (const t of tasks) {
    const d = layerOf(t.name);
    (layers[d] ||= []).push(t.name);
  }
  // Order each layer by the mean position of its dependencies (two sweeps
  // are plenty for the DAGs people write), keeping spec order on ties.
  const pos = new Map();
  layers.forEach((l) => l.forEach((n, i) => pos.set(n, i)));
  for (let sweep = 0; sweep < 2; sweep++) {
    for (let d = 1; d < layers.length; d++) {
      const key = new Map(layers[d].map((n, i) => {
        const deps = (byName.get(n).depends_on || []).filter((x) => pos.has(x));
        const m = deps.length ? deps.reduce((a, x) => a + pos.get(x), 0) / deps.length : i;
        return [n, [m, i]];
      }));
      layers[d].sort((a, b) => key.get(a)[0] - key.get(b)[0] || key.get(a)[1] - key.get(b)[1]);
      layers[d].forEach((n, i) => pos.set(n, i));
    }
  }
  const tallest = Math.max(1, ...layers.map((l) => l.length));
  const nodes = new Map();
  layers.forEach((l, d) => {
    const off = (tallest - l.length) * (H + GY) / 2;
    l.forEach((n, i) => nodes.set(n, {x: PAD + d * (W + GX), y: PAD + off + i * (H + GY)}));
  });
  const edges = [];
  for (const t of tasks) {
    for (const dep of t.depends_on || []) if (nodes.has(dep)) edges.push([dep, t.name]);
  }
  return {
    nodes, edges,
    width: PAD * 2 + Math.max(1, layers.length) * (W + GX) - GX,
    height: PAD * 2 + tallest * (H + GY) - GY,
  };
}

function clip(text, max) {
  return text.length > max ? text.slice(0, max - 1) + '…' : text;
}

// drawDag returns the SVG. info(name) gives {state, label, title} for a
// node; onClick(name) is called when a node is clicked. Nodes and edges
// carry keys, so a page that redraws with patch keeps the SVG and only
// changes the states and labels while the graph's shape stays the same.
export function drawDag(tasks, info, onClick, selected) {
  const g = layout(tasks);
  const svg = s('svg', {class: 'dag', width: g.width, height: g.height, viewBox: `0 0 ${g.width} ${g.height}`,
    role: 'img', 'aria-label': 'workflow DAG'});
  svg.append(s('defs', {}, s('marker', {id: 'dag-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse'}, s('path', {d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead'}))));
  for (const [from, to] of g.edges) {
    const a = g.nodes.get(from), b = g.nodes.get(to);
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x - 2, y2 = b.y + H / 2, mx = (x1 + x2) / 2;
    svg.append(s('path', {class: 'edge', d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`,
      'marker-end': 'url(#dag-arrow)', key: `edge:${from}>${to}`, dataset: {from, to}}));
  }
  for (const t of tasks) {
    const p = g.nodes.get(t.name);
    const i = info(t.name);
    const node = s('g', {key: 'node:' + t.name, class: ['node', 'st-' + (i.state || 'none'), t.name === selected && 'selected'],
      transform: `translate(${p.x},${p.y})`, tabindex: onClick ? 0 : null,
      dataset: {task: t.name, state: i.state || ''},
      on: onClick && {click: () => onClick(t.name), keydown: (e) => { if (e.key === 'Enter') onClick(t.name); }}},
    s('title', {}, i.title || t.name),
    s('rect', {width: W, height: H, rx: 5}),
    s('text', {x: 9, y: 17, class: 'name'}, clip(t.name, 22)),
    s('text', {x: 9, y: 33, class: 'sub'}, clip(i.label || '', 26)));
    svg.append(node);
  }
  return svg;
}
