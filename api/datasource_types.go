package api

import "github.com/beluga-scheduler/beluga/common/model"

// DatasourceRequest is the body of PUT /api/v1/datasources/{name}. A
// password left out keeps the stored one (GET never shows it, so a client
// that edits what it read would otherwise erase it); "" removes it.
type DatasourceRequest struct {
	Type     string            `json:"type"`
	Host     string            `json:"host,omitempty"`
	Port     int               `json:"port,omitempty"`
	Database string            `json:"database,omitempty"`
	User     string            `json:"user,omitempty"`
	Password *string           `json:"password,omitempty"`
	Params   map[string]string `json:"params,omitempty"`
	// Projects are the projects whose workflows may use the datasource
	// (docs/security.md, section 4); left out keeps the stored ones.
	Projects *[]string `json:"projects,omitempty"`
}

// Datasource is a stored datasource without its password.
type Datasource struct {
	Name        string            `json:"name"`
	Type        string            `json:"type"`
	Host        string            `json:"host"`
	Port        int               `json:"port"`
	Database    string            `json:"database"`
	User        string            `json:"user"`
	PasswordSet bool              `json:"password_set"`
	Params      map[string]string `json:"params"`
	// UsedBy lists "project/workflow" of the workflows whose latest version
	// has a task on it (DELETE is refused while it is not empty).
	UsedBy []string `json:"used_by"`
	// Projects are the projects it is granted to; none: admins' workflows only.
	Projects  []string `json:"projects"`
	CreatedAt Time     `json:"created_at"`
	UpdatedAt Time     `json:"updated_at"`
}

// DatasourceTest is the answer of POST /api/v1/datasources/{name}/test:
// whether this API server could connect and run SELECT 1, and if not the
// driver's error (without the password).
type DatasourceTest struct {
	OK        bool   `json:"ok"`
	Error     string `json:"error,omitempty"`
	ElapsedMs int64  `json:"elapsed_ms"`
}

func fromDatasource(d model.Datasource, usedBy, projects []string) Datasource {
	if projects == nil {
		projects = []string{}
	}
	if usedBy == nil {
		usedBy = []string{}
	}
	params := d.Params
	if params == nil {
		params = map[string]string{}
	}
	return Datasource{Name: d.Name, Type: d.Type, Host: d.Host, Port: d.Port, Database: d.Database, User: d.User,
		PasswordSet: d.PasswordSealed != "", Params: params, UsedBy: usedBy, Projects: projects,
		CreatedAt: timeOf(d.CreatedAt), UpdatedAt: timeOf(d.UpdatedAt)}
}
