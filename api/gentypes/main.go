// Command gentypes writes what clients know of the task types from the
// task-type registry: the type-dependent properties of the TaskSpec schema
// in api/openapi.yaml (between its generated markers) and the web UI's
// web/src/tasktypes.gen.ts (the palette, its help and each type's fields).
// Run by go generate ./api; TestGeneratedFilesMatchRegistry fails when
// either file has drifted from the registry.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/tasks/builtin"
)

// The generated part of openapi.yaml lies between these lines.
const (
	beginMarker = "        # BEGIN task types: generated from the task-type registry by go generate ./api; do not edit\n"
	endMarker   = "        # END task types\n"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	builtin.Register()
	if err := write(root, tasktype.Describe()); err != nil {
		fmt.Fprintln(os.Stderr, "gentypes:", err)
		os.Exit(1)
	}
}

// Paths of the generated files, relative to the api directory (where go
// generate runs).
const (
	openAPIPath = "openapi.yaml"
	uiPath      = "../web/src/tasktypes.gen.ts"
)

func write(apiDir string, types []tasktype.Info) error {
	doc, err := os.ReadFile(filepath.Join(apiDir, openAPIPath))
	if err != nil {
		return err
	}
	spliced, err := splice(string(doc), openAPIBlock(types))
	if err != nil {
		return fmt.Errorf("%s: %w", openAPIPath, err)
	}
	if err := os.WriteFile(filepath.Join(apiDir, openAPIPath), []byte(spliced), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(apiDir, uiPath), []byte(uiFile(types)), 0o644)
}

// splice replaces what lies between the markers of doc with block.
func splice(doc, block string) (string, error) {
	i := strings.Index(doc, beginMarker)
	j := strings.Index(doc, endMarker)
	if i < 0 || j < i {
		return "", errors.New("the generated task-type markers are missing or out of order")
	}
	return doc[:i+len(beginMarker)] + block + doc[j:], nil
}

// openAPIBlock is the TaskSpec properties that depend on the types: type
// (an enum of every registered name) and the union of the types' fields,
// each saying which types take it.
func openAPIBlock(types []tasktype.Info) string {
	var b strings.Builder
	names := make([]string, len(types))
	var help []string
	for i, t := range types {
		names[i] = t.Name
		help = append(help, fmt.Sprintf("%s (%s)", t.Name, t.Summary))
	}
	fmt.Fprintf(&b, "        type:\n          type: string\n          enum: [%s]\n          default: shell\n", strings.Join(names, ", "))
	fmt.Fprintf(&b, "          description: %s\n", quote("The task's type: "+strings.Join(help, "; ")))
	type union struct {
		field tasktype.Field
		of    []string
		mixed bool // types disagree on its JSON type
	}
	var order []string
	fields := map[string]*union{}
	for _, t := range types {
		for _, f := range t.Fields {
			u, ok := fields[f.Name]
			if !ok {
				u = &union{field: f}
				fields[f.Name] = u
				order = append(order, f.Name)
			} else if u.field != f {
				u.mixed = true
			}
			u.of = append(u.of, t.Name)
		}
	}
	slices.Sort(order)
	for _, name := range order {
		u := fields[name]
		fmt.Fprintf(&b, "        %s:\n", name)
		if !u.mixed && u.field.Type != "" {
			fmt.Fprintf(&b, "          type: %s\n", u.field.Type)
			if u.field.Type == "array" {
				if u.field.Items != "" {
					fmt.Fprintf(&b, "          items: { type: %s }\n", u.field.Items)
				} else {
					b.WriteString("          items: {}\n")
				}
			}
		}
		fmt.Fprintf(&b, "          description: %s\n", quote("A field of type "+strings.Join(u.of, ", ")))
	}
	return b.String()
}

func quote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// uiFile is web/src/tasktypes.gen.ts.
func uiFile(types []tasktype.Info) string {
	var b bytes.Buffer
	b.WriteString("// Generated from the task-type registry by go generate ./api (api/gentypes): do not edit.\n")
	b.WriteString("// The palette, its help and each type's fields, as GET /api/v1/task-types serves them.\n\n")
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = quote(t.Name)
	}
	fmt.Fprintf(&b, "export const TASK_TYPES = [%s] as const;\n", strings.Join(names, ", "))
	b.WriteString("export type TaskType = (typeof TASK_TYPES)[number];\n\n")
	b.WriteString("export interface TaskTypeField {name: string; type?: string; items?: string}\n\n")
	b.WriteString("export const TYPE_HELP: Record<TaskType, string> = {\n")
	for _, t := range types {
		fmt.Fprintf(&b, "  %s: %s,\n", quote(t.Name), quote(t.Summary))
	}
	b.WriteString("};\n\n")
	b.WriteString("export const TYPE_PLACEMENT: Record<TaskType, 'worker' | 'master'> = {\n")
	for _, t := range types {
		fmt.Fprintf(&b, "  %s: %s,\n", quote(t.Name), quote(string(t.Placement)))
	}
	b.WriteString("};\n\n")
	b.WriteString("export const TYPE_FIELDS: Record<TaskType, TaskTypeField[]> = {\n")
	for _, t := range types {
		fs, _ := json.Marshal(t.Fields)
		fmt.Fprintf(&b, "  %s: %s,\n", quote(t.Name), fs)
	}
	b.WriteString("};\n")
	return b.String()
}
