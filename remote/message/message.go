// Package message defines the typed messages exchanged between masters and
// workers, and their encoding into frame bodies. Handlers work with these
// types only; they never parse bytes.
package message

import (
	"encoding/json"
	"fmt"
	"time"
)

// Type identifies a message kind on the wire. Values are part of the protocol:
// never renumber them.
type Type uint8

// Message types.
const (
	TypePing          Type = 1
	TypePong          Type = 2
	TypeDispatch      Type = 3  // master -> worker: run a task instance
	TypeDispatchReply Type = 4  // worker -> master: accepted or refused (reply to TypeDispatch)
	TypeAck           Type = 5  // worker -> master: task received (re-sent until DB-acked)
	TypeRunning       Type = 6  // worker -> master: process started (re-sent until DB-acked)
	TypeResult        Type = 7  // worker -> master: task finished (re-sent until DB-acked)
	TypeDBAck         Type = 8  // master -> worker: ack/running/result is persisted
	TypeKill          Type = 9  // master -> worker: kill a task's process group
	TypeKillResult    Type = 10 // worker -> master: reply to TypeKill
	TypeLogRequest    Type = 11 // any -> worker: read a task log
	TypeLogResponse   Type = 12 // worker -> any: reply to TypeLogRequest
	TypeError         Type = 13 // reply: the request could not be served
	TypeNudge         Type = 14 // api -> master: a command was written, consume now
	TypeQuery         Type = 15 // master -> worker: which of these tasks do you hold?
	TypeQueryReply    Type = 16 // worker -> master: reply to TypeQuery
	TypeLogGone       Type = 17 // worker -> master: which of these runs are gone from the DB?
	TypeLogGoneReply  Type = 18 // master -> worker: reply to TypeLogGone
	TypeLogSize       Type = 19 // api -> worker: how many log bytes do these runs hold here?
	TypeLogSizeReply  Type = 20 // worker -> api: reply to TypeLogSize
)

// Message is implemented by every message struct.
type Message interface{ Type() Type }

// Ping checks a link; the peer answers Pong with the same request id.
type Ping struct{}

// Pong answers Ping.
type Pong struct{}

// Dispatch asks a worker to run one task instance (one attempt).
type Dispatch struct {
	TaskInstanceID     int64             `json:"task_instance_id"`
	WorkflowInstanceID int64             `json:"workflow_instance_id"`
	Name               string            `json:"name"`
	TaskType           string            `json:"task_type"`
	Command            string            `json:"command"`
	Env                map[string]string `json:"env,omitempty"`
	// Payload is the task type's resolved fields (common/tasktype,
	// Def.Payload), for the type's executor on the worker.
	Payload json.RawMessage `json:"payload,omitempty"`
	// SecretEnv names the entries of Env that are secret: the worker masks
	// their values in the task's log and never logs them.
	SecretEnv     []string `json:"secret_env,omitempty"`
	Attempt       int      `json:"attempt"`
	TimeoutMillis int64    `json:"timeout_ms,omitempty"`
	// Tenant is the OS user the task's process runs as ("": the worker's).
	Tenant string `json:"tenant,omitempty"`
	// MasterAddr is where the worker sends ack, running and result frames. A
	// worker that learns of a newer leader sends them there instead.
	MasterAddr string `json:"master_addr"`
	Epoch      int64  `json:"epoch"`
}

// DispatchReply answers Dispatch.
type DispatchReply struct {
	TaskInstanceID int64  `json:"task_instance_id"`
	Accepted       bool   `json:"accepted"`
	Reason         string `json:"reason,omitempty"`
	// Invalid marks a refusal of the dispatch itself (it could run on no
	// worker: a NUL byte in its command, an unknown task type): the master
	// fails the task. Other refusals are about the worker's state (starting,
	// stopping, session in doubt): the master tries again later.
	Invalid bool `json:"invalid,omitempty"`
}

// Ack says a worker has the task and where its log goes.
type Ack struct {
	TaskInstanceID     int64     `json:"task_instance_id"`
	WorkflowInstanceID int64     `json:"workflow_instance_id"`
	Host               string    `json:"host"`
	LogPath            string    `json:"log_path"`
	Time               time.Time `json:"time"`
}

// Running says the task's process started.
type Running struct {
	TaskInstanceID     int64     `json:"task_instance_id"`
	WorkflowInstanceID int64     `json:"workflow_instance_id"`
	Host               string    `json:"host"`
	PID                int       `json:"pid"`
	StartTime          time.Time `json:"start_time"`
}

// Result says the task ended. State is succeeded, failed or killed.
type Result struct {
	TaskInstanceID     int64  `json:"task_instance_id"`
	WorkflowInstanceID int64  `json:"workflow_instance_id"`
	Host               string `json:"host"`
	State              string `json:"state"`
	ExitCode           int    `json:"exit_code"`
	// PID is the task's process (0: none, or run in the worker): a task
	// that ended before its Running report was due sends only this Result.
	PID       int       `json:"pid,omitempty"`
	StartTime time.Time `json:"start_time"`
	EndTime   time.Time `json:"end_time"`
	Message   string    `json:"message,omitempty"`
	// Outputs are the values the task exported (name -> value), for its
	// downstream tasks.
	Outputs map[string]string `json:"outputs,omitempty"`
}

// AckKind names which worker report a DBAck confirms.
type AckKind string

// Ack kinds.
const (
	KindAck     AckKind = "ack"
	KindRunning AckKind = "running"
	KindResult  AckKind = "result"
)

// DBAck tells the worker that a report is persisted and need not be re-sent.
// Kill set means the master no longer wants this attempt to run on that
// worker (it was taken over elsewhere): the worker kills it and drops it.
type DBAck struct {
	TaskInstanceID int64   `json:"task_instance_id"`
	Kind           AckKind `json:"kind"`
	Kill           bool    `json:"kill,omitempty"`
}

// Kill asks a worker to kill a task's whole process group.
type Kill struct {
	TaskInstanceID int64 `json:"task_instance_id"`
}

// KillResult answers Kill. Found is false when the worker does not know the task.
type KillResult struct {
	TaskInstanceID int64 `json:"task_instance_id"`
	Found          bool  `json:"found"`
}

// LogRequest asks for a task log from a byte offset; Limit 0 means all.
type LogRequest struct {
	TaskInstanceID int64  `json:"task_instance_id"`
	LogPath        string `json:"log_path"`
	Offset         int64  `json:"offset"`
	Limit          int64  `json:"limit"`
	// Streams asks which of the bytes came from stderr (LogResponse.Stderr).
	Streams bool `json:"streams,omitempty"`
}

// LogResponse answers LogRequest.
type LogResponse struct {
	TaskInstanceID int64  `json:"task_instance_id"`
	Data           []byte `json:"data"`
	EOF            bool   `json:"eof"`
	// With LogRequest.Streams: Streams says the worker records them (one
	// that does not leaves it false), Stderr the [start, end) byte ranges
	// of the log, within Data's, that came from stderr.
	Streams bool       `json:"streams,omitempty"`
	Stderr  [][2]int64 `json:"stderr,omitempty"`
}

// Nudge tells the leader that a command is waiting; the command table
// stays the source of truth (a lost nudge costs one poll interval).
type Nudge struct{}

// Query asks a worker which of the given task instances it holds (queued,
// running, or finished with reports not yet DB-acked). It also tells the
// worker where the current leader is.
type Query struct {
	TaskInstanceIDs []int64 `json:"task_instance_ids"`
	MasterAddr      string  `json:"master_addr"`
	Epoch           int64   `json:"epoch"`
}

// QueryReply answers Query with the ids the worker holds.
type QueryReply struct {
	Held []int64 `json:"held"`
}

// MaxLogRuns caps the run ids of one LogGone or LogSize: a worker asks
// about more in several requests.
const MaxLogRuns = 10000

// LogGone asks a master which of the workflow instances a worker holds log
// directories of no longer exist in the database (a retention purge
// deleted them): the worker then deletes those directories.
type LogGone struct {
	InstanceIDs []int64 `json:"instance_ids"`
}

// LogGoneReply answers LogGone with the ids that have no row.
type LogGoneReply struct {
	Gone []int64 `json:"gone"`
}

// LogSize asks a worker what the task logs of these workflow instances
// take on its disk (a retention plan's log bytes).
type LogSize struct {
	InstanceIDs []int64 `json:"instance_ids"`
}

// LogSizeReply answers LogSize: the files (logs and their stderr span
// files) and their bytes.
type LogSizeReply struct {
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
}

// CheckRunIDs checks the id list of a LogGone or LogSize: at most
// MaxLogRuns positive ids.
func CheckRunIDs(ids []int64) error {
	if len(ids) > MaxLogRuns {
		return fmt.Errorf("%d instance ids: at most %d a request", len(ids), MaxLogRuns)
	}
	for _, id := range ids {
		if id <= 0 {
			return fmt.Errorf("instance id %d: want a positive id", id)
		}
	}
	return nil
}

// Error answers a request that could not be served.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (Ping) Type() Type          { return TypePing }
func (Pong) Type() Type          { return TypePong }
func (Dispatch) Type() Type      { return TypeDispatch }
func (DispatchReply) Type() Type { return TypeDispatchReply }
func (Ack) Type() Type           { return TypeAck }
func (Running) Type() Type       { return TypeRunning }
func (Result) Type() Type        { return TypeResult }
func (DBAck) Type() Type         { return TypeDBAck }
func (Kill) Type() Type          { return TypeKill }
func (KillResult) Type() Type    { return TypeKillResult }
func (LogRequest) Type() Type    { return TypeLogRequest }
func (LogResponse) Type() Type   { return TypeLogResponse }
func (Error) Type() Type         { return TypeError }
func (Nudge) Type() Type         { return TypeNudge }
func (Query) Type() Type         { return TypeQuery }
func (QueryReply) Type() Type    { return TypeQueryReply }
func (LogGone) Type() Type       { return TypeLogGone }
func (LogGoneReply) Type() Type  { return TypeLogGoneReply }
func (LogSize) Type() Type       { return TypeLogSize }
func (LogSizeReply) Type() Type  { return TypeLogSizeReply }

// Encode returns the frame body of m.
func Encode(m Message) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", m, err)
	}
	return b, nil
}

// Decode parses a frame body of type t into its message struct (a value, not
// a pointer). Unknown types and malformed bodies are errors, never panics.
func Decode(t Type, body []byte) (Message, error) {
	switch t {
	case TypePing:
		return Ping{}, nil
	case TypePong:
		return Pong{}, nil
	case TypeDispatch:
		return decode[Dispatch](body)
	case TypeDispatchReply:
		return decode[DispatchReply](body)
	case TypeAck:
		return decode[Ack](body)
	case TypeRunning:
		return decode[Running](body)
	case TypeResult:
		return decode[Result](body)
	case TypeDBAck:
		return decode[DBAck](body)
	case TypeKill:
		return decode[Kill](body)
	case TypeKillResult:
		return decode[KillResult](body)
	case TypeLogRequest:
		return decode[LogRequest](body)
	case TypeLogResponse:
		return decode[LogResponse](body)
	case TypeError:
		return decode[Error](body)
	case TypeNudge:
		return Nudge{}, nil
	case TypeQuery:
		return decode[Query](body)
	case TypeQueryReply:
		return decode[QueryReply](body)
	case TypeLogGone:
		return decode[LogGone](body)
	case TypeLogGoneReply:
		return decode[LogGoneReply](body)
	case TypeLogSize:
		return decode[LogSize](body)
	case TypeLogSizeReply:
		return decode[LogSizeReply](body)
	}
	return nil, fmt.Errorf("unknown message type %d", t)
}

func decode[M Message](body []byte) (Message, error) {
	var m M
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("decode %T: %w", m, err)
	}
	return m, nil
}
