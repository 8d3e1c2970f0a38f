package logging

import (
	"bytes"
	"encoding/json"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func TestFieldsInJSON(t *testing.T) {
	var buf bytes.Buffer
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&buf), zapcore.DebugLevel))
	log.Info("a", Task(7, 42, "p", "wf"))
	log.Info("b", Instance(7, "p", "wf"))
	dec := json.NewDecoder(&buf)
	for _, want := range []map[string]any{
		{"instance_id": 7.0, "task_id": 42.0, "project": "p", "workflow": "wf"},
		{"instance_id": 7.0, "project": "p", "workflow": "wf"},
	} {
		var got map[string]any
		if err := dec.Decode(&got); err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %v, want %v (line %v)", k, got[k], v, got)
			}
		}
		if _, has := got["task_id"]; has && want["task_id"] == nil {
			t.Errorf("an instance line has task_id: %v", got)
		}
	}
}
