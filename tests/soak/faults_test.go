package soak

import (
	"math/rand"
	"slices"
	"testing"
	"time"
)

// Every round of the deck deals each kind once, and a seed deals the same
// sequence again: a short soak meets every kind, and a replay replays.
func TestDeckDealsEveryKindPerRound(t *testing.T) {
	deal := func(seed int64) []Kind {
		rng := rand.New(rand.NewSource(seed))
		d := &deck{rng: rng}
		var out []Kind
		for range 3 * len(Kinds) {
			out = append(out, nextPlan(rng, d, 4*time.Second).kind)
		}
		return out
	}
	got := deal(7)
	for r := range 3 {
		round := slices.Clone(got[r*len(Kinds) : (r+1)*len(Kinds)])
		slices.Sort(round)
		want := slices.Clone(Kinds)
		slices.Sort(want)
		if !slices.Equal(round, want) {
			t.Fatalf("round %d dealt %v, want each of %v once", r, round, want)
		}
	}
	if again := deal(7); !slices.Equal(got, again) {
		t.Fatalf("seed 7 dealt %v, then %v", got, again)
	}
}

func TestLeaderGap(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	s := func(ms int, leader string) sample {
		return sample{at: t0.Add(time.Duration(ms) * time.Millisecond), leader: leader}
	}
	ss := []sample{s(0, "m1"), s(200, "m1"), s(400, ""), s(600, ""), s(800, "m2"), s(1000, ""), s(1200, "m2")}
	if g := leaderGap(ss, t0.Add(100*time.Millisecond), t0.Add(2*time.Second)); g != 400*time.Millisecond {
		t.Fatalf("gap %v, want 400ms (from the first sample without a leader to the next with one)", g)
	}
	if g := leaderGap(ss, t0.Add(500*time.Millisecond), t0.Add(700*time.Millisecond)); g != 200*time.Millisecond {
		t.Fatalf("gap %v, want 200ms: leaderless from the window's start to its end", g)
	}
	if g := leaderGap(ss[:4], t0, t0.Add(time.Second)); g != 600*time.Millisecond {
		t.Fatalf("gap %v, want 600ms: no leader to the window's end", g)
	}
}

func TestAvailability(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	ps := []probe{{t0, 200}, {t0.Add(time.Second), 500}, {t0.Add(2 * time.Second), 0}, {t0.Add(3 * time.Second), 503}, {t0.Add(4 * time.Second), 404}}
	ok, total, inside, bad := availability(ps, [][2]time.Time{{t0.Add(2500 * time.Millisecond), t0.Add(3500 * time.Millisecond)}})
	if ok != 2 || total != 4 || inside[503] != 1 || len(bad) != 2 || bad[0].status != 500 || bad[1].status != 0 {
		t.Fatalf("ok %d of %d, inside %v; want 2 of 4 (a 500 and no answer count against), the 503 inside", ok, total, inside)
	}
}

func TestTermChange(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	s := func(ms int, leader string, epoch int64) sample {
		return sample{at: t0.Add(time.Duration(ms) * time.Millisecond), leader: leader, epoch: epoch}
	}
	ss := []sample{s(0, "m1", 3), s(200, "m1", 3), s(400, "", 0), s(600, "m1", 3), s(800, "m2", 4)}
	if d, ok := termChange(ss, t0.Add(100*time.Millisecond), t0.Add(time.Second)); !ok || d != 700*time.Millisecond {
		t.Fatalf("change %v %v, want 700ms to epoch 4", d, ok)
	}
	if _, ok := termChange(ss[:4], t0.Add(100*time.Millisecond), t0.Add(time.Second)); ok {
		t.Fatal("the leader kept term 3: no change")
	}
}

// An interrupted execution counts against the first fault not over when
// it started.
func TestAttribute(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	faults := []Fault{{Start: t0, Ready: t0.Add(10 * time.Second)}, {Start: t0.Add(20 * time.Second), Ready: t0.Add(30 * time.Second)}}
	es := []Entry{{At: t0.Add(-time.Second)}, {At: t0.Add(5 * time.Second)}, {At: t0.Add(15 * time.Second)}, {At: t0.Add(time.Minute)}}
	attribute(es, faults)
	if faults[0].Cut != 2 || faults[1].Cut != 1 {
		t.Fatalf("cut %d and %d, want 2 (running at the first fault, started during it) and 1", faults[0].Cut, faults[1].Cut)
	}
}

// The replay line gives back the minutes make soak was given.
func TestReplay(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{2 * time.Minute, "make soak MINUTES=2 SEED=9"}, {75 * time.Second, "make soak MINUTES=1.25 SEED=9"}, {90 * time.Second, "make soak MINUTES=1.5 SEED=9"}} {
		if got := (Result{Seed: 9, Duration: tc.d}).Replay(); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.d, got, tc.want)
		}
	}
}
