package trigger

import (
	"os"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
)

func TestMain(m *testing.M) { os.Exit(leakcheck.Run(m)) }

func TestParams(t *testing.T) {
	t.Parallel()
	body := []byte(`{"ref":"refs/heads/main","n":42,"f":1.5,"ok":true,"nil":null,"head":{"id":"abc"},
		"commits":[{"id":"c1"},{"id":"c2"}],"obj":{"a":[1,2]},"when":"$[yyyyMMdd]","bad":"$[yyyyQQ]"}`)
	for _, c := range []struct {
		name    string
		mapping map[string]string
		want    map[string]string
		err     string
	}{
		{"nothing mapped", nil, map[string]string{}, ""},
		{"strings, numbers, bools as written", map[string]string{"ref": "ref", "n": "n", "f": "f", "ok": "ok"},
			map[string]string{"ref": "refs/heads/main", "n": "42", "f": "1.5", "ok": "true"}, ""},
		{"nested and indexed", map[string]string{"id": "head.id", "last": "commits.1.id", "count": "commits.#"},
			map[string]string{"id": "abc", "last": "c2", "count": "2"}, ""},
		{"an object as its JSON", map[string]string{"o": "obj"}, map[string]string{"o": `{"a":[1,2]}`}, ""},
		{"a time expression is kept for the run", map[string]string{"d": "when"}, map[string]string{"d": "$[yyyyMMdd]"}, ""},
		{"missing", map[string]string{"x": "head.nope"}, nil, `param "x": the request JSON has no value at "head.nope"`},
		{"null", map[string]string{"x": "nil"}, nil, `param "x": the request JSON has no value at "nil"`},
		{"a malformed time expression", map[string]string{"x": "bad"}, nil, `param "x"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Params(body, c.mapping)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil || len(got) != len(c.want) {
				t.Fatalf("%v %v, want %v", got, err, c.want)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Fatalf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
	for _, bad := range []string{``, `{"a":`, `{"a":1}x`, `nope`} {
		if _, err := Params([]byte(bad), nil); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
			t.Errorf("body %q: %v, want not valid JSON", bad, err)
		}
	}
	big := []byte(`{"v":"` + strings.Repeat("x", MaxValueBytes+1) + `"}`)
	if _, err := Params(big, map[string]string{"v": "v"}); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("a value over the limit: %v", err)
	}
}

func TestCheckMapping(t *testing.T) {
	t.Parallel()
	many := map[string]string{}
	for i := range MaxParams + 1 {
		many["p"+strings.Repeat("x", i)] = "a"
	}
	for _, c := range []struct {
		m   map[string]string
		err string
	}{
		{nil, ""},
		{map[string]string{"ref": "ref", "BELUGA_BIZ_DATE": "d"}, ""},
		{map[string]string{"PATH": "x"}, "reserved"},
		{map[string]string{"LD_PRELOAD": "x"}, "reserved"},
		{map[string]string{"a-b": "x"}, "valid environment variable name"},
		{map[string]string{"a": " "}, "empty"},
		{map[string]string{"a": strings.Repeat("p", MaxPathLen+1)}, "at most"},
		{map[string]string{"a": "x\ny"}, "control character"},
		{many, "mapped, at most"},
	} {
		err := CheckMapping(c.m)
		if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%v: %v, want %q", c.m, err, c.err)
		}
	}
}

func TestCheckKeyAndToken(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		key string
		ok  bool
	}{{"", true}, {"delivery-42", true}, {strings.Repeat("k", MaxKeyLen), true}, {strings.Repeat("k", MaxKeyLen+1), false}, {"a\rb", false}} {
		if err := CheckKey(c.key); (err == nil) != c.ok {
			t.Errorf("key %q: %v", c.key, err)
		}
	}
	a, b := NewToken(), NewToken()
	if a == b || !strings.HasPrefix(a, TokenPrefix) || len(a) < len(TokenPrefix)+26 {
		t.Fatalf("tokens %q %q", a, b)
	}
	if !HashMatches("h1", "h1") || HashMatches("h1", "h2") || HashMatches("", "") {
		t.Fatal("HashMatches")
	}
}
