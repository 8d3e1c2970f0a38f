package api

import (
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestOpenAPIMatchesRoutes fails when a route is missing from openapi.yaml
// or the document describes one that is not routed.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	var doc struct {
		OpenAPI    string                    `yaml:"openapi"`
		Paths      map[string]map[string]any `yaml:"paths"`
		Components struct {
			Schemas    map[string]any `yaml:"schemas"`
			Responses  map[string]any `yaml:"responses"`
			Parameters map[string]any `yaml:"parameters"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	methods := map[string]bool{"get": true, "put": true, "post": true, "delete": true, "patch": true, "head": true, "options": true}
	var documented []string
	for path, item := range doc.Paths {
		for m, op := range item {
			if !methods[m] {
				continue // path-level parameters, summary...
			}
			documented = append(documented, strings.ToUpper(m)+" "+path)
			if o, _ := op.(map[string]any); o["responses"] == nil {
				t.Errorf("%s %s has no responses", m, path)
			}
		}
	}
	var routed []string
	for _, r := range routes {
		routed = append(routed, r.method+" "+r.pattern)
	}
	slices.Sort(documented)
	slices.Sort(routed)
	for _, r := range routed {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not in openapi.yaml", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routed, d) {
			t.Errorf("openapi.yaml describes %s, which is not routed", d)
		}
	}

	// Every $ref points at something defined.
	var all any
	if err := yaml.Unmarshal(openAPIDoc, &all); err != nil {
		t.Fatal(err)
	}
	sections := map[string]map[string]any{
		"#/components/schemas/":    doc.Components.Schemas,
		"#/components/responses/":  doc.Components.Responses,
		"#/components/parameters/": doc.Components.Parameters,
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "$ref" {
					ref, _ := x.(string)
					ok := false
					for prefix, defs := range sections {
						if name, found := strings.CutPrefix(ref, prefix); found {
							_, ok = defs[name]
						}
					}
					if !ok {
						t.Errorf("dangling $ref %q", ref)
					}
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(all)
}
