// Package lifeline forks child processes from OS threads that live as long
// as the process, so that a child's parent-death signal (Pdeathsig) fires
// when this process dies and at no other time.
//
// Linux sends that signal when the thread that forked the child exits, not
// the process. Go ends an OS thread when a goroutine that locked it returns
// without unlocking; a child forked earlier on that same thread, by any
// goroutine, would be killed with it: a task's shell, or a test's database
// server. Forking here rules that out.
package lifeline

import (
	"os/exec"
	"runtime"
	"sync"
)

// threads forks at once in the plain pool; a fork takes well under a
// millisecond (vfork).
const threads = 2

// plain forks in the process's own namespaces, with no thread state.
var plain = NewPool(threads, nil)

// Do runs fork on a thread of the plain pool and returns when it has. fork
// should start a process (os.StartProcess, exec.Cmd.Start) and return; it
// must not wait for the child.
func Do(fork func()) {
	_ = plain.Do(fork) // no setup: it cannot fail
}

// Start is cmd.Start on a lifeline thread.
func Start(cmd *exec.Cmd) error {
	var err error
	Do(func() { err = cmd.Start() })
	return err
}

// Pool is n threads locked for the life of the process, each prepared once
// by setup (nil: none), for forks that need thread state of their own (the
// task sandbox's namespaces). They start at the first Do or Start.
type Pool struct {
	n     int
	setup func() error
	once  sync.Once
	reqs  chan func()
	err   error
}

// NewPool describes a pool; no thread starts yet.
func NewPool(n int, setup func() error) *Pool {
	return &Pool{n: n, setup: setup}
}

// Start starts the pool's threads (once) and returns the first setup's
// error, if any: such a pool serves nothing.
func (p *Pool) Start() error {
	p.once.Do(p.start)
	return p.err
}

// Do runs fork on one of the pool's threads and returns when it has.
func (p *Pool) Do(fork func()) error {
	if err := p.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	p.reqs <- func() {
		defer close(done)
		fork()
	}
	<-done
	return nil
}

func (p *Pool) start() {
	p.reqs = make(chan func())
	for i := 0; i < p.n; i++ {
		ready := make(chan error, 1)
		go p.serve(ready)
		if err := <-ready; err != nil {
			p.err = err // a thread that did start waits for work that never comes
			return
		}
	}
}

// serve runs the pool's forks on one thread for the life of the process.
func (p *Pool) serve(ready chan<- error) {
	// Never unlocked: a child forked here dies when this thread exits.
	runtime.LockOSThread()
	if p.setup != nil {
		if err := p.setup(); err != nil {
			ready <- err
			return
		}
	}
	ready <- nil
	for f := range p.reqs {
		f()
	}
}
