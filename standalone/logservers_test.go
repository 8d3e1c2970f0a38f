package standalone

import (
	"fmt"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
)

func TestLogServers(t *testing.T) {
	w := func(addr, dir string) registry.Node {
		return registry.Node{Role: registry.RoleWorker, Addr: addr, LogDir: dir}
	}
	task := model.TaskInstance{Host: "10.0.0.1:7000", LogPath: "/data/a/worker/logs/wf/1.log"}
	for _, c := range []struct {
		name    string
		task    model.TaskInstance
		workers []registry.Node
		want    string
	}{
		{"no live worker: the recorded address", task, nil, "[10.0.0.1:7000]"},
		{"the same worker", task, []registry.Node{w("10.0.0.1:7000", "/data/a/worker/logs")}, "[10.0.0.1:7000]"},
		{"restarted on another port", task, []registry.Node{w("10.0.0.1:7001", "/data/a/worker/logs")}, "[10.0.0.1:7001 10.0.0.1:7000]"},
		{"another data dir on the old port", task,
			[]registry.Node{w("10.0.0.1:7000", "/data/b/worker/logs"), w("10.0.0.1:7002", "/data/a/worker/logs")}, "[10.0.0.1:7002 10.0.0.1:7000]"},
		{"same dir on another host", task, []registry.Node{w("10.0.0.2:7000", "/data/a/worker/logs")}, "[10.0.0.1:7000]"},
		{"a prefix that is not the dir", task, []registry.Node{w("10.0.0.1:7003", "/data/a/worker/lo")}, "[10.0.0.1:7000]"},
		{"worker without a log dir", task, []registry.Node{w("10.0.0.1:7004", "")}, "[10.0.0.1:7000]"},
		{"no log path recorded", model.TaskInstance{Host: "10.0.0.1:7000"}, []registry.Node{w("10.0.0.1:7001", "/data/a/worker/logs")}, "[10.0.0.1:7000]"},
	} {
		if got := fmt.Sprint(logServers(c.task, c.workers)); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}
