package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// checkJSON walks a JSON document token by token and reports, each with its
// line, what encoding/json reports without a position or not at all: syntax
// errors, duplicate keys, unknown fields (exact case: the decoder would take
// "Name" for "name"), bad durations, and data after the object. It stops at
// the first syntax error and after maxProblems others.
func checkJSON(data []byte) []string {
	c := &jsonChecker{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	c.dec.UseNumber() // numbers are only skipped here; spare the float parsing
	err := c.value(workflowShape(), nil)
	if err == nil {
		if _, err = c.dec.Token(); err == nil {
			err = fmt.Errorf("line %d: data after the JSON object", c.line())
		} else if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if err != nil {
		c.problems = append(c.problems, c.describe(err))
	}
	return c.problems
}

type jsonChecker struct {
	data     []byte
	dec      *json.Decoder
	problems []string
}

func (c *jsonChecker) line() int { return lineAt(c.data, c.dec.InputOffset()) }

func (c *jsonChecker) addf(format string, args ...any) {
	if len(c.problems) < maxProblems {
		c.problems = append(c.problems, fmt.Sprintf("line %d: ", c.line())+fmt.Sprintf(format, args...))
	}
}

// describe gives a syntax error its line.
func (c *jsonChecker) describe(err error) string {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("line %d: %s", lineAt(c.data, se.Offset), se.Error())
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "unexpected end of JSON input"
	}
	return err.Error()
}

// value reads one value; sh may be nil (anything goes). Only syntax errors
// are returned; other problems are collected.
func (c *jsonChecker) value(sh *shape, path *fieldPath) error {
	tok, err := c.dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		return c.object(sh, path)
	case json.Delim('['):
		var elem *shape
		if sh != nil {
			elem = sh.elem
		}
		for i := 0; c.dec.More(); i++ {
			if err := c.value(elem, path.item(i)); err != nil {
				return err
			}
		}
		_, err := c.dec.Token() // ']'
		return err
	}
	if sh != nil && sh.duration {
		s, ok := tok.(string)
		if !ok {
			c.addf("%s: duration must be a string such as \"30s\" or \"2h\"", path)
		} else if err := new(Duration).set(s); err != nil {
			c.addf("%s: %v", path, err)
		}
	}
	return nil
}

func (c *jsonChecker) object(sh *shape, path *fieldPath) error {
	seen := map[string]bool{}
	for c.dec.More() {
		tok, err := c.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string) // the decoder only returns a string here
		child := path.field(key)
		if seen[key] {
			c.addf("%s: field appears twice", child)
		}
		seen[key] = true
		var next *shape
		if sh != nil && sh.fields != nil {
			f, known := sh.fields[key]
			if !known {
				c.addf("%s", sh.unknownField(key, path))
			}
			next = f
		}
		if err := c.value(next, child); err != nil {
			return err
		}
	}
	_, err := c.dec.Token() // '}'
	return err
}
