package sql

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/datasource"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

func TestBind(t *testing.T) {
	t.Parallel()
	vals := map[string]string{"day": "20260101", "who": "x'; DROP TABLE t; --"}
	for _, tc := range []struct {
		typ, in, want string
		args          []string
		err           string
	}{
		{"mysql", "select * from t where day = ${day} and who = ${who}", "select * from t where day = ? and who = ?", []string{"20260101", "x'; DROP TABLE t; --"}, ""},
		{"postgres", "select ${day}, ${day}, ${who}", "select $1, $2, $3", []string{"20260101", "20260101", "x'; DROP TABLE t; --"}, ""},
		{"sqlite", "select 1", "select 1", nil, ""},
		{"sqlite", "select '${ not a ref' || ${1x}", "select '${ not a ref' || ${1x}", nil, ""},
		{"mysql", "select ${nope}", "", nil, "${nope} names no param"},
	} {
		got, err := Bind(tc.in, vals, datasource.Dialect{Type: tc.typ})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Bind(%q): err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got.SQL != tc.want || !reflect.DeepEqual(got.Args, tc.args) {
			t.Errorf("Bind(%q, %s) = %+v, %v; want %q %q", tc.in, tc.typ, got, err, tc.want, tc.args)
		}
	}
}

func TestSpecProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		fields string
		want   string
	}{
		{"no datasource", `{"sql":"select 1"}`, "datasource is required"},
		{"bad datasource", `{"datasource":"a b","sql":"select 1"}`, `datasource "a b" is not a valid name`},
		{"no sql", `{"datasource":"wh"}`, "sql is required"},
		{"empty statement", `{"datasource":"wh","sql":["select 1","  "]}`, "sql statement 2 is empty"},
		{"sql a number", `{"datasource":"wh","sql":5}`, "expected a string or a list of strings"},
		{"unknown field", `{"datasource":"wh","sql":"select 1","url":"http://x"}`, `field "url" does not belong to type sql`},
		{"transaction not bool", `{"datasource":"wh","sql":"select 1","transaction":"no"}`, `transaction`},
	} {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tc.fields), &fields); err != nil {
			t.Fatal(err)
		}
		_, problems := Type.Decode(fields)
		if !strings.Contains(strings.Join(problems, "; "), tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.name, problems, tc.want)
		}
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal([]byte(`{"datasource":"wh","sql":["select 1","select 2"],"transaction":false}`), &fields)
	s, problems := Type.Decode(fields)
	if len(problems) > 0 || len(s.(*Spec).SQL) != 2 || s.(*Spec).inTransaction() {
		t.Fatalf("good spec: %+v %v", s, problems)
	}
	if Type.Datasource(s) != "wh" {
		t.Fatal("Datasource does not name the spec's datasource")
	}
	// A datasource that is gone fails the payload (and the dry run).
	in := tasktype.Inputs{Datasource: func(name string) (tasktype.Datasource, error) {
		return tasktype.Datasource{}, errGone
	}}
	if _, err := Type.Payload(s, in); err == nil || !strings.Contains(err.Error(), `datasource "wh"`) {
		t.Fatalf("payload with a missing datasource: %v", err)
	}
	if _, err := Type.DryRun(s, in); err == nil {
		t.Fatal("dry run with a missing datasource succeeded")
	}
}

type goneErr struct{}

func (goneErr) Error() string { return "not found" }

var errGone = goneErr{}

func TestReturnsRows(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]bool{
		"select 1": true, "  -- c\n/* x */ SELECT 1": true, "with a as (select 1) select * from a": true,
		"insert into t values (1)": false, "INSERT INTO t VALUES (1) RETURNING id": true, "update t set a=1": false,
		"(select 1)": true, "show tables": true, "create table t (a int)": false, "": false,
	} {
		if got := returnsRows(q); got != want {
			t.Errorf("returnsRows(%q) = %v", q, got)
		}
	}
}
