package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/tasks/builtin"
)

// The checked-in OpenAPI document and UI file are what the registry
// generates: a type registered (or a field added) without go generate
// ./api fails here.
func TestGeneratedFilesMatchRegistry(t *testing.T) {
	builtin.Register()
	types := tasktype.Describe()
	doc, err := os.ReadFile(filepath.Join("..", openAPIPath))
	if err != nil {
		t.Fatal(err)
	}
	want, err := splice(string(doc), openAPIBlock(types))
	if err != nil {
		t.Fatal(err)
	}
	if string(doc) != want {
		t.Errorf("api/openapi.yaml's task types differ from the registry: run go generate ./api")
	}
	ui, err := os.ReadFile(filepath.Join("..", uiPath))
	if err != nil {
		t.Fatal(err)
	}
	if string(ui) != uiFile(types) {
		t.Errorf("web/src/tasktypes.gen.ts differs from the registry: run go generate ./api")
	}
}

// A type registered beside the shipped ones appears in all three places
// the registry feeds: the OpenAPI type enum with its fields, and the UI's
// palette with its fields (the API's list is Describe itself).
func TestNewTypeReachesEveryEdge(t *testing.T) {
	types := append(tasktype.Describe(), tasktype.Info{Name: "kafka", Summary: "a message to a topic", Placement: tasktype.Worker,
		Fields: []tasktype.Field{{Name: "topic", Type: "string"}, {Name: "partitions", Type: "array", Items: "integer"}}})
	block := openAPIBlock(types)
	for _, want := range []string{"kafka]", "        topic:\n          type: string\n", "        partitions:\n          type: array\n          items: { type: integer }\n"} {
		if !strings.Contains(block, want) {
			t.Errorf("openapi block lacks %q:\n%s", want, block)
		}
	}
	ui := uiFile(types)
	for _, want := range []string{`"kafka"] as const`, `"kafka": "a message to a topic"`, `"kafka": [{"name":"topic","type":"string"}`} {
		if !strings.Contains(ui, want) {
			t.Errorf("UI file lacks %q:\n%s", want, ui)
		}
	}
}

// A document without the markers is refused, not rewritten.
func TestSpliceNeedsMarkers(t *testing.T) {
	if _, err := splice("openapi: 3.0.3\n", "x"); err == nil {
		t.Fatal("spliced a document without markers")
	}
	if _, err := splice(endMarker+beginMarker, "x"); err == nil {
		t.Fatal("spliced markers out of order")
	}
}
