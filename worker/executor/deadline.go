package executor

import (
	"container/heap"
	"time"
)

type deadlineKind uint8

const (
	dlTimeout  deadlineKind = iota // task ran longer than TimeoutMillis
	dlEscalate                     // SIGTERM grace is over: SIGKILL
	dlRunning                      // RunningDelay is over: report Running
)

// deadline is one timed action on a task. The owner keeps them in a heap
// served by a single timer, so timeouts cost no goroutine or timer per task.
type deadline struct {
	at    time.Time
	t     *task
	kind  deadlineKind
	index int // position in the heap; -1 once removed
}

// deadlines is a min-heap on at; use push, remove and popDue.
type deadlines []*deadline

func (h deadlines) Len() int           { return len(h) }
func (h deadlines) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlines) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *deadlines) Push(x any) {
	d := x.(*deadline)
	d.index = len(*h)
	*h = append(*h, d)
}

func (h *deadlines) Pop() any {
	old := *h
	n := len(old) - 1
	d := old[n]
	old[n] = nil
	d.index = -1
	*h = old[:n]
	return d
}

func (h *deadlines) push(at time.Time, t *task, kind deadlineKind) *deadline {
	d := &deadline{at: at, t: t, kind: kind}
	heap.Push(h, d)
	return d
}

// remove takes d out of the heap if it is still there.
func (h *deadlines) remove(d *deadline) {
	if d != nil && d.index >= 0 {
		heap.Remove(h, d.index)
	}
}

// popDue removes and returns the earliest deadline if it is due at now.
func (h *deadlines) popDue(now time.Time) *deadline {
	if len(*h) == 0 || (*h)[0].at.After(now) {
		return nil
	}
	return heap.Pop(h).(*deadline)
}
