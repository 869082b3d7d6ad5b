package oapi

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The override of oapi-codegen's chi-middleware template (config.yaml's
// user-templates) is upstream's, of the version go.mod names, with one
// change: each request's query is parsed once, not once per parameter. An
// upgrade of oapi-codegen that changes the template fails here until the
// override is taken from the new one again.
func TestTemplateOverrideFollowsUpstream(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/oapi-codegen/oapi-codegen/v2").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	upstream, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "pkg/codegen/templates/chi/chi-middleware.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := os.ReadFile("chi-middleware.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	want := string(upstream)
	for _, c := range []struct{ old, new string }{
		{"    var params {{.OperationId}}Params\n", "    var params {{.OperationId}}Params\n    {{if .QueryParams}}\n" +
			"    // The query, parsed once (RealSync: the template this one overrides parses it again for every parameter).\n" +
			"    queryValues := r.URL.Query()\n    {{end}}\n"},
		{`r.URL.Query().Get("{{.ParamName}}")`, `queryValues.Get("{{.ParamName}}")`},
		{`"{{.ParamName}}", r.URL.Query(), &params`, `"{{.ParamName}}", queryValues, &params`},
	} {
		if strings.Count(want, c.old) != 1 {
			t.Fatalf("upstream's template has %d of %q, want 1: take the override from it again", strings.Count(want, c.old), c.old)
		}
		want = strings.Replace(want, c.old, c.new, 1)
	}
	if string(ours) != want {
		t.Errorf("chi-middleware.tmpl is not upstream's with the query parsed once")
	}
}
