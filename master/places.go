package master

// places counts the tasks this master has in flight (dispatched and not
// finished): per worker for capacity, per task group for group limits, and
// in total for the platform cap. Owned by the dispatcher goroutine.
type places struct {
	byTask map[int64]place
	worker map[string]int
	group  map[string]int
}

type place struct{ addr, group string }

func newPlaces() *places {
	return &places{byTask: map[int64]place{}, worker: map[string]int{}, group: map[string]int{}}
}

// take counts task id as in flight on addr in group ("" for none).
func (p *places) take(id int64, addr, group string) {
	if _, dup := p.byTask[id]; dup {
		return
	}
	p.byTask[id] = place{addr, group}
	p.worker[addr]++
	if group != "" {
		p.group[group]++
	}
}

// release frees the place of task id; unknown ids are ignored (a task that
// never went out, or released twice).
func (p *places) release(id int64) (place, bool) {
	pl, ok := p.byTask[id]
	if !ok {
		return pl, false
	}
	delete(p.byTask, id)
	p.worker[pl.addr]--
	if pl.group != "" {
		p.group[pl.group]--
	}
	return pl, true
}

func (p *places) total() int { return len(p.byTask) }
