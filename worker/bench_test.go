package worker

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// BenchmarkForkExec is the floor: starting and reaping `bash -c true`.
func BenchmarkForkExec(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDispatchToResult is one DAG hop as the worker sees it: a Dispatch
// request, the task `true`, and the Result arriving at the master (which
// DB-acks every report). Minus BenchmarkForkExec it is the worker's and the
// transport's overhead per task.
//
// The data dir matters: creating the work dir and log file costs two
// metadata operations per task, about 1 ms together on some virtual disks.
// The tmpfs case shows the worker's own overhead. guard and noguard compare
// the cost of the task guard (two stores into its shared table per task).
func BenchmarkDispatchToResult(b *testing.B) {
	for _, mode := range []string{GuardOn, GuardOff} {
		name := map[string]string{GuardOn: "guard", GuardOff: "noguard"}[mode]
		b.Run("disk/"+name, func(b *testing.B) { benchHop(b, b.TempDir(), mode) })
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
			b.Run("tmpfs/"+name, func(b *testing.B) {
				dir, err := os.MkdirTemp("/dev/shm", "beluga-bench-")
				if err != nil {
					b.Fatal(err)
				}
				defer os.RemoveAll(dir)
				benchHop(b, dir, mode)
			})
		}
	}
}

func benchHop(b *testing.B, dataDir, guard string) {
	results := make(chan int64, 1)
	master := remote.NewServer("127.0.0.1:0", func(p remote.Peer, _ uint64, m message.Message) {
		var a message.DBAck
		switch m := m.(type) {
		case message.Ack:
			a = message.DBAck{TaskInstanceID: m.TaskInstanceID, Kind: message.KindAck}
		case message.Running:
			a = message.DBAck{TaskInstanceID: m.TaskInstanceID, Kind: message.KindRunning}
		case message.Result:
			a = message.DBAck{TaskInstanceID: m.TaskInstanceID, Kind: message.KindResult}
			results <- m.TaskInstanceID
		default:
			return
		}
		_ = p.Send(0, a)
	}, remote.Options{})
	ctx := context.Background()
	if err := master.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer master.Stop()
	w, err := New(Config{Listen: "127.0.0.1:0", DataDir: dataDir, ResendInterval: time.Second, TaskGuard: guard}, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	rpc := remote.NewClient(nil, remote.Options{})
	if err := rpc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer rpc.Stop()

	var id int64
	for b.Loop() {
		id++
		r, err := rpc.Request(ctx, w.Addr(), message.Dispatch{
			TaskInstanceID: id, WorkflowInstanceID: 1, Name: "hop", Command: "true",
			MasterAddr: master.Addr(), Epoch: 1,
		})
		if err != nil || !r.(message.DispatchReply).Accepted {
			b.Fatalf("dispatch: %v %+v", err, r)
		}
		if got := <-results; got != id {
			b.Fatalf("result of %d, want %d", got, id)
		}
	}
}
