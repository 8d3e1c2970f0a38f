package master

import (
	"fmt"
	"maps"
	"slices"

	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/remote/message"
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

// sealForLink returns d with the values of its secret env entries sealed
// for the master-worker link (secret.LinkContext): a frame read off the
// wire, without TLS, shows no secret. The worker opens them (it holds the
// cluster secret too). Without a box (no cluster secret) d goes as it is.
func sealForLink(box *secret.Box, d message.Dispatch) (message.Dispatch, error) {
	if box == nil || len(d.SecretEnv) == 0 {
		return d, nil
	}
	env := maps.Clone(d.Env) // the queued item is sent again on a retry
	ctx := secret.LinkContext(d.TaskInstanceID, d.Attempt)
	for _, k := range d.SecretEnv {
		v, ok := env[k]
		if !ok || v == "" {
			continue
		}
		sealed, err := box.SealFor(v, ctx)
		if err != nil {
			return d, fmt.Errorf("seal secret param %s for the link: %w", k, err)
		}
		env[k] = sealed
	}
	d.Env = env
	return d, nil
}
