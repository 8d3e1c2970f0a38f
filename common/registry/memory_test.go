package registry

import (
	"context"
	"errors"
	testwait "github.com/beluga-scheduler/beluga/testkit/wait"
	"testing"
	"time"
)

var _ interface {
	Registry
	Elector
	StateWatcher
} = (*Memory)(nil)

func TestMemoryElection(t *testing.T) {
	m := NewMemory()
	if _, ok := m.Leader(); ok {
		t.Fatal("leader before any campaign")
	}
	ctx := context.Background()
	t1, err := m.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := m.Leader(); !ok || id != "a" {
		t.Fatalf("leader = %q %v, want a", id, ok)
	}

	// A second campaigner waits until the first resigns.
	won := make(chan Term, 1)
	go func() {
		t2, err := m.Campaign(ctx, "b")
		if err == nil {
			won <- t2
		}
	}()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := m.Campaign(short, "c"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("campaign against a held term: %v, want deadline exceeded", err)
	}
	m.Resign()
	select {
	case <-t1.Lost:
	default:
		t.Fatal("Lost still open after Resign")
	}
	var t2 Term
	t2 = testwait.Signal(t, 5*time.Second, "the second campaigner to win", won)
	if t2.Epoch <= t1.Epoch {
		t.Fatalf("epochs %d then %d: want increasing", t1.Epoch, t2.Epoch)
	}
	if id, _ := m.Leader(); id != "b" {
		t.Fatalf("leader = %q, want b", id)
	}
	m.Resign()
	m.Resign() // no term: no-op
	if _, ok := m.Leader(); ok {
		t.Fatal("leader after resign")
	}
}

func TestMemoryStates(t *testing.T) {
	ch, cancel := NewMemory().States()
	defer cancel()
	if s := <-ch; s != Connected {
		t.Fatalf("first state %v, want connected", s)
	}
}

func TestMemoryRaiseEpoch(t *testing.T) {
	m := NewMemory()
	m.RaiseEpoch(7)
	ctx := context.Background()
	t1, err := m.Campaign(ctx, "a")
	if err != nil || t1.Epoch != 8 {
		t.Fatalf("first term after RaiseEpoch(7): %+v %v, want epoch 8", t1, err)
	}
	m.Resign()
	m.RaiseEpoch(3) // never lowers
	t2, err := m.Campaign(ctx, "a")
	if err != nil || t2.Epoch != 9 {
		t.Fatalf("next term: %+v %v, want epoch 9", t2, err)
	}
}
