package tasktype

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

type fakeSpec struct {
	URL     string            `json:"url"`
	Codes   []int             `json:"codes,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Strict  *bool             `json:"strict"`
	Body    flexible          `json:"body,omitempty"`
	Ratio   float64           `json:"ratio,omitempty"`
	Hidden  string            `json:"-"`
	Nested  []struct{ A int } `json:"nested,omitempty"`
}

// flexible decodes from a string or a list, as sql's statements do.
type flexible []string

func (f *flexible) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*f = flexible{s}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(f))
}

func run(context.Context, Job) Outcome { return Outcome{} }

func fake(name string) *Def {
	return &Def{Name: name, Summary: "a fake", Placement: Worker, Spec: func() Spec { return &fakeSpec{} }, Run: run,
		Check: func(s Spec) []string {
			if s.(*fakeSpec).URL == "" {
				return []string{"url is required"}
			}
			return nil
		}}
}

// reset empties the registry for a test and puts it back after.
func reset(t *testing.T) {
	mu.Lock()
	saved, savedOrder := types, order
	types, order = map[string]*Def{}, nil
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		types, order = saved, savedOrder
		mu.Unlock()
	})
}

func TestRegisterRefusesBadDefinitions(t *testing.T) {
	reset(t)
	Register(fake("ok"))
	start := func(context.Context, Host, Attempt) {}
	cancel := func(context.Context, Host, Attempt, CancelReason) {}
	decide := func(Spec, Inputs) (Branch, error) { return Branch{}, nil }
	spec := func() Spec { return &fakeSpec{} }
	for _, tc := range []struct {
		name string
		d    *Def
		want string
	}{
		{"nil", nil, "needs a name"},
		{"no name", &Def{Spec: spec, Placement: Worker, Run: run}, "needs a name"},
		{"no spec", &Def{Name: "x", Placement: Worker, Run: run}, "needs a name"},
		{"bad placement", &Def{Name: "x", Spec: spec, Placement: "moon", Run: run}, "placement"},
		{"worker without executor", &Def{Name: "x", Spec: spec, Placement: Worker}, "exactly one of Argv, Run and Child"},
		{"worker with both", &Def{Name: "x", Spec: spec, Placement: Worker, Run: run, Argv: func(Job) ([]string, error) { return nil, nil }}, "exactly one of Argv, Run and Child"},
		{"master with both faces", &Def{Name: "x", Spec: spec, Placement: Master, Decide: decide, Start: start, Cancel: cancel}, "Decide, or Start and Cancel"},
		{"master start without cancel", &Def{Name: "x", Spec: spec, Placement: Master, Start: start}, "Decide, or Start and Cancel"},
		{"twice", fake("ok"), "registered twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), tc.want) {
					t.Fatalf("panic %v, want one saying %q", r, tc.want)
				}
			}()
			Register(tc.d)
		})
	}
	if !slices.Equal(Names(), []string{"ok"}) {
		t.Fatalf("a refused definition was kept: %v", Names())
	}
	Register(&Def{Name: "long", Spec: spec, Placement: Master, Start: start, Cancel: cancel})
	Register(&Def{Name: "branch", Spec: spec, Placement: Master, Decide: decide})
	Register(&Def{Name: "unrun", Spec: spec, Placement: Master}) // the master fails its tasks: not supported
}

// Names is sorted; All keeps the registration order (the palette's).
func TestNamesSortedAllInOrder(t *testing.T) {
	reset(t)
	for _, n := range []string{"zeta", "alpha", "mid"} {
		Register(fake(n))
	}
	if got := Names(); !slices.Equal(got, []string{"alpha", "mid", "zeta"}) {
		t.Fatalf("Names %v", got)
	}
	var got []string
	for _, d := range All() {
		got = append(got, d.Name)
	}
	if !slices.Equal(got, []string{"zeta", "alpha", "mid"}) {
		t.Fatalf("All %v", got)
	}
	if _, ok := Lookup("nope"); ok {
		t.Fatal("found an unregistered type")
	}
	if err := UnknownError("nope"); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "alpha, mid, zeta") {
		t.Fatalf("UnknownError: %v", err)
	}
}

func TestDecode(t *testing.T) {
	d := fake("web")
	for _, tc := range []struct {
		name   string
		fields string
		want   string // a problem; "" decodes
	}{
		{"fine", `{"url": "http://x", "codes": [200], "body": "one"}`, ""},
		{"flexible as a list", `{"url": "http://x", "body": ["a", "b"]}`, ""},
		{"unknown field", `{"url": "http://x", "command": "ls"}`, `field "command" does not belong to type web (its fields: url, codes, headers, strict, body, ratio, nested)`},
		{"wrong type", `{"url": 5}`, `field "url": expected string, got number`},
		{"check", `{"codes": [1]}`, "url is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fields map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tc.fields), &fields); err != nil {
				t.Fatal(err)
			}
			s, problems := d.Decode(fields)
			switch {
			case tc.want == "" && (len(problems) > 0 || s == nil):
				t.Fatalf("problems %v", problems)
			case tc.want != "" && (s != nil || !slices.Contains(problems, tc.want)):
				t.Fatalf("spec %v, problems %q, want %q", s, problems, tc.want)
			}
		})
	}
	none := &Def{Name: "bare", Spec: func() Spec { return &struct{}{} }}
	if _, problems := none.Decode(map[string]json.RawMessage{"x": json.RawMessage(`1`)}); len(problems) != 1 || !strings.Contains(problems[0], "it has no type fields") {
		t.Fatalf("a field on a type without fields: %v", problems)
	}
}

// Info gives each field its JSON type, as clients (the API, the OpenAPI
// document and the UI) are told.
func TestInfoFieldTypes(t *testing.T) {
	got := fake("web").Info()
	want := []Field{{Name: "url", Type: "string"}, {Name: "codes", Type: "array", Items: "integer"}, {Name: "headers", Type: "object"},
		{Name: "strict", Type: "boolean"}, {Name: "body"}, {Name: "ratio", Type: "number"}, {Name: "nested", Type: "array", Items: "object"}}
	if got.Name != "web" || got.Summary != "a fake" || got.Placement != Worker || !slices.Equal(got.Fields, want) {
		t.Fatalf("Info %+v, want fields %+v", got, want)
	}
}

func TestFieldNamesAndDescribe(t *testing.T) {
	reset(t)
	Register(fake("web"))
	Register(&Def{Name: "cmd", Placement: Worker, Run: run, Spec: func() Spec {
		return &struct {
			Command string `json:"command"`
			URL     string `json:"url"`
		}{}
	}})
	if got := FieldNames(); !slices.Equal(got, []string{"body", "codes", "command", "headers", "nested", "ratio", "strict", "url"}) {
		t.Fatalf("FieldNames %v", got)
	}
	d := Describe()
	if len(d) != 2 || d[0].Name != "web" || d[1].Name != "cmd" || len(d[1].Fields) != 2 {
		t.Fatalf("Describe %+v", d)
	}
}

func TestCheckNames(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  []string
	}{
		{[]string{"a", "b"}, nil},
		{[]string{"a", " "}, []string{"next[1]: empty task name"}},
		{[]string{"a", "a"}, []string{`next lists "a" twice`}},
	} {
		if got := CheckNames("next", tc.names); !slices.Equal(got, tc.want) {
			t.Errorf("CheckNames(%q) = %q, want %q", tc.names, got, tc.want)
		}
	}
}
