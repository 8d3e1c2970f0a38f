package switchtask

import (
	"strings"
	"testing"
)

// TestCheck: a bad expression is refused naming its case and position.
func TestCheck(t *testing.T) {
	s := &Spec{Cases: []Case{{When: `env == "prod"`, Next: []string{"a"}}, {When: `int(rows) >`, Next: []string{"b"}}}}
	got := strings.Join(check(s), "; ")
	if !strings.Contains(got, "case 2") || !strings.Contains(got, "line 1, column") || strings.Contains(got, "case 1") {
		t.Fatalf("problems: %s", got)
	}
	if p := check(&Spec{Cases: []Case{{When: "1 +", Next: nil}}}); len(p) != 1 {
		t.Fatalf("problems: %v", p)
	}
	if p := check(&Spec{}); len(p) != 1 || !strings.Contains(p[0], "needs cases") {
		t.Fatalf("problems: %v", p)
	}
	if p := check(&Spec{Cases: []Case{{When: "true", Next: []string{"a", "a"}}}}); len(p) != 1 || !strings.Contains(p[0], "twice") {
		t.Fatalf("problems: %v", p)
	}
}

// TestDecide: first true case wins over string variables converted by
// int(); no case and no default fails naming the values seen.
func TestDecide(t *testing.T) {
	s := &Spec{Cases: []Case{
		{When: `env == "prod" && int(rows) > 1000`, Next: []string{"big"}},
		{When: `env == "prod"`, Next: []string{"small"}},
	}, Default: []string{"note"}}
	for _, c := range []struct {
		vars map[string]string
		next string
		cas  string
	}{
		{map[string]string{"env": "prod", "rows": "1500"}, "big", "1"},
		{map[string]string{"env": "prod", "rows": "10"}, "small", "2"},
		{map[string]string{"env": "dev", "rows": "10"}, "note", "default"},
	} {
		b, err := decide(s, c.vars)
		if err != nil || strings.Join(b.Next, ",") != c.next || b.Outputs["case"] != c.cas {
			t.Fatalf("%v: next %v outputs %v err %v", c.vars, b.Next, b.Outputs, err)
		}
		if !strings.Contains(b.Outputs["values"], `env="`+c.vars["env"]+`"`) {
			t.Fatalf("values shown: %q", b.Outputs["values"])
		}
	}
	s.Default = nil
	_, err := decide(s, map[string]string{"env": "dev", "rows": "10"})
	if err == nil || !strings.Contains(err.Error(), `env="dev"`) || !strings.Contains(err.Error(), "no case") {
		t.Fatalf("no case: %v", err)
	}
	_, err = decide(s, map[string]string{"env": "prod", "rows": "many"})
	if err == nil || !strings.Contains(err.Error(), "case 1") || !strings.Contains(err.Error(), `rows="many"`) {
		t.Fatalf("bad conversion: %v", err)
	}
}

// FuzzSwitch: any expression is either refused by check or evaluates
// (true, false or an error naming its case) without panicking.
func FuzzSwitch(f *testing.F) {
	for _, s := range []string{`env == "prod" && int(rows) > 1000`, `float(x) / 0`, `rows matches "["`, `len(env) > 2 ? true : false`,
		`int(rows) >`, `"a" + 1`, `[1,2,3] | filter(# > 1) | len() == 2`, `env in ["a", "b"]`} {
		f.Add(s, "prod", "1500")
	}
	f.Fuzz(func(t *testing.T, when, env, rows string) {
		s := &Spec{Cases: []Case{{When: when, Next: []string{"a"}}}, Default: []string{"b"}}
		if len(check(s)) > 0 {
			return
		}
		b, err := decide(s, map[string]string{"env": env, "rows": rows})
		if err != nil && !strings.Contains(err.Error(), "case 1") {
			t.Fatalf("error does not name the case: %v", err)
		}
		if err == nil && len(b.Next) != 1 {
			t.Fatalf("next %v", b.Next)
		}
	})
}
