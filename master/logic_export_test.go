package master

import (
	"context"
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
		if _, err := r.t.store.SetTaskStates(ctx, []int64{id}, []model.TaskState{model.TaskSubmitted}, model.TaskSucceeded); err == nil {
			r.events.Put(taskEvent{TaskInstanceID: id, State: model.TaskSucceeded, EndTime: time.Now().UTC()})
		}
	}()
	return nil
}

func (l *laterTasks) Cancel(context.Context, *runner, *model.TaskInstance) {}

// UseLaterTasks plugs a laterTasks into m (before Start) and returns how
// many attempts it started so far.
func UseLaterTasks(m *Master) func() int {
	l := &laterTasks{}
	m.logic = l
	return func() int { return int(l.started.Load()) }
}
