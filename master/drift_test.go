package master

import (
	"strings"
	"testing"
)

// TestDriftAlerts: one alert per channel, keyed by project, workflow, the
// first drifted version and channel: the same drift planned again (a
// replayed event, another leader) has the same keys; another version or
// workflow another key. The text names the version, its editor and the
// version the schedules still run.
func TestDriftAlerts(t *testing.T) {
	a := driftAlertsOf("prod", "etl", 3, 2, "olga", []string{"ops", "mail"})
	again := driftAlertsOf("prod", "etl", 3, 2, "olga", []string{"ops"})
	later := driftAlertsOf("prod", "etl", 5, 4, "olga", []string{"ops"})
	other := driftAlertsOf("prod", "load", 3, 2, "olga", []string{"ops"})
	if len(a) != 2 || a[0].Channel != "ops" || a[1].Channel != "mail" || a[0].Key == a[1].Key {
		t.Fatalf("alerts: %+v", a)
	}
	if again[0].Key != a[0].Key || later[0].Key == a[0].Key || other[0].Key == a[0].Key {
		t.Fatalf("keys: %s %s %s %s", a[0].Key, again[0].Key, later[0].Key, other[0].Key)
	}
	for _, want := range []string{"prod/etl", "version 3", "olga", "promoted version 2"} {
		if !strings.Contains(a[0].Message, want) {
			t.Errorf("message %q lacks %q", a[0].Message, want)
		}
	}
	if a[0].Kind != AlertDrift || a[0].Workflow != "etl" || a[0].Project != "prod" {
		t.Fatalf("alert: %+v", a[0])
	}
	if s := driftAlertsOf("prod", "etl", 3, 2, "", []string{"ops"}); !strings.Contains(s[0].Message, "by the server") {
		t.Fatalf("no editor: %q", s[0].Message)
	}
	if none := driftAlertsOf("prod", "etl", 3, 2, "olga", nil); len(none) != 0 {
		t.Fatalf("no channel: %+v", none)
	}
}
