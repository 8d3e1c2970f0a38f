package executor

import "github.com/beluga-scheduler/beluga/remote/message"

// secretValues is what the task's log must not show: the values of the
// env entries the dispatch names secret. The task itself gets them.
func secretValues(d message.Dispatch) []string {
	var out []string
	for _, k := range d.SecretEnv {
		if v, ok := d.Env[k]; ok && v != "" {
			out = append(out, v)
		}
	}
	return out
}
