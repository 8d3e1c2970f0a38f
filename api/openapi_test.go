package api

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/plan"
	"github.com/beluga-scheduler/beluga/common/specdiff"
	"github.com/beluga-scheduler/beluga/common/tasktype"
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

// TestOpenAPISchemasMatchTypes fails when a wire type has a JSON field its
// schema in openapi.yaml does not describe, or the schema describes one the
// type does not have.
func TestOpenAPISchemasMatchTypes(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas map[string]schemaDoc `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	for name, v := range map[string]any{
		"CreateProjectRequest": CreateProjectRequest{}, "Project": Project{}, "ApplyResult": ApplyResult{},
		"Workflow": Workflow{}, "RunRequest": RunRequest{}, "Instance": Instance{}, "InstanceDetail": InstanceDetail{},
		"HistoryEntry": HistoryEntry{}, "ActionAccepted": ActionAccepted{}, "CreateTaskGroupRequest": CreateTaskGroupRequest{},
		"ResizeTaskGroupRequest": ResizeTaskGroupRequest{}, "TaskGroup": TaskGroup{}, "InstanceList": InstanceList{},
		"TaskInstanceList": TaskInstanceList{}, "ListedTask": ListedTask{},
		"TaskInstance": TaskInstance{}, "Output": Output{}, "ScheduleRequest": ScheduleRequest{}, "Schedule": Schedule{}, "Health": Health{},
		"BackfillRequest": BackfillRequest{}, "Backfill": Backfill{}, "BackfillProgress": BackfillProgress{},
		"BackfillActionRequest": ActionRequest{}, "InstanceActionRequest": InstanceActionRequest{}, "TaskActionRequest": ActionRequest{},
		"DatasourceRequest": DatasourceRequest{}, "Datasource": Datasource{}, "DatasourceTest": DatasourceTest{},
		"LoginRequest": LoginRequest{}, "LoginResponse": LoginResponse{}, "Me": Me{}, "PasswordChange": PasswordChange{},
		"TokenRequest": TokenRequest{}, "Token": Token{}, "NewToken": NewToken{}, "User": User{},
		"CreateUserRequest": CreateUserRequest{}, "UpdateUserRequest": UpdateUserRequest{}, "Grant": Grant{},
		"GrantRequest": GrantRequest{}, "AuditEntry": AuditEntry{}, "SettingValue": SettingValue{}, "SettingRequest": SettingRequest{},
		"TaskType": TaskType{}, "TaskTypeField": tasktype.Field{},
		"RetentionPolicy": model.RetentionPolicy{}, "RetentionDefault": RetentionDefault{}, "RetentionDefaultRequest": RetentionDefaultRequest{},
		"ProjectRetention": ProjectRetention{}, "ProjectRetentionRequest": ProjectRetentionRequest{}, "RetentionPlan": RetentionPlan{},
		"AuditRetention": AuditRetention{}, "RetentionRunRequest": RetentionRunRequest{}, "RetentionRun": RetentionRun{},
		"GitBindingRequest": GitBindingRequest{}, "GitBinding": GitBinding{}, "GitSyncResult": GitSyncResult{},
		"TriggerRequest": TriggerRequest{}, "TriggerUpdateRequest": TriggerUpdateRequest{}, "Trigger": Trigger{},
		"NewTrigger": NewTrigger{}, "TriggerDelivery": TriggerDelivery{},
		"PlanRequest": PlanRequest{}, "Plan": Plan{}, "PlannedInstance": plan.Planned{}, "PlannedTask": plan.PlannedTask{},
		"PlanConflict": plan.Conflict{}, "PlanStart": plan.Start{}, "PlanEmit": plan.Emit{}, "PlanDecision": plan.Decision{}, "RunPlanRequest": RunPlanRequest{}, "BackfillPlanRequest": BackfillPlanRequest{},
		"ScheduleFire": ScheduleFire{}, "FireList": FireList{}, "CompensateRequest": CompensateRequest{}, "CompensateResult": CompensateResult{},
		"Compensation": Compensation{},
		"VersionDiff":  VersionDiff{}, "VersionRef": VersionRef{},
		"DatasetList": DatasetList{}, "Dataset": Dataset{}, "DatasetDetail": DatasetDetail{}, "DatasetProducer": DatasetProducer{},
		"DatasetConsumer": DatasetConsumer{}, "DatasetPartition": DatasetPartition{}, "DatasetEvent": DatasetEvent{},
		"DatasetFire": DatasetFire{}, "DatasetFireList": DatasetFireList{}, "DatasetInput": DatasetInput{}, "RunDatasets": RunDatasets{},
		"DatasetEventRequest": DatasetEventRequest{}, "DatasetEventResult": DatasetEventResult{},
		"PromotionGateRequest": PromotionGateRequest{}, "PromotionGate": PromotionGate{}, "Drift": Drift{},
		"PromoteRequest": PromoteRequest{}, "ReviewRequest": ReviewRequest{}, "ChangeRequest": ChangeRequest{},
		"ChangeRequestList": ChangeRequestList{}, "SpecDiff": specdiff.Diff{},
	} {
		s, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("schema %s is not in openapi.yaml", name)
			continue
		}
		documented := s.props(doc.Components.Schemas)
		fields := jsonFields(reflect.TypeOf(v))
		for _, f := range fields {
			if !documented[f] {
				t.Errorf("schema %s lacks property %q of the wire type", name, f)
			}
		}
		for p := range documented {
			if !slices.Contains(fields, p) {
				t.Errorf("schema %s describes %q, which the wire type does not have", name, p)
			}
		}
	}
}

type schemaDoc struct {
	Properties map[string]any `yaml:"properties"`
	AllOf      []struct {
		Ref        string         `yaml:"$ref"`
		Properties map[string]any `yaml:"properties"`
	} `yaml:"allOf"`
}

// props is the set of property names of s, following allOf references.
func (s schemaDoc) props(all map[string]schemaDoc) map[string]bool {
	out := map[string]bool{}
	for p := range s.Properties {
		out[p] = true
	}
	for _, part := range s.AllOf {
		for p := range part.Properties {
			out[p] = true
		}
		if ref, ok := strings.CutPrefix(part.Ref, "#/components/schemas/"); ok {
			for p := range all[ref].props(all) {
				out[p] = true
			}
		}
	}
	return out
}

// jsonFields lists the JSON names of a struct's fields, embedded ones inlined.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}
