package api

import (
	"context"
	"sync"

	"github.com/beluga-scheduler/beluga/common/dag"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// maxCachedTasks bounds the tasks of the parsed definitions kept: two of
// the largest workflows (spec.MaxTasks).
const maxCachedTasks = 2 * spec.MaxTasks

// parsedDef is a workflow version parsed once: the waits of a running
// instance need its graph on every GET, and parsing the stored spec of a
// 100,000-task workflow takes seconds.
type parsedDef struct {
	wf      *spec.Workflow
	graph   *dag.Graph
	handles map[string]bool // tasks whose type handles an upstream's failure
}

// defCache holds parsed definitions by id. A version never changes once
// stored, so an entry is never stale; past maxCachedTasks the cache is
// emptied (simple, and a miss only costs a parse).
type defCache struct {
	mu    sync.Mutex
	defs  map[int64]*parsedDef
	tasks int
}

// get returns definition id parsed, or nil when it cannot be read or
// parsed (the waits then have no pending tasks, as before).
func (c *defCache) get(ctx context.Context, st defStore, id int64) *parsedDef {
	c.mu.Lock()
	d, ok := c.defs[id]
	c.mu.Unlock()
	if ok {
		return d
	}
	def, err := st.WorkflowDefinition(ctx, id)
	if err != nil {
		return nil
	}
	d = parseDef(def.SpecJSON)
	if d == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.defs == nil || c.tasks+len(d.wf.Tasks) > maxCachedTasks {
		c.defs, c.tasks = map[int64]*parsedDef{}, 0
	}
	if _, ok := c.defs[id]; !ok {
		c.defs[id] = d
		c.tasks += len(d.wf.Tasks)
	}
	return d
}

func parseDef(raw []byte) *parsedDef {
	wf, err := spec.ParseStored(raw)
	if err != nil {
		return nil
	}
	nodes := make([]string, len(wf.Tasks))
	var edges [][2]string
	d := &parsedDef{wf: wf, handles: map[string]bool{}}
	for i, t := range wf.Tasks {
		nodes[i] = t.Name
		for _, up := range t.DependsOn {
			edges = append(edges, [2]string{up, t.Name})
		}
		if def, ok := tasktype.Lookup(t.Type); ok && def.HandlesFailure {
			d.handles[t.Name] = true
		}
	}
	if d.graph, err = dag.New(nodes, edges); err != nil {
		return nil
	}
	return d
}
