package master

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// The type test_later stands for sub_workflow and dependent in the hook
// tests: a master type that finishes later.
func init() {
	tasktype.Register(&tasktype.Def{Name: "test_later", Placement: tasktype.Master,
		Spec: func() tasktype.Spec { return &struct{}{} }})
}

// laterTasks is a masterTasks that ends each attempt it starts succeeded,
// persisting the result and then reporting it as a worker's would be.
type laterTasks struct{ started atomic.Int32 }

func (l *laterTasks) Start(ctx context.Context, r *runner, ti *model.TaskInstance) error {
	l.started.Add(1)
	id := ti.ID
	go func() {
		if _, err := r.env.runnerStore().TaskSetStates(ctx, []int64{id}, []model.TaskState{model.TaskSubmitted}, model.TaskSucceeded); err == nil {
			r.events.Put(taskEvent{TaskInstanceID: id, State: model.TaskSucceeded, EndTime: time.Now().UTC()})
		}
	}()
	return nil
}

func (l *laterTasks) Cancel(context.Context, *runner, *model.TaskInstance, cancelHow) {}

// UseLaterTasks plugs a laterTasks into m (before Start) and returns how
// many attempts it started so far.
func UseLaterTasks(m *Master) func() int {
	l := &laterTasks{}
	m.logic = l
	return func() int { return int(l.started.Load()) }
}

// heldTasks is a masterTasks whose attempts end succeeded only once
// released (or never, when the term ends first).
type heldTasks struct {
	mu      sync.Mutex
	started []int64
	release chan struct{}
}

func (h *heldTasks) Start(ctx context.Context, r *runner, ti *model.TaskInstance) error {
	h.mu.Lock()
	h.started = append(h.started, ti.ID)
	h.mu.Unlock()
	id := ti.ID
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-h.release:
		}
		if _, err := r.env.runnerStore().TaskSetStates(ctx, []int64{id}, []model.TaskState{model.TaskSubmitted}, model.TaskSucceeded); err == nil {
			r.events.Put(taskEvent{TaskInstanceID: id, State: model.TaskSucceeded, EndTime: time.Now().UTC()})
		}
	}()
	return nil
}

func (h *heldTasks) Cancel(context.Context, *runner, *model.TaskInstance, cancelHow) {}

// UseHeldTasks plugs a heldTasks into m (before Start): started lists the
// task instances it was asked to start, release lets them end.
func UseHeldTasks(m *Master, release chan struct{}) (started func() []int64) {
	h := &heldTasks{release: release}
	m.logic = h
	return func() []int64 {
		h.mu.Lock()
		defer h.mu.Unlock()
		return slices.Clone(h.started)
	}
}
