package master

import (
	"fmt"
	"strings"

	"github.com/beluga-scheduler/beluga/common/dataset"
	"github.com/beluga-scheduler/beluga/common/params"
)

// produces resolves a task's produces entries with its params into the
// dataset@partition list its success records (store.ProducesParam): a
// ${param} the attempt lacks, or a partition that is no day or hour,
// fails the attempt with the reason before it runs.
func produces(entries []string, env map[string]string) (string, error) {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		v, err := params.Substitute(e, env, nil)
		if err != nil {
			return "", fmt.Errorf("produces %q: %w", e, err)
		}
		ref, err := dataset.ParseRef(v)
		if err != nil {
			return "", fmt.Errorf("produces %q: %w", e, err)
		}
		out = append(out, ref.String())
	}
	return strings.Join(out, ","), nil
}
