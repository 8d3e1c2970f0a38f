package master

import (
	"slices"

	"github.com/beluga-scheduler/beluga/common/secret"
)

// openedSecrets collects, while a dispatch's env is built, which entries
// are secret and whether one could not be opened.
type openedSecrets struct {
	names   []string // env names whose value is secret, in the order found
	problem string   // why a sealed value did not open; "" when all did
}

// open returns the value of param k as the task gets it: a sealed value
// opened with box, anything else as it is. A name once secret stays
// secret when a later level overrides it.
func (o *openedSecrets) open(box *secret.Box, k, v string) string {
	if !secret.IsSealed(v) {
		return v
	}
	if !slices.Contains(o.names, k) {
		o.names = append(o.names, k)
	}
	plain, err := box.Open(v)
	if err != nil {
		if o.problem == "" {
			o.problem = "secret param " + k + ": " + err.Error()
		}
		return ""
	}
	return plain
}
