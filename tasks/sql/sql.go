// Package sql is the sql task type: statements against a managed
// datasource. ${name} in a statement becomes a bind parameter of the
// datasource's dialect (? or $N) with the param's value, never text
// spliced into the statement. The datasource's password reaches the
// worker sealed and is opened there with the worker's own key file
// (secret_key_file); the statements run in a child process (child.go), as
// the task's OS user and in its sandbox, so that neither the SQL nor the
// database engine runs with the worker's rights or sees its files.
package sql

import (
	"context"
	dbsql "database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/beluga-scheduler/beluga/common/datasource"
	"github.com/beluga-scheduler/beluga/common/params"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// Limits of a spec.
const (
	MaxStatements = 100
	// MaxLoggedRows is how many rows of a result are written to the log.
	MaxLoggedRows = 1000
)

// Statements is `sql:` as a string or a list of strings.
type Statements []string

// UnmarshalJSON takes a string or a list of strings.
func (s *Statements) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = Statements{one}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return errors.New(`field "sql": expected a string or a list of strings`)
	}
	*s = list
	return nil
}

// Spec is the sql type's fields.
type Spec struct {
	Datasource string     `json:"datasource"`
	SQL        Statements `json:"sql"`
	// Transaction (default true) runs a list in one transaction.
	Transaction *bool `json:"transaction"`
}

func (s *Spec) inTransaction() bool { return s.Transaction == nil || *s.Transaction }

// Statement is one statement with its bind arguments, in order.
type Statement struct {
	SQL  string   `json:"sql"`
	Args []string `json:"args,omitempty"`
}

// Payload is what a worker needs for one attempt.
type Payload struct {
	Datasource  tasktype.Datasource `json:"datasource"`
	Statements  []Statement         `json:"statements"`
	Transaction bool                `json:"transaction"`
}

// Type is the sql task type.
var Type = &tasktype.Def{
	Name:       "sql",
	Summary:    "SQL on a datasource",
	Placement:  tasktype.Worker,
	Spec:       func() tasktype.Spec { return &Spec{} },
	Check:      func(s tasktype.Spec) []string { return check(s.(*Spec)) },
	Datasource: func(s tasktype.Spec) string { return s.(*Spec).Datasource },
	Payload:    func(s tasktype.Spec, in tasktype.Inputs) (any, error) { return resolve(s.(*Spec), in) },
	// A dry run connects to nothing, but a datasource that is gone or a
	// ${name} no param answers fails it as a real run would.
	DryRun: func(s tasktype.Spec, in tasktype.Inputs) (map[string]string, error) {
		_, err := resolve(s.(*Spec), in)
		return nil, err
	},
	Child: &tasktype.Child{Input: input, Main: childMain, Secrets: inputSecrets},
}

func check(s *Spec) []string {
	var problems []string
	switch {
	case s.Datasource == "":
		problems = append(problems, "datasource is required for type sql")
	case !validName(s.Datasource):
		problems = append(problems, fmt.Sprintf("datasource %q is not a valid name", s.Datasource))
	}
	if len(s.SQL) == 0 {
		problems = append(problems, "sql is required for type sql: a statement or a list of them")
	}
	if len(s.SQL) > MaxStatements {
		problems = append(problems, fmt.Sprintf("sql has %d statements; at most %d", len(s.SQL), MaxStatements))
	}
	for i, st := range s.SQL {
		if strings.TrimSpace(st) == "" {
			problems = append(problems, fmt.Sprintf("sql statement %d is empty", i+1))
		}
		if strings.IndexByte(st, 0) >= 0 {
			problems = append(problems, fmt.Sprintf("sql statement %d holds a NUL byte", i+1))
		}
	}
	return problems
}

func resolve(s *Spec, in tasktype.Inputs) (*Payload, error) {
	if in.Datasource == nil {
		return nil, errors.New("no datasources can be read here")
	}
	ds, err := in.Datasource(s.Datasource)
	if err != nil {
		return nil, fmt.Errorf("datasource %q: %w", s.Datasource, err)
	}
	d := datasource.Dialect{Type: ds.Type}
	p := &Payload{Datasource: ds, Transaction: s.inTransaction()}
	for i, text := range s.SQL {
		st, err := Bind(text, in.Params, d)
		if err != nil {
			if len(s.SQL) > 1 {
				return nil, fmt.Errorf("sql statement %d: %w", i+1, err)
			}
			return nil, fmt.Errorf("sql: %w", err)
		}
		p.Statements = append(p.Statements, st)
	}
	return p, nil
}

// Bind turns each ${name} of text into the dialect's next bind parameter
// with the param's value as its argument. Text that only looks like a
// reference (no closing brace, not an identifier) stays as it is.
func Bind(text string, vals map[string]string, d datasource.Dialect) (Statement, error) {
	var b strings.Builder
	var args []string
	rest := text
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 || !params.IsName(rest[i+2:i+j]) {
			b.WriteString(rest[:i+2])
			rest = rest[i+2:]
			continue
		}
		name := rest[i+2 : i+j]
		v, ok := vals[name]
		if !ok {
			return Statement{}, fmt.Errorf("${%s} names no param of the task", name)
		}
		args = append(args, v)
		b.WriteString(rest[:i])
		b.WriteString(d.Placeholder(len(args)))
		rest = rest[i+j+1:]
	}
	b.WriteString(rest)
	return Statement{SQL: b.String(), Args: args}, nil
}

// SecretKeyFileConfig is the tasktype.Job.Config key of the worker's key
// file.
const SecretKeyFileConfig = "secret_key_file"

// anyArgs converts bind arguments for database/sql.
func anyArgs(args []string) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}

// querier is what a statement runs on: a pinned connection or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*dbsql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (dbsql.Result, error)
}

// validName is the rule of datasource names (those of common/spec, which
// this package cannot import: the spec parser imports the task types).
func validName(s string) bool {
	if s == "" || len(s) > 128 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
