// Package csharptests checks the C# SDK against openapi.yaml: every
// operation must be covered by a member of sdk/csharp/Runtime marked
// [Operation("METHOD", "/path", "operationId")], and every mark must name an
// operation that exists. A new route fails CI until the C# SDK has it.
// (The folder's "~" keeps Unity from importing these files.)
package csharptests

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// operation is one method + path of the API, with its operationId.
type operation struct{ Method, Path, ID string }

func (o operation) String() string { return o.Method + " " + o.Path + " (" + o.ID + ")" }

var httpMethods = map[string]bool{"get": true, "put": true, "post": true, "patch": true, "delete": true, "head": true, "options": true}

// specOperation is an operation of an OpenAPI document as the drift tests
// read it: its operationId and the $refs of its parameters.
type specOperation struct {
	OperationID string `yaml:"operationId"`
	Parameters  []struct {
		Ref string `yaml:"$ref"`
	} `yaml:"parameters"`
}

// eachOperation calls f with every operation of an OpenAPI document.
func eachOperation(t *testing.T, doc []byte, f func(method, path string, op specOperation)) {
	t.Helper()
	var spec struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(doc, &spec); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	for path, item := range spec.Paths {
		for method, node := range item {
			if !httpMethods[method] {
				continue
			}
			var op specOperation
			if err := node.Decode(&op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			f(method, path, op)
		}
	}
}

// specOperations reads the operations of an OpenAPI document.
func specOperations(t *testing.T, doc []byte) []operation {
	t.Helper()
	var ops []operation
	eachOperation(t, doc, func(method, path string, op specOperation) {
		ops = append(ops, operation{strings.ToUpper(method), path, op.OperationID})
	})
	return ops
}

var operationMark = regexp.MustCompile(`\[Operation\("([A-Z]+)",\s*"([^"]+)",\s*"([^"]+)"\)\]`)

// sdkOperations reads the [Operation(...)] marks of C# sources.
func sdkOperations(sources map[string]string) []operation {
	var ops []operation
	for _, src := range sources {
		for _, m := range operationMark.FindAllStringSubmatch(src, -1) {
			ops = append(ops, operation{m[1], m[2], m[3]})
		}
	}
	return ops
}

// drift lists the operations the SDK lacks and the marks naming none.
func drift(spec, sdk []operation) (missing, stale []string) {
	have := map[operation]bool{}
	for _, o := range sdk {
		have[o] = true
	}
	want := map[operation]bool{}
	for _, o := range spec {
		want[o] = true
		if !have[o] {
			missing = append(missing, o.String())
		}
	}
	for _, o := range sdk {
		if !want[o] {
			stale = append(stale, o.String())
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	return missing, stale
}

func TestCSharpSDKCoversEveryOperation(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("..", "Runtime", "*.cs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no C# sources in ../Runtime (%v)", err)
	}
	sources := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sources[f] = string(b)
	}
	spec := specOperations(t, doc)
	if len(spec) < 20 {
		t.Fatalf("read only %d operations from openapi.yaml", len(spec))
	}
	missing, stale := drift(spec, sdkOperations(sources))
	for _, m := range missing {
		t.Errorf("the C# SDK (sdk/csharp/Runtime) has no member marked [Operation] for %s: add one", m)
	}
	for _, s := range stale {
		t.Errorf("sdk/csharp/Runtime marks [Operation] %s, which openapi.yaml does not have", s)
	}
	t.Logf("%d operations of openapi.yaml, all covered by the C# SDK", len(spec))
}

func TestDriftFindsChanges(t *testing.T) {
	doc := []byte(`
paths:
  /v1/a:
    parameters: []
    get: {operationId: getA}
    post: {operationId: makeA}
  /v1/b/{id}:
    delete: {operationId: dropB}
`)
	spec := specOperations(t, doc)
	src := map[string]string{"x.cs": `
        [Operation("GET", "/v1/a", "getA")]
        public Task A() {}
        [Operation("DELETE", "/v1/b/{id}", "dropB")]
        [Operation("PUT", "/v1/old", "oldOne")]
        public Task B() {}`}
	tests := []struct {
		name                 string
		spec, sdk            []operation
		wantMissing, wantOld string
	}{
		{"a new route is missing", spec, sdkOperations(src), "POST /v1/a (makeA)", "PUT /v1/old (oldOne)"},
		{"all covered", spec[:0], nil, "", ""},
		{"a renamed operationId counts as both", []operation{{"GET", "/v1/a", "readA"}}, []operation{{"GET", "/v1/a", "getA"}},
			"GET /v1/a (readA)", "GET /v1/a (getA)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			missing, stale := drift(tt.spec, tt.sdk)
			if got := strings.Join(missing, ";"); got != tt.wantMissing {
				t.Errorf("missing = %q, want %q", got, tt.wantMissing)
			}
			if got := strings.Join(stale, ";"); got != tt.wantOld {
				t.Errorf("stale = %q, want %q", got, tt.wantOld)
			}
		})
	}
}

// keyedOperations reads the operationIds of an OpenAPI document's
// operations that take the IdempotencyKey parameter.
func keyedOperations(t *testing.T, doc []byte) []string {
	t.Helper()
	var ids []string
	eachOperation(t, doc, func(_, _ string, op specOperation) {
		for _, p := range op.Parameters {
			if strings.HasSuffix(p.Ref, "/IdempotencyKey") {
				ids = append(ids, op.OperationID)
			}
		}
	})
	sort.Strings(ids)
	return ids
}

// unkeyed lists the keyed operations whose C# method (the one marked
// [Operation] with its operationId) has no overload taking a string
// idempotencyKey.
func unkeyed(keyed []string, src string) []string {
	var out []string
	for _, id := range keyed {
		m := regexp.MustCompile(`\[Operation\("[A-Z]+",\s*"[^"]+",\s*"` + regexp.QuoteMeta(id) + `"\)\]\s*(?:\[Operation[^\]]*\]\s*)*public [^(]*?\b(\w+)\(`).FindStringSubmatch(src)
		if m == nil {
			out = append(out, id+" (no method marked with it)")
			continue
		}
		if !regexp.MustCompile(`public [^(]*\b` + m[1] + `\([^)]*\bstring idempotencyKey\b`).MatchString(src) {
			out = append(out, id+" ("+m[1]+")")
		}
	}
	return out
}

// A route that honours an Idempotency-Key is one a game retries after a
// timeout: the SDK must let it send one (CreateTicketAsync had none, so a
// create retried was refused 409 TICKET_ACTIVE by the ticket it made).
func TestCSharpSDKTakesEveryIdempotencyKey(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "Runtime", "RealSyncClient.cs"))
	if err != nil {
		t.Fatal(err)
	}
	keyed := keyedOperations(t, doc)
	if len(keyed) < 5 {
		t.Fatalf("read only %d operations taking an Idempotency-Key from openapi.yaml: %v", len(keyed), keyed)
	}
	for _, id := range unkeyed(keyed, string(src)) {
		t.Errorf("openapi.yaml's %s takes an Idempotency-Key, but the C# SDK's method has no overload with a string idempotencyKey", id)
	}
	t.Logf("%d operations take an Idempotency-Key: %v", len(keyed), keyed)
}
