package sql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/beluga-scheduler/beluga/common/datasource"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// childInput is what the worker hands the sql task's child process on its
// stdin: the statements and the connection, password opened. The worker
// opens it (the child, as the task's user, cannot read the key file) and
// checks the SQLite path with the worker's view of the file system.
type childInput struct {
	Payload Payload           `json:"payload"`
	Conn    datasource.Config `json:"conn"`
}

// input runs in the worker: it decodes the payload, opens the password
// and refuses a SQLite file among the server's own.
func input(j tasktype.Job) ([]byte, error) {
	var p Payload
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return nil, fmt.Errorf("sql payload: %w", err)
	}
	cfg, err := connConfig(p.Datasource, j.Config[SecretKeyFileConfig])
	if err != nil {
		return nil, err
	}
	if cfg.Type == datasource.SQLite {
		if err := checkSQLitePath(cfg.Database, protectedPaths(j.Config[ProtectedPathsConfig])); err != nil {
			return nil, err
		}
	}
	return json.Marshal(childInput{Payload: p, Conn: cfg})
}

// childMain runs in the child process: the statements, with the log on
// its stdout.
func childMain(ctx context.Context, in []byte, log io.Writer) tasktype.Outcome {
	var ci childInput
	if err := json.Unmarshal(in, &ci); err != nil {
		return tasktype.Outcome{Err: fmt.Errorf("sql task input: %w", err)}
	}
	if len(ci.Payload.Statements) == 0 {
		return tasktype.Outcome{Err: errors.New("sql task input: no statements")}
	}
	return run(ctx, &ci.Payload, ci.Conn, log)
}

// inputSecrets is the password of the input: the log masks it.
func inputSecrets(in []byte) []string {
	var ci childInput
	if json.Unmarshal(in, &ci) != nil || ci.Conn.Password == "" {
		return nil
	}
	return []string{ci.Conn.Password}
}
