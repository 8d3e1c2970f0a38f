package gitsync

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/beluga-scheduler/beluga/common/secret"
)

// DatasourceRef is a datasource file: a reference by name to a datasource
// stored in Beluga, with the connection facts the project expects of it.
// It never holds a password (the password stays in Beluga, sealed): a
// file with one is refused. A field left out is not checked.
type DatasourceRef struct {
	Type     string            `json:"type,omitempty"`
	Host     string            `json:"host,omitempty"`
	Port     int               `json:"port,omitempty"`
	Database string            `json:"database,omitempty"`
	User     string            `json:"user,omitempty"`
	Params   map[string]string `json:"params,omitempty"`
}

// TaskGroupRef is a task group file: a reference by name to a task group
// of Beluga, with the capacity the project expects (0: not checked).
type TaskGroupRef struct {
	Capacity    int    `json:"capacity,omitempty"`
	Description string `json:"description,omitempty"`
}

// ToJSON is a YAML (or JSON) file's single document as JSON, for a
// strict JSON decode of the request it stands for. An empty file is {}.
func ToJSON(data []byte) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return []byte("{}"), nil
		}
		return nil, fmt.Errorf("not valid YAML: %v", err)
	}
	var more any
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, errors.New("holds more than one YAML document; give one")
	}
	if v == nil {
		return []byte("{}"), nil
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("must be a mapping of fields")
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cannot be read as JSON: %v", err)
	}
	return out, nil
}

// decodeStrict decodes a file into v, refusing fields v does not have.
func decodeStrict(data []byte, v any) error {
	raw, err := ToJSON(data)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%v", err)
	}
	return nil
}

// ParseDatasource reads a datasource file. A field that names a secret
// (password, a params key that looks like one) is refused, naming the
// field and never its value: a datasource's password stays in Beluga.
func ParseDatasource(data []byte) (DatasourceRef, error) {
	raw, err := ToJSON(data)
	if err != nil {
		return DatasourceRef{}, err
	}
	var top map[string]any
	if err := json.Unmarshal(raw, &top); err != nil {
		return DatasourceRef{}, err
	}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if looksSecret(k) {
			return DatasourceRef{}, fmt.Errorf("field %q: a datasource file never holds a password or secret; it stays in Beluga (beluga datasource set), and the file names the datasource only", k)
		}
	}
	var d DatasourceRef
	if err := decodeStrict(data, &d); err != nil {
		return DatasourceRef{}, err
	}
	for _, k := range slices.Sorted(maps.Keys(d.Params)) {
		if looksSecret(k) {
			return DatasourceRef{}, fmt.Errorf("params %q looks like a secret: a datasource file never holds one; it stays in Beluga", k)
		}
	}
	if d.Port < 0 || d.Port > 65535 {
		return DatasourceRef{}, fmt.Errorf("port %d is not a port (1 to 65535)", d.Port)
	}
	return d, nil
}

// ParseTaskGroup reads a task group file.
func ParseTaskGroup(data []byte) (TaskGroupRef, error) {
	var g TaskGroupRef
	if err := decodeStrict(data, &g); err != nil {
		return TaskGroupRef{}, err
	}
	if g.Capacity < 0 {
		return TaskGroupRef{}, fmt.Errorf("capacity %d: give a positive number (or leave it out)", g.Capacity)
	}
	return g, nil
}

// ParamsInClear lists the params of where that would be in Git in clear
// (SecretsInClear's rule for one set of params).
func ParamsInClear(where string, params map[string]string, marked []string) []string {
	var bad []string
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		switch {
		case slices.Contains(marked, k):
			if v != "" && v != secret.Mask {
				bad = append(bad, fmt.Sprintf("%s param %q is secret but has a value in clear; write %q and set the value in Beluga", where, k, secret.Mask))
			}
		case v != "" && v != secret.Mask && looksSecret(k):
			bad = append(bad, fmt.Sprintf("%s param %q looks like a secret and has a value in clear; list it in secret_params, write %q and set the value in Beluga", where, k, secret.Mask))
		}
	}
	return bad
}

// MaskParams writes the mask for every value of params that is secret
// (marked, or named like one), so the file keeps the value in Beluga.
func MaskParams(params map[string]string, marked []string) {
	for k, v := range params {
		if v != "" && (slices.Contains(marked, k) || looksSecret(k)) {
			params[k] = secret.Mask
		}
	}
}

// YAMLOf is v (a request as JSON would send it) as a YAML file, in
// block style, its fields in v's order.
func YAMLOf(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(raw, &n); err != nil {
		return nil, err
	}
	blockStyle(&n)
	return yaml.Marshal(&n)
}

// KindFilePath is the file of a schedule (dir SchedulesDir, named after
// its workflow) or another kind under the binding's dir: its recorded
// origin when it came from Git, else <dir>/<sub>/<name>.yaml.
func KindFilePath(dir, sub, origin, name string) string {
	if origin != "" {
		return origin
	}
	return path.Join(cleanDir(dir), sub, name+".yaml")
}
