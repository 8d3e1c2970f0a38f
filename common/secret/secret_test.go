package secret

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
)

func box(t *testing.T, s string) *Box {
	t.Helper()
	sec, err := clusterkey.New([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBox(sec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSealOpen(t *testing.T) {
	b := box(t, "0123456789abcdef-one")
	a1, err := b.Seal("hunter2")
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := b.Seal("hunter2")
	if !IsSealed(a1) || strings.Contains(a1, "hunter2") || a1 == a2 {
		t.Fatalf("sealed %q and %q: want the prefix, no plaintext, a fresh nonce each time", a1, a2)
	}
	if again, _ := b.Seal(a1); again != a1 {
		t.Fatalf("sealing a sealed value changed it")
	}
	if got, err := b.Open(a1); err != nil || got != "hunter2" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := box(t, "0123456789abcdef-two").Open(a1); err == nil {
		t.Fatal("another cluster secret opened the value")
	}
	if _, err := b.Open(a1[:len(a1)-2] + "AA"); err == nil {
		t.Fatal("a damaged value opened")
	}
	if _, err := b.Open("hunter2"); err == nil {
		t.Fatal("a plain value opened")
	}
	var none *Box
	if _, err := none.Seal("x"); !errors.Is(err, ErrNoKey) {
		t.Fatalf("nil box Seal: %v", err)
	}
	d1, _ := b.Digest("hunter2")
	d2, _ := b.Digest("hunter2")
	d3, _ := box(t, "0123456789abcdef-two").Digest("hunter2")
	if d1 != d2 || d1 == d3 || strings.Contains(d1, "hunter2") {
		t.Fatalf("digests %q %q %q: want equal for one key, different across keys", d1, d2, d3)
	}
}

func TestSealNamedLeavesOthers(t *testing.T) {
	b := box(t, "0123456789abcdef-one")
	in := map[string]string{"pw": "s3cret", "day": "$[yyyyMMdd]"}
	out, err := b.SealNamed(in, []string{"pw", "absent"})
	if err != nil {
		t.Fatal(err)
	}
	if in["pw"] != "s3cret" || !IsSealed(out["pw"]) || out["day"] != "$[yyyyMMdd]" {
		t.Fatalf("in %v out %v", in, out)
	}
	if m := MaskMap(out); m["pw"] != Mask || m["day"] != "$[yyyyMMdd]" || !IsSealed(out["pw"]) {
		t.Fatalf("MaskMap = %v (and must not change its argument: %v)", m, out)
	}
}

func TestMaskJSON(t *testing.T) {
	b := box(t, "0123456789abcdef-one")
	s, _ := b.Seal("pw")
	plain := []byte(`{"name":"w","params":{"a":"1"}}`)
	if got := MaskJSON(plain); !bytes.Equal(got, plain) {
		t.Fatalf("a spec without secrets changed: %s", got)
	}
	got := MaskJSON([]byte(`{"name":"w","params":{"b":"` + s + `","a":"1"},"tasks":[{"params":{"x":"` + s + `"}}]}`))
	want := `{"name":"w","params":{"b":"***","a":"1"},"tasks":[{"params":{"x":"***"}}]}`
	if string(got) != want {
		t.Fatalf("MaskJSON:\n got %s\nwant %s", got, want)
	}
}

func TestMasker(t *testing.T) {
	const pw = "hunter2!"
	cases := []struct{ name, in, want string }{
		{"plain", "nothing here\n", "nothing here\n"},
		{"one", "pw=" + pw + "\n", "pw=***\n"},
		{"twice adjacent", pw + pw, "******"},
		{"prefix only at end", "x hunter", "x hunter"},
		{"prefix then other", "hunterX " + pw, "hunterX ***"},
		{"longer value wins", "tok=abcdef", "tok=***"},
		{"short value kept", "a b", "a b"},
	}
	values := []string{pw, "abc", "abcdef", "a"}
	for _, c := range cases {
		for _, split := range []bool{false, true} {
			var r io.Reader = strings.NewReader(c.in)
			if split {
				r = iotest.OneByteReader(r) // every value arrives split
			}
			got, err := io.ReadAll(NewMasker(r, values))
			if err != nil || string(got) != c.want {
				t.Errorf("%s (one byte reads %v): got %q, %v; want %q", c.name, split, got, err, c.want)
			}
		}
	}
	r := strings.NewReader("x")
	if NewMasker(r, []string{"", "ab"}) != io.Reader(r) {
		t.Error("with nothing to mask the reader is not passed through")
	}
}

// A value that arrives in two writes with a pause between them is still
// masked: the first part is held back, not written.
func TestMaskerHoldsSplitValue(t *testing.T) {
	pr, pw := io.Pipe()
	m := NewMasker(pr, []string{"topsecret"})
	go func() {
		pw.Write([]byte("a top"))
		pw.Write([]byte("secret b"))
		pw.Close()
	}()
	got, _ := io.ReadAll(m)
	if string(got) != "a *** b" {
		t.Fatalf("got %q", got)
	}
}

// TestFilterMasksWhatIsPushed: a Masker fed by its caller masks a value
// split across feeds, passes what cannot begin one at once, and gives the
// held tail at End.
func TestFilterMasksWhatIsPushed(t *testing.T) {
	m := NewFilter([]string{"hunter2"})
	var out []byte
	for _, p := range []string{"pw=hun", "ter2; hu", "!"} {
		out = append(out, m.Feed([]byte(p))...)
	}
	if string(out) != "pw="+Mask+"; hu!" {
		t.Fatalf("fed: %q", out)
	}
	if got := string(m.Feed([]byte("x hunt"))) + string(m.End()); got != "x hunt" {
		t.Fatalf("a held tail at the end: %q", got)
	}
	plain := NewFilter(nil)
	if p := []byte("as is"); &plain.Feed(p)[0] != &p[0] || plain.End() != nil {
		t.Fatal("with nothing to mask, Feed should pass its input on")
	}
}
