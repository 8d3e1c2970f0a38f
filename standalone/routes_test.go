package standalone

import (
	"maps"
	"strings"
	"testing"
)

func TestParseRoutes(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want map[string]string
		err  string
	}{
		{nil, nil, ""},
		{[]string{"10.0.0.5:5678=nat:15678", "10.0.0.6:5678=nat:15679"},
			map[string]string{"10.0.0.5:5678": "nat:15678", "10.0.0.6:5678": "nat:15679"}, ""},
		{[]string{"10.0.0.5:5678"}, nil, "want advertised=reach"},
		{[]string{"10.0.0.5=nat:1"}, nil, `"10.0.0.5" is not host:port`},
		{[]string{"a:1=b"}, nil, `"b" is not host:port`},
		{[]string{"a:1=b:1", "a:1=c:1"}, nil, "routed twice"},
	} {
		got, err := ParseRoutes(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRoutes(%q): %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("ParseRoutes(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
