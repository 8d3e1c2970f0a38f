package master

import (
	"math/rand"
	"slices"
	"strconv"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
)

func TestQueueOrder(t *testing.T) {
	t.Parallel()
	// Expected order: workflow priority, workflow instance id, task priority,
	// task instance id, then group.
	want := []*taskItem{
		{WorkflowPriority: model.PriorityHighest, WorkflowInstanceID: 9, TaskPriority: model.PriorityLowest, TaskInstanceID: 90},
		{WorkflowPriority: model.PriorityHigh, WorkflowInstanceID: 1, TaskPriority: model.PriorityMedium, TaskInstanceID: 5},
		{WorkflowPriority: model.PriorityHigh, WorkflowInstanceID: 2, TaskPriority: model.PriorityHighest, TaskInstanceID: 7},
		{WorkflowPriority: model.PriorityHigh, WorkflowInstanceID: 2, TaskPriority: model.PriorityLow, TaskInstanceID: 3},
		{WorkflowPriority: model.PriorityMedium, WorkflowInstanceID: 1, TaskPriority: model.PriorityMedium, TaskInstanceID: 1, Group: "a"},
		{WorkflowPriority: model.PriorityMedium, WorkflowInstanceID: 1, TaskPriority: model.PriorityMedium, TaskInstanceID: 1, Group: "b"},
		{WorkflowPriority: model.PriorityMedium, WorkflowInstanceID: 1, TaskPriority: model.PriorityMedium, TaskInstanceID: 2},
		{WorkflowPriority: model.PriorityLowest, WorkflowInstanceID: 0, TaskPriority: model.PriorityHighest, TaskInstanceID: 0},
	}
	r := rand.New(rand.NewSource(1))
	for round := 0; round < 20; round++ {
		var q taskQueue
		for _, i := range r.Perm(len(want)) {
			q.Push(want[i])
		}
		if q.Peek() != want[0] {
			t.Fatalf("peek: %+v", q.Peek())
		}
		for i, w := range want {
			if got := q.Pop(); got != w {
				t.Fatalf("round %d pop %d: got %+v want %+v", round, i, got, w)
			}
		}
		if q.Pop() != nil || q.Len() != 0 {
			t.Fatal("queue not empty")
		}
	}
}

func BenchmarkQueuePushPop(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run("queued="+strconv.Itoa(n), func(b *testing.B) {
			var q taskQueue
			for i := 0; i < n; i++ {
				q.Push(&taskItem{WorkflowInstanceID: int64(i % 97), TaskInstanceID: int64(i)})
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				it := q.Pop()
				it.TaskInstanceID += int64(n)
				q.Push(it)
			}
		})
	}
}

// TestQueueManualTakesTurns: at the same workflow priority the tasks of
// runs a person asked for and of scheduled runs take turns, so an
// operator's run queued after a burst is not sent after all of it; a
// better workflow priority still goes first, and each class keeps its own
// order.
func TestQueueManualTakesTurns(t *testing.T) {
	t.Parallel()
	var q taskQueue
	for i := range 5 { // the burst: older instances
		q.Push(&taskItem{WorkflowPriority: model.PriorityMedium, WorkflowInstanceID: int64(i + 1), TaskInstanceID: int64(i + 1)})
	}
	q.Push(&taskItem{WorkflowPriority: model.PriorityMedium, WorkflowInstanceID: 100, TaskInstanceID: 100, Manual: true})
	q.Push(&taskItem{WorkflowPriority: model.PriorityMedium, WorkflowInstanceID: 101, TaskInstanceID: 101, Manual: true})
	q.Push(&taskItem{WorkflowPriority: model.PriorityHigh, WorkflowInstanceID: 9, TaskInstanceID: 9})
	var got []int64
	for q.Len() > 0 {
		if p := q.Peek(); p == nil {
			t.Fatal("peek of a non-empty queue")
		} else if it := q.Pop(); it != p {
			t.Fatalf("pop %d after peek %d", it.TaskInstanceID, p.TaskInstanceID)
		} else {
			got = append(got, it.TaskInstanceID)
		}
	}
	want := []int64{9, 100, 1, 101, 2, 3, 4, 5}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}
