package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/frame"
	"github.com/beluga-scheduler/beluga/remote/message"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
	"github.com/beluga-scheduler/beluga/testkit/freeport"
)

const rejected = "closing unauthenticated connection"

// TestOutsidersCannotCommand plays an attacker on the cluster's network,
// once without the secret (raw frames, as the wire format is public) and
// once with a wrong one (a real client), against a running task: a
// dispatch and its DB-ack, a kill, a DB-ack with kill, a query with a huge
// epoch (which used to redirect the worker's reports), a forged
// "succeeded" result to the master, a worker registration in ZooKeeper.
// Nothing runs, nothing is killed, the instance ends normally on the real
// worker, and each attempt is logged once where it was refused.
func TestOutsidersCannotCommand(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 1, Workers: 1, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	c.Apply(t, chain(marks, "victim", 1, 6*time.Second))
	id := c.Run(t, "victim")
	ex := clustertest.WaitExecution(t, marks, id, "t0", finishWithin)
	w, m := c.Workers[0], c.Leader()
	wMark, mMark := w.LogMark(), m.LogMark()
	pwned := filepath.Join(t.TempDir(), "pwned")

	dispatch := message.Dispatch{TaskInstanceID: 1 << 40, WorkflowInstanceID: id, Name: "evil", TaskType: "shell",
		Command: "touch " + pwned, Attempt: 1, MasterAddr: m.Addr, Epoch: 1 << 50}
	ack := message.DBAck{TaskInstanceID: dispatch.TaskInstanceID, Kind: message.KindAck}
	kill := message.Kill{TaskInstanceID: ex.TaskInstanceID}
	killAck := message.DBAck{TaskInstanceID: ex.TaskInstanceID, Kind: message.KindAck, Kill: true}
	query := message.Query{TaskInstanceIDs: []int64{ex.TaskInstanceID}, MasterAddr: "127.0.0.1:1", Epoch: 1 << 50}
	result := message.Result{TaskInstanceID: ex.TaskInstanceID, WorkflowInstanceID: id, Host: w.Addr,
		State: string(model.TaskSucceeded), StartTime: time.Now(), EndTime: time.Now()}

	// Without the secret: raw frames, one connection per attempt.
	rawAttempt := func(addr string, ms ...message.Message) {
		nc, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		var buf []byte
		for i, msg := range ms {
			body, _ := message.Encode(msg)
			buf = frame.Append(buf, frame.Frame{Type: msg.Type(), RequestID: uint64(i + 1), Body: body})
		}
		_, _ = nc.Write(buf)
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); err == nil {
			t.Fatalf("%s answered frames sent without the handshake", addr)
		}
	}
	rawAttempt(w.Addr, dispatch, ack)
	rawAttempt(w.Addr, kill)
	rawAttempt(w.Addr, killAck)
	rawAttempt(w.Addr, query)
	rawAttempt(m.Addr, result)
	workerAttempts, masterAttempts := 4, 1

	// With a wrong secret, claiming to be the leader (and the worker).
	wrongKey := []byte("not the cluster secret at all...")
	for _, a := range []struct {
		addr string
		role string
		id   string
		msgs []message.Message
	}{
		{w.Addr, remote.RoleMaster, m.Addr, []message.Message{dispatch, ack}},
		{w.Addr, remote.RoleMaster, m.Addr, []message.Message{kill}},
		{w.Addr, remote.RoleMaster, m.Addr, []message.Message{killAck}},
		{w.Addr, remote.RoleMaster, m.Addr, []message.Message{query}},
		{m.Addr, remote.RoleWorker, w.Addr, []message.Message{result}},
	} {
		cl := remote.NewClient(nil, remote.Options{Auth: &remote.Auth{Key: wrongKey, Role: a.role, ID: func() string { return a.id }}})
		if err := cl.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := cl.Send(ctx, a.addr, a.msgs[0])
		cancel()
		cl.Stop()
		if !errors.Is(err, remote.ErrClosed) {
			t.Fatalf("send %T with a wrong secret: %v, want the handshake refused", a.msgs[0], err)
		}
	}
	workerAttempts += 4
	masterAttempts++

	// A forged registration: ZooKeeper refuses a client without the digest.
	zc, _, err := zk.Connect([]string{c.ZK.Addr()}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	_, err = zc.Create("/beluga/nodes/workers/127.0.0.1:9", []byte(`{"role":"worker","addr":"127.0.0.1:9","groups":["default"]}`),
		zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("forged worker registration: %v, want %v", err, zk.ErrNoAuth)
	}

	c.Eventually(t, 10*time.Second, "every attempt logged", func() bool {
		return strings.Count(w.LogSince(wMark), rejected) >= workerAttempts && strings.Count(m.LogSince(mMark), rejected) >= masterAttempts
	})
	inst := c.WaitFinished(t, id, finishWithin)
	if inst.State != model.WorkflowSucceeded {
		t.Fatalf("instance %s, want succeeded", inst.State)
	}
	c.AssertRanOnce(t, id, marks)
	for _, tk := range c.Tasks(t, id)["t0"] {
		if tk.Host != w.Addr || tk.EndTime == nil || tk.EndTime.Sub(*tk.StartTime) < 5*time.Second {
			t.Fatalf("t0 ended early or elsewhere (a forged result or kill took): %+v", tk)
		}
	}
	if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the rogue dispatch ran: %v", err)
	}
	if n := strings.Count(w.LogSince(wMark), rejected); n != workerAttempts {
		t.Fatalf("worker logged %d rejections for %d attempts:\n%s", n, workerAttempts, w.LogSince(wMark))
	}
	if n := strings.Count(m.LogSince(mMark), rejected); n != masterAttempts {
		t.Fatalf("master logged %d rejections for %d attempts:\n%s", n, masterAttempts, m.LogSince(mMark))
	}
}

// TestRogueWorkerGetsNoTask: a `beluga worker` with a wrong secret on the
// cluster's ZooKeeper cannot register, so no task goes to it.
func TestRogueWorkerGetsNoTask(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 1, Workers: 1, SessionTimeout: sessionTimeout})
	bin, err := clustertest.Build()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wrong := filepath.Join(dir, "secret")
	if err := os.WriteFile(wrong, []byte("a wrong secret for this cluster"), 0o600); err != nil {
		t.Fatal(err)
	}
	ports, err := freeport.Take(1)
	if err != nil {
		t.Fatal(err)
	}
	rogueAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	logf, err := os.Create(filepath.Join(dir, "rogue.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "worker", "--zk", c.ZK.Addr(), "--listen", rogueAddr, "--data-dir", filepath.Join(dir, "data"),
		"--cluster-secret-file", wrong, "--zk-session-timeout", sessionTimeout.String())
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	c.Eventually(t, 20*time.Second, "the rogue worker tries to register and is refused", func() bool {
		b, _ := os.ReadFile(logf.Name())
		return strings.Contains(string(b), "not authenticated")
	})

	marks := t.TempDir()
	wf := chain(marks, "fanout", 1, 0)
	for i := 1; i < 8; i++ {
		wf.Tasks = append(wf.Tasks, task(marks, fmt.Sprintf("p%d", i), "true"))
	}
	c.Apply(t, wf)
	id := c.Run(t, "fanout")
	c.WaitFinished(t, id, finishWithin)
	c.AssertRanOnce(t, id, marks)
	for name, rows := range c.Tasks(t, id) {
		for _, r := range rows {
			if r.Host != c.Workers[0].Addr {
				t.Fatalf("task %s went to %s, not the cluster's worker %s", name, r.Host, c.Workers[0].Addr)
			}
		}
	}
	view, err := c.View()
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(view); strings.Contains(s, rogueAddr) {
		t.Fatalf("the rogue worker is in the cluster view: %s", s)
	}
}
