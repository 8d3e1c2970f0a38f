package api

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/events"
	"github.com/beluga-scheduler/beluga/common/model"
)

// streamRecheck is how often the open event streams' credentials and
// grants are checked again: a stream whose token, user or grant was
// revoked ends within this (and one query's time).
const streamRecheck = 2 * time.Second

// streamSet holds the open event streams of this API process. One
// goroutine serves them all, running while any is open: it checks every
// stream's token and grants in two queries per recheck, and, when no
// publisher runs in this process (a cluster's API), polls the outbox once
// per interval into a hub of its own that the streams read, so N streams
// cost one poll, not N.
type streamSet struct {
	store streamStore
	hub   *events.Hub
	poll  bool // the set feeds hub from the outbox
	log   *zap.Logger

	mu      sync.Mutex
	open    map[*openStream]struct{}
	perUser map[int64]int
	running bool
	kick    chan struct{} // wakes the loop when a stream left

	polls atomic.Int64 // outbox polls done, for tests
}

// openStream is one open GET /api/v1/events.
type openStream struct {
	user     int64
	token    int64
	admin    bool
	projects []string // what the stream was filtered to at its start (admins: nil)
	cancel   context.CancelCauseFunc
}

func newStreamSet(st streamStore, hub *events.Hub, log *zap.Logger) *streamSet {
	s := &streamSet{store: st, hub: hub, log: log.Named("streams"),
		open: map[*openStream]struct{}{}, perUser: map[int64]int{}, kick: make(chan struct{}, 1)}
	if hub == nil {
		s.hub, s.poll = events.NewHub(), true
	}
	return s
}

// join registers a stream, refused when its user already holds max.
func (s *streamSet) join(o *openStream, max int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.perUser[o.user]; n >= max {
		return &httpError{429, CodeTooManyRequests, fmt.Sprintf(
			"too many event streams: this user has %d open on this server, the limit is %d (setting %s); close one first",
			n, max, settingStreamsPerUser)}
	}
	s.open[o] = struct{}{}
	s.perUser[o.user]++
	if !s.running {
		s.running = true
		go s.loop()
	}
	return nil
}

// leave unregisters a stream; the loop ends with the last one.
func (s *streamSet) leave(o *openStream) {
	s.mu.Lock()
	delete(s.open, o)
	if s.perUser[o.user]--; s.perUser[o.user] <= 0 {
		delete(s.perUser, o.user)
	}
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// idle says whether no stream is open; the loop then stops, under the lock
// join starts it under, so exactly one loop runs while any stream is open.
func (s *streamSet) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.open) == 0 {
		s.running = false
		return true
	}
	return false
}

func (s *streamSet) loop() {
	var pollC <-chan time.Time
	cursor := int64(-1)
	if s.poll {
		t := time.NewTicker(eventPollCluster)
		defer t.Stop()
		pollC = t.C
		cursor = s.pollOnce(cursor)
	}
	check := time.NewTicker(streamRecheck)
	defer check.Stop()
	for {
		select {
		case <-pollC:
			cursor = s.pollOnce(cursor)
		case <-check.C:
			s.recheck()
		case <-s.kick:
		}
		if s.idle() {
			return
		}
	}
}

// pollOnce reads the events published after cursor (-1: none read yet,
// start at the newest) into the hub and returns the new cursor. A failed
// read is retried at the next tick; streams meanwhile wait.
func (s *streamSet) pollOnce(cursor int64) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.polls.Add(1)
	if cursor < 0 {
		last, err := s.store.EventLastSeq(ctx)
		if err != nil {
			s.log.Warn("read the newest event failed", zap.Error(err))
			return cursor
		}
		s.hub.Mark(last)
		return last
	}
	for {
		evs, err := s.store.EventList(ctx, cursor, model.EventFilter{}, eventPage)
		if err != nil {
			s.log.Warn("poll the event outbox failed", zap.Int64("after", cursor), zap.Error(err))
			return cursor
		}
		if len(evs) == 0 {
			return cursor
		}
		s.hub.Published(evs)
		cursor = evs[len(evs)-1].Seq
		if len(evs) < eventPage {
			return cursor
		}
	}
}

// recheck ends the streams whose token no longer authenticates (revoked,
// expired, its user disabled), whose user lost the admin role it streamed
// with, or whose user lost its view grant on a project it streams.
func (s *streamSet) recheck() {
	s.mu.Lock()
	all := make([]*openStream, 0, len(s.open))
	for o := range s.open {
		all = append(all, o)
	}
	s.mu.Unlock()
	if len(all) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tokens := make([]int64, 0, len(all))
	for _, o := range all {
		tokens = append(tokens, o.token)
	}
	live, err := s.store.TokenLive(ctx, tokens, time.Now())
	if err != nil {
		s.log.Warn("check the event streams' tokens failed", zap.Error(err))
		return
	}
	var users []int64
	for _, o := range all {
		lt, ok := live[o.token]
		switch {
		case !ok:
			o.cancel(errStreamRevoked("its token was revoked or expired, or its user disabled"))
		case o.admin && lt.Role != model.RoleAdmin:
			o.cancel(errStreamRevoked("its user is no longer an admin"))
		case !o.admin && !slices.Contains(users, o.user):
			users = append(users, o.user)
		}
	}
	if len(users) == 0 {
		return
	}
	views, err := s.store.ProjectViewable(ctx, users)
	if err != nil {
		s.log.Warn("check the event streams' grants failed", zap.Error(err))
		return
	}
	for _, o := range all {
		if o.admin {
			continue
		}
		if p, lost := lostProject(o.projects, views[o.user]); lost {
			o.cancel(errStreamRevoked(fmt.Sprintf("its user's grant on project %q was removed", p)))
		}
	}
}

// lostProject returns a project of had that is not in now.
func lostProject(had, now []string) (string, bool) {
	for _, p := range had {
		if !slices.Contains(now, p) {
			return p, true
		}
	}
	return "", false
}

type errStreamRevoked string

func (e errStreamRevoked) Error() string { return "event stream ended: " + string(e) }
