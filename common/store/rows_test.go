package store

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

// flatStrings decodes what json.Marshal writes for a map of strings as
// json.Unmarshal does, or declines; it never decodes differently.
func TestFlatStringsAsUnmarshal(t *testing.T) {
	cases := []string{`{}`, `{"a":"b"}`, `{"a":"","b":"c d"}`, `{"k":"v","k":"w"}`, `{"a":"\u003c"}`, `{"a":"x\"y"}`,
		`{"a":1}`, `{"a":null}`, `{"a":"b",}`, `{"a" :"b"}`, `{ "a":"b"}`, `{"a":"b"`, `{"a"}`, `{"a":}`, `{"ü":"ß"}`,
		"{\"a\":\"\x01\"}", "{\"a\":\"\xff\"}", `[]`, `{"a":"b""c":"d"}`, `{"a":"b",,"c":"d"}`, `{"":""}`}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("ab:,{}\"\\ <>&é\x01")
	for range 2000 {
		m := map[string]string{}
		for range rng.IntN(5) {
			k, v := make([]rune, rng.IntN(4)), make([]rune, rng.IntN(6))
			for i := range k {
				k[i] = alphabet[rng.IntN(len(alphabet))]
			}
			for i := range v {
				v[i] = alphabet[rng.IntN(len(alphabet))]
			}
			m[string(k)] = string(v)
		}
		b, _ := json.Marshal(m)
		cases = append(cases, string(b))
	}
	fast := 0
	for _, c := range cases {
		got, ok := flatStrings(c)
		var want map[string]string
		err := json.Unmarshal([]byte(c), &want)
		if !ok {
			continue
		}
		fast++
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: flatStrings %v, json.Unmarshal %v (%v)", c, got, want, err)
		}
	}
	if fast < len(cases)/10 {
		t.Fatalf("only %d of %d decoded on the fast path", fast, len(cases))
	}
}
