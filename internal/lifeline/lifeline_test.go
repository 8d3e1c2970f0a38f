package lifeline

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestChildOutlivesEndedThreads forks a child with Pdeathsig through Do, then
// ends many locked OS threads (as the task sandbox does): the child must
// still run. Forked from an ordinary goroutine instead, it dies as soon as
// one of the ended threads is the one that forked it.
func TestChildOutlivesEndedThreads(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// End 4x GOMAXPROCS threads, each locked by a goroutine that returns
	// while locked; the runtime replaces them with new ones.
	for i := 0; i < 4*runtime.GOMAXPROCS(0)+8; i++ {
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(done)
		}()
		<-done
	}
	select {
	case err := <-exited:
		t.Fatalf("child died when an unrelated locked thread ended: %v", err)
	case <-time.After(500 * time.Millisecond): // the absence of a death: a bounded look
	}
}
