package api

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/spec"
)

// Secret params: requests may name some of their params in secret_params;
// the store keeps those sealed and every answer shows them as secret.Mask.

// checkSecretParams names what is wrong with a request's secret_params
// (field) for its params ps, and with any param value that poses as a
// sealed one: the master would try to open it.
func checkSecretParams(field string, names []string, ps map[string]string) []string {
	var bad []string
	for i, n := range names {
		switch _, ok := ps[n]; {
		case slices.Contains(names[:i], n):
			bad = append(bad, fmt.Sprintf("%s lists %q twice", field, n))
		case !ok:
			bad = append(bad, fmt.Sprintf("%s names %q, which is not one of the params", field, n))
		}
	}
	return append(bad, checkNotSealed("params", ps)...)
}

// checkNotSealed refuses values that begin as a sealed value does.
func checkNotSealed(field string, ps map[string]string) []string {
	var keys []string
	for k, v := range ps {
		if secret.IsSealed(v) {
			keys = append(keys, strconv.Quote(k))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	return []string{fmt.Sprintf("%s: %s: a value may not begin with %q (reserved for sealed secrets)", field, strings.Join(keys, ", "), secret.Prefix)}
}

// checkSpecNotSealed is checkNotSealed over every params map of a spec.
func checkSpecNotSealed(w *spec.Workflow) []string {
	bad := checkNotSealed("workflow params", w.Params)
	for _, t := range w.Tasks {
		bad = append(bad, checkNotSealed(fmt.Sprintf("task %q params", t.Name), t.Params)...)
	}
	return bad
}

// maskedParams is ps as answers show it, with the names of its secret
// params, sorted.
func maskedParams(ps map[string]string) (map[string]string, []string) {
	var names []string
	for k, v := range ps {
		if secret.IsSealed(v) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	out := secret.MaskMap(ps)
	if out == nil {
		out = map[string]string{}
	}
	return out, names
}
