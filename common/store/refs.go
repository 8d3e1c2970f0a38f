package store

import (
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// ErrBadRef marks a workflow whose tasks name a workflow that does not
// exist, or whose sub_workflows lead back to itself.
var ErrBadRef = errors.New("bad workflow reference")

// wfRef is a workflow by project and name.
type wfRef struct{ project, workflow string }

func (r wfRef) String() string { return r.project + "/" + r.workflow }

// specRefs are the workflows w's tasks name (tasktype.Def.Refs), the
// project defaulted to own.
func specRefs(own string, w *spec.Workflow) ([]tasktype.Ref, error) {
	var out []tasktype.Ref
	for i := range w.Tasks {
		t := &w.Tasks[i]
		def, ok := tasktype.Lookup(t.Type)
		if !ok || def.Refs == nil {
			continue
		}
		s, problems := def.Decode(t.TypeFields())
		if len(problems) > 0 {
			return nil, fmt.Errorf("task %s: %s", t.Name, strings.Join(problems, "; "))
		}
		for _, r := range def.Refs(s) {
			if r.Project == "" {
				r.Project = own
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// checkRefs refuses w, applied in project own, when a workflow its tasks
// name does not exist, or when following sub_workflows (each to its pinned
// version, else its latest) reaches w again; the error names the cycle.
func checkRefs(tx *gorm.DB, own string, w *spec.Workflow) error {
	refs, err := specRefs(own, w)
	if err != nil || len(refs) == 0 {
		return err
	}
	self := wfRef{own, w.Name}
	var missing []string
	for _, r := range refs {
		if (wfRef{r.Project, r.Workflow}) == self {
			continue
		}
		if _, err := refSpec(tx, r); err != nil {
			missing = append(missing, fmt.Sprintf("%q", r.Project+"/"+r.Workflow))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("workflow %s does not exist; apply it first: %w", joinMax(missing, 10), ErrBadRef)
	}
	// Depth-first over child edges; path is the chain from w.
	seen := map[wfRef]bool{}
	var walk func(path []wfRef, refs []tasktype.Ref) error
	walk = func(path []wfRef, refs []tasktype.Ref) error {
		for _, r := range refs {
			if !r.Child {
				continue
			}
			next := wfRef{r.Project, r.Workflow}
			chain := append(append([]wfRef{}, path...), next)
			if next == self {
				names := make([]string, len(chain))
				for i, c := range chain {
					names[i] = c.String()
				}
				return fmt.Errorf("sub_workflow recursion: %s: %w", strings.Join(names, " -> "), ErrBadRef)
			}
			if seen[next] {
				continue
			}
			seen[next] = true
			child, err := refSpec(tx, r)
			if err != nil {
				continue // checked above; a deeper one vanished: not this apply's problem
			}
			sub, err := specRefs(next.project, child)
			if err != nil {
				continue
			}
			if err := walk(chain, sub); err != nil {
				return err
			}
		}
		return nil
	}
	return walk([]wfRef{self}, refs)
}

// refSpec reads the version of a referenced workflow it names (latest: 0).
func refSpec(tx *gorm.DB, r tasktype.Ref) (*spec.Workflow, error) {
	p, err := getProject(tx, r.Project)
	if err != nil {
		return nil, err
	}
	q := tx.Where("project_id = ? AND name = ?", p.ID, r.Workflow)
	if r.Version > 0 {
		q = q.Where("version = ?", r.Version)
	}
	var d workflowDefinitionRow
	if err := q.Order("version DESC").Take(&d).Error; err != nil {
		return nil, notFound(err, "workflow "+r.Project+"/"+r.Workflow)
	}
	return spec.ParseStored([]byte(d.SpecJSON))
}
