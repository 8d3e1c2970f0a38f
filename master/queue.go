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
	// Manual: the run was asked for by a person (a start command), not
	// fired by a schedule or a backfill; see taskQueue.
	Manual   bool
	Dispatch message.Dispatch
	// unsendable says why the task cannot be sent (a secret param that does
	// not open): the dispatcher fails it as a worker fails an invalid one.
	unsendable string
	// isolated: only a worker that keeps tasks from itself may run it (not
	// registry.Node.TasksRunAsServer): a non-admin's code while
	// tasks.allow_unsandboxed_code is 0 (runner.codeAllowed).
	isolated bool
	queued   time.Time // when it entered the queue (dispatch latency, oldest queued age)
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

// taskQueue holds the waiting taskItems in two min-heaps by less: the
// tasks of runs a person asked for (manual) and the others (scheduled,
// backfill). Their heads of the same workflow priority take turns, so an
// operator's run started during a burst of 10,000 scheduled runs has its
// tasks sent between the burst's, not after all of them (its instance id
// is the newest); a better workflow priority still goes first. Not safe
// for concurrent use: the dispatcher goroutine owns it.
type taskQueue struct {
	manual, other itemHeap
	otherTurn     bool // at a tie of the heads' priority, other goes next
}

func (q *taskQueue) Push(it *taskItem) {
	if it.Manual {
		heap.Push(&q.manual, it)
	} else {
		heap.Push(&q.other, it)
	}
}

func (q *taskQueue) Len() int { return len(q.manual) + len(q.other) }

// next is the heap the most urgent item is in, or nil when empty.
func (q *taskQueue) next() *itemHeap {
	switch {
	case len(q.manual) == 0 && len(q.other) == 0:
		return nil
	case len(q.other) == 0:
		return &q.manual
	case len(q.manual) == 0:
		return &q.other
	}
	m, o := q.manual[0].WorkflowPriority, q.other[0].WorkflowPriority
	if m < o || m == o && !q.otherTurn {
		return &q.manual
	}
	return &q.other
}

// Pop removes and returns the most urgent item, or nil.
func (q *taskQueue) Pop() *taskItem {
	h := q.next()
	if h == nil {
		return nil
	}
	if len(q.manual) > 0 && len(q.other) > 0 && q.manual[0].WorkflowPriority == q.other[0].WorkflowPriority {
		q.otherTurn = h == &q.manual
	}
	return heap.Pop(h).(*taskItem)
}

// Peek returns the item Pop would return, without removing it, or nil.
func (q *taskQueue) Peek() *taskItem {
	if h := q.next(); h != nil {
		return (*h)[0]
	}
	return nil
}

// all calls f with every item, in no order.
func (q *taskQueue) all(f func(*taskItem)) {
	for _, it := range q.manual {
		f(it)
	}
	for _, it := range q.other {
		f(it)
	}
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
