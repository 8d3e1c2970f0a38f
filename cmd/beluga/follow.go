package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/common/model"
)

const (
	pollEvery = 100 * time.Millisecond
	// pollShare: the pause after a poll is at least this many times the
	// poll's own duration, so following costs the server at most ~1/10 of
	// the time.
	pollShare = 9
	// pollPatience is how long follow keeps polling through transport
	// errors and 5xx answers (an api restart, a busy database) before it
	// gives up.
	pollPatience = 10 * time.Second
	// maxPollWait bounds one long poll, well under the client's timeout.
	maxPollWait = 10 * time.Second
)

// taskEvent is one observed task state change (-o json prints these).
type taskEvent struct {
	Time           string `json:"time"`
	TaskInstanceID int64  `json:"task_instance_id"`
	Task           string `json:"task"`
	Attempt        int    `json:"attempt"`
	From           string `json:"from"`
	To             string `json:"to"`
	Host           string `json:"host"`
}

// follow polls an instance until it is finished, printing each task state
// change, then the final state. The error carries the exit code: nil only
// when the run succeeded. Each poll is a long poll (?wait=): the server
// answers as soon as the instance ends, or after the pause, so the end is
// seen at once while the changes between are printed every pause. Each
// poll reads every task of the instance, so the pause grows with what a
// poll costs (pollShare): a thousand-task run is followed without taking
// the server's CPU.
func (a *app) follow(ctx context.Context, c *client.Client, id int64) error {
	seen := map[int64]string{} // task instance id -> last printed state
	lastOK := time.Now()
	wait := pollEvery
	for {
		polled := time.Now()
		d, err := a.poll(ctx, c, id, wait)
		took := time.Since(polled)
		switch {
		case err == nil:
			lastOK = time.Now()
			if err := a.printChanges(d, seen); err != nil {
				return err
			}
			if model.WorkflowState(d.State).Finished() {
				return a.finish(d)
			}
		case transient(err) && time.Since(lastOK) < pollPatience:
			// try again after the pause
		default:
			return err
		}
		cost := took
		if took >= wait {
			cost = took - wait // the server waited, then answered
		}
		next := min(max(pollEvery, pollShare*cost), maxPollWait)
		if took < wait {
			// Not waited for (an error, or a server without ?wait=): pause here.
			t := time.NewTimer(wait - took)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		wait = next
	}
}

// poll reads the instance, waiting up to wait for its end, and every page
// of its tasks.
func (a *app) poll(ctx context.Context, c *client.Client, id int64, wait time.Duration) (api.InstanceDetail, error) {
	d, err := c.GetInstancePage(ctx, id, client.InstanceQuery{Wait: wait})
	for err == nil && len(d.Tasks) > 0 && len(d.Tasks) < d.TasksTotal {
		var more api.InstanceDetail
		if more, err = c.GetInstancePage(ctx, id, client.InstanceQuery{TasksOffset: len(d.Tasks)}); err == nil {
			if len(more.Tasks) == 0 {
				break
			}
			d.Tasks = append(d.Tasks, more.Tasks...)
		}
	}
	return d, err
}

func transient(err error) bool {
	var ae *client.APIError
	return errors.Is(err, client.ErrUnreachable) || errors.As(err, &ae) && ae.Status >= 500
}

func (a *app) printChanges(d api.InstanceDetail, seen map[int64]string) error {
	for _, t := range d.Tasks {
		old, ok := seen[t.ID]
		if ok && old == t.State {
			continue
		}
		if !ok {
			old = "-"
		}
		seen[t.ID] = t.State
		ev := taskEvent{Time: eventTime(t).UTC().Format(api.TimeFormat), TaskInstanceID: t.ID, Task: t.Name,
			Attempt: t.Attempt, From: old, To: t.State, Host: t.Host}
		if a.json() {
			if err := a.printCompactJSON(ev); err != nil {
				return err
			}
			continue
		}
		host := ev.Host
		if host == "" {
			host = "-"
		}
		if _, err := fmt.Fprintf(a.stdout, "%s  %-24s attempt %-3d %-20s -> %-20s %s\n",
			ev.Time, ev.Task, ev.Attempt, ev.From, ev.To, host); err != nil {
			return err
		}
	}
	return nil
}

// eventTime is when the task reached its state, as far as the task's times
// say; otherwise now (when the change was seen).
func eventTime(t api.TaskInstance) time.Time {
	var at *api.Time
	switch st := model.TaskState(t.State); {
	case st == model.TaskSubmitted:
		at = t.SubmitTime
	case st == model.TaskDispatched:
		at = t.DispatchTime
	case st == model.TaskRunning:
		at = t.StartTime
	case st.Finished():
		at = t.EndTime
	}
	if at == nil {
		return time.Now()
	}
	return at.Time
}

func (a *app) finish(d api.InstanceDetail) error {
	if a.json() {
		if err := a.printJSON(d); err != nil {
			return err
		}
	} else {
		line := fmt.Sprintf("instance %d %s", d.ID, d.State)
		if t := took(d.StartTime, d.EndTime); t != "" {
			line += " in " + t
		}
		if d.Reason != "" {
			line += ": " + d.Reason
		}
		if _, err := fmt.Fprintln(a.stdout, line); err != nil {
			return err
		}
	}
	if d.State == string(model.WorkflowSucceeded) {
		return nil
	}
	return &exitError{code: exitFailed, msg: fmt.Sprintf("instance %d ended %s", d.ID, d.State)}
}
