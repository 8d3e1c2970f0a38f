package standalone_test

import (
	"fmt"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// retype clicks the field sel, selects what it holds with Ctrl+A, takes it
// away with Backspace and types text, a key at a time at a person's pace.
// A field that cannot be emptied that way fails the test, as it would
// stop a person.
func (s *session) retype(sel, text string) {
	s.t.Helper()
	s.click(sel)
	s.keys("a", input.ModifierCtrl)
	s.keys(kb.Backspace)
	if v := s.value(sel); v != "" {
		s.t.Fatalf("%s still holds %q after Ctrl+A and Backspace", sel, v)
	}
	s.keys(text)
	if v := s.value(sel); v != text {
		s.t.Fatalf("typed %q into %s, which holds %q", text, sel, v)
	}
}

// typeDateTime types the local time v ("2006-01-02T15:04:05") into the
// datetime-local field sel as a person does: a click on its first part,
// then the digits of each part in the order the browser's locale shows
// them (Chromium moves to the next part once one is full; Tab after the
// year), and A or P
// where the locale has a 12-hour clock.
func (s *session) typeDateTime(sel, v string) {
	s.t.Helper()
	at, err := parseLocal(v)
	if err != nil {
		s.t.Fatalf("typeDateTime %s: %v", sel, err)
	}
	var f struct {
		Order []string
		X, Y  float64
	}
	s.eval(fmt.Sprintf(`(() => {
		const el = document.querySelector(%s);
		el.scrollIntoView({block: 'center'});
		const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
		const parts = new Intl.DateTimeFormat(navigator.language, {year: 'numeric', month: '2-digit', day: '2-digit',
			hour: '2-digit', minute: '2-digit', second: '2-digit'}).formatToParts(new Date());
		return {Order: parts.filter((p) => p.type !== 'literal').map((p) => p.type),
			X: r.left + parseFloat(cs.borderLeftWidth) + parseFloat(cs.paddingLeft) + 3, Y: r.top + r.height / 2};
	})()`, js(sel)), &f)
	h12 := false
	for _, p := range f.Order {
		h12 = h12 || p == "dayPeriod"
	}
	var typed string
	for i, p := range f.Order {
		switch p {
		case "year":
			// A year can take six digits: Tab moves on after four.
			typed += fmt.Sprintf("%04d", at.Year())
			if i < len(f.Order)-1 {
				typed += kb.Tab
			}
		case "month":
			typed += fmt.Sprintf("%02d", int(at.Month()))
		case "day":
			typed += fmt.Sprintf("%02d", at.Day())
		case "hour":
			h := at.Hour()
			if h12 {
				if h %= 12; h == 0 {
					h = 12
				}
			}
			typed += fmt.Sprintf("%02d", h)
		case "minute":
			typed += fmt.Sprintf("%02d", at.Minute())
		case "second":
			typed += fmt.Sprintf("%02d", at.Second())
		case "dayPeriod":
			if at.Hour() < 12 {
				typed += "A"
			} else {
				typed += "P"
			}
		}
	}
	s.run("click the first part of "+sel, chromedp.MouseClickXY(f.X, f.Y))
	s.keys(typed)
	// Chromium leaves ":00" seconds out of the value: the times are compared.
	got := s.value(sel)
	if held, err := parseLocal(got); err != nil || !held.Equal(at) {
		s.t.Fatalf("typed %q (parts %v) into %s, which holds %q; want %q", typed, f.Order, sel, got, v)
	}
}

// parseLocal reads a datetime-local value, with or without its seconds.
func parseLocal(v string) (time.Time, error) {
	if at, err := time.Parse("2006-01-02T15:04:05", v); err == nil {
		return at, nil
	}
	return time.Parse("2006-01-02T15:04", v)
}
