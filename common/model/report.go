package model

import "time"

// Dispatch records that a task instance was handed to a worker.
type Dispatch struct {
	ID   int64
	Host string
	Time time.Time
}

// ReportKind names a worker report.
type ReportKind string

// Report is a worker's report about one task instance.
type Report struct {
	ID        int64
	Kind      ReportKind
	Host      string
	LogPath   string
	PID       int
	State     TaskState // result only
	ExitCode  int       // result only
	StartTime time.Time
	EndTime   time.Time
	Outputs   map[string]string // result only: what the task exported
}

// ReportOutcome says what applying a report did.
type ReportOutcome int

// Report kinds.
const (
	ReportAck     ReportKind = "ack"
	ReportRunning ReportKind = "running"
	ReportResult  ReportKind = "result"
)

// Report outcomes.
const (
	// ReportApplied: the row changed.
	ReportApplied ReportOutcome = iota
	// ReportDuplicate: the row already reflects this report or a later one.
	ReportDuplicate
	// ReportForeign: the row belongs to another worker, or the task ended otherwise
	// (killed, taken over); the reporting worker must drop the task.
	ReportForeign
)
