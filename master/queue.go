package master

import (
	"container/heap"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// taskItem is one task instance waiting for a worker (DolphinScheduler's
// TaskPriority).
type taskItem struct {
	WorkflowPriority   model.Priority
	WorkflowInstanceID int64
	TaskPriority       model.Priority
	TaskInstanceID     int64
	Group              string // worker group
	TaskGroup          string // concurrency limit shared across workflows ("" for none)
	Dispatch           message.Dispatch
	// unsendable says why the task cannot be sent (a secret param that does
	// not open): the dispatcher fails it as a worker fails an invalid one.
	unsendable string
	queued     time.Time // when it entered the queue (dispatch latency, oldest queued age)
}

// less is the queue order of docs/architecture.md, "Lifecycle of a run", step 4: workflow priority, workflow
// instance id, task priority, task id, then worker group; lower goes first.
func less(a, b *taskItem) bool {
	switch {
	case a.WorkflowPriority != b.WorkflowPriority:
		return a.WorkflowPriority < b.WorkflowPriority
	case a.WorkflowInstanceID != b.WorkflowInstanceID:
		return a.WorkflowInstanceID < b.WorkflowInstanceID
	case a.TaskPriority != b.TaskPriority:
		return a.TaskPriority < b.TaskPriority
	case a.TaskInstanceID != b.TaskInstanceID:
		return a.TaskInstanceID < b.TaskInstanceID
	}
	return a.Group < b.Group
}

// taskQueue is a min-heap of taskItems. Not safe for concurrent use: the
// dispatcher goroutine owns it.
type taskQueue struct{ h itemHeap }

func (q *taskQueue) Push(it *taskItem) { heap.Push(&q.h, it) }
func (q *taskQueue) Len() int          { return len(q.h) }

// Pop removes and returns the most urgent item, or nil.
func (q *taskQueue) Pop() *taskItem {
	if len(q.h) == 0 {
		return nil
	}
	return heap.Pop(&q.h).(*taskItem)
}

// Peek returns the most urgent item without removing it, or nil.
func (q *taskQueue) Peek() *taskItem {
	if len(q.h) == 0 {
		return nil
	}
	return q.h[0]
}

type itemHeap []*taskItem

func (h itemHeap) Len() int           { return len(h) }
func (h itemHeap) Less(i, j int) bool { return less(h[i], h[j]) }
func (h itemHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *itemHeap) Push(x any)        { *h = append(*h, x.(*taskItem)) }
func (h *itemHeap) Pop() any {
	old := *h
	n := len(old)
	it := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return it
}
