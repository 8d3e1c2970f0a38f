package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// jsonShape is what checkJSON knows about a JSON value: the fields of an
// object (nil: any keys), the shape of a list's elements, or a duration.
type jsonShape struct {
	what     string
	fields   map[string]*jsonShape
	elem     *jsonShape
	duration bool
}

var workflowShape = shapeOf(reflect.TypeFor[Workflow](), "the workflow")

// shapeOf derives the shape from the json tags so it follows types.go.
func shapeOf(t reflect.Type, what string) *jsonShape {
	switch {
	case t == reflect.TypeFor[Duration]():
		return &jsonShape{duration: true}
	case t.Kind() == reflect.Struct:
		s := &jsonShape{what: what, fields: map[string]*jsonShape{}}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			s.fields[name] = shapeOf(f.Type, "a task")
		}
		return s
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		return &jsonShape{elem: shapeOf(t.Elem(), "a task")}
	}
	return nil
}

// checkJSON walks a JSON document token by token and reports, each with its
// line: syntax errors, duplicate keys, unknown fields (exact case: the
// decoder would accept "Name" for "name"), bad durations and data after the
// object. It stops at the first syntax error and after maxProblems others.
func checkJSON(data []byte) []string {
	c := &jsonChecker{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	c.dec.UseNumber() // numbers are only skipped here; avoid float parsing
	err := c.value(workflowShape, nil)
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

// describe gives a syntax error a line.
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

// jsonPath locates a value, e.g. tasks[2].timeout. It is a linked list built
// as the walk descends and only turned into text for a problem, which keeps
// the walk of a large spec from concatenating a string per key.
type jsonPath struct {
	parent *jsonPath
	key    string
	index  int
	inList bool // index, not key, names this step
}

func (p *jsonPath) String() string {
	if p == nil {
		return ""
	}
	if p.inList {
		return fmt.Sprintf("%s[%d]", p.parent, p.index)
	}
	if p.parent == nil {
		return p.key
	}
	return p.parent.String() + "." + p.key
}

// value reads one value at path; shape may be nil (anything goes). Only
// syntax errors are returned; other problems are collected.
func (c *jsonChecker) value(shape *jsonShape, path *jsonPath) error {
	tok, err := c.dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		return c.object(shape, path)
	case json.Delim('['):
		var elem *jsonShape
		if shape != nil {
			elem = shape.elem
		}
		for i := 0; c.dec.More(); i++ {
			if err := c.value(elem, &jsonPath{parent: path, index: i, inList: true}); err != nil {
				return err
			}
		}
		_, err := c.dec.Token() // ']'
		return err
	}
	if shape != nil && shape.duration {
		s, ok := tok.(string)
		if !ok {
			c.addf("%s: duration must be a string such as \"30s\" or \"2h\"", path)
		} else if err := new(Duration).set(s); err != nil {
			c.addf("%s: %v", path, err)
		}
	}
	return nil
}

func (c *jsonChecker) object(shape *jsonShape, path *jsonPath) error {
	seen := map[string]bool{}
	for c.dec.More() {
		tok, err := c.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string) // the decoder guarantees a string key here
		child := &jsonPath{parent: path, key: key}
		if seen[key] {
			c.addf("%s: field appears twice", child)
		}
		seen[key] = true
		var next *jsonShape
		if shape != nil && shape.fields != nil {
			f, known := shape.fields[key]
			if !known {
				c.addf("unknown field %q in %s%s", key, shape.what, c.hint(shape, key, path))
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

// hint names the task the field sits in and a field that differs only in case.
func (c *jsonChecker) hint(shape *jsonShape, key string, path *jsonPath) string {
	var b strings.Builder
	if path != nil {
		fmt.Fprintf(&b, " (%s)", path)
	}
	for f := range shape.fields {
		if strings.EqualFold(f, key) {
			fmt.Fprintf(&b, "; did you mean %q?", f)
		}
	}
	return b.String()
}
