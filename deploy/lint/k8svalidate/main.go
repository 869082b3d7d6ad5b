// Command k8svalidate validates Kubernetes manifests against the API types of
// Kubernetes 1.30 (k8s.io/api v0.30), without a cluster. deploy/lint.sh runs
// it on the output of `kubectl kustomize deploy/k8s`, in place of
// kubectl-validate v0.0.4: on errors planted in these manifests it refuses
// all that kubectl-validate refuses, and builds from empty Go caches in about
// a minute where kubectl-validate took six (it needs only k8s.io/api and
// k8s.io/apimachinery, not the API server's packages). Neither checks what
// only the API server's own validation sees (enumerated values, ranges).
//
// Each YAML document is decoded by apimachinery's strict serializer, the one
// the API server uses for fieldValidation=Strict, into the Go type its
// apiVersion and kind name. So these fail:
//
//   - an apiVersion or kind that is not a resource of the GA groups of
//     Kubernetes 1.30 known here: core/v1, apps/v1, batch/v1, policy/v1,
//     networking.k8s.io/v1, autoscaling/v2, rbac.authorization.k8s.io/v1;
//   - an unknown field, a field spelled in another case, a duplicate field;
//   - a value of the wrong type (a string where an integer belongs, an
//     integer out of int32's range, a quantity or time that does not parse).
//
// Then, as the API's OpenAPI schema and its generic validation would
// (see check.go): required fields, unique keys of the lists the API treats as
// maps (containers by name, env by name, ports by port and protocol...),
// metadata (name, namespace, labels, annotations), label selectors.
//
// Usage: k8svalidate FILE...
//
// Prints one line per problem, "FILE: KIND NAMESPACE/NAME: problem", and
// exits 1 if there is any; otherwise prints the objects it validated.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	kyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: k8svalidate FILE...")
		os.Exit(2)
	}
	dec, err := newDecoder()
	if err == nil {
		err = checkTables()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8svalidate:", err)
		os.Exit(2)
	}
	bad := false
	for _, path := range os.Args[1:] {
		valid, problems, err := validateFile(dec, path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			bad = true
			continue
		}
		for _, p := range problems {
			// One line each, multi-line messages (YAML's) included.
			fmt.Fprintf(os.Stderr, "%s: %s\n", path, strings.Join(strings.Fields(p), " "))
			bad = true
		}
		for _, v := range valid {
			fmt.Printf("%s: %s valid\n", path, v)
		}
	}
	if bad {
		os.Exit(1)
	}
}

// newDecoder returns apimachinery's strict YAML decoder over newScheme.
func newDecoder() (runtime.Decoder, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	return kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme,
		kjson.SerializerOptions{Yaml: true, Strict: true}), nil
}

// newScheme returns the types of the GA API groups of Kubernetes 1.30 that
// k8svalidate knows.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme,
		networkingv1.AddToScheme, autoscalingv2.AddToScheme, rbacv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

// validateFile validates every YAML document of the file at path. It returns
// a description of each valid object and one line per problem; err only when
// the file cannot be read or split into documents.
func validateFile(dec runtime.Decoder, path string) (valid, problems []string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	r := kyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("document %d: %w", n, err)
		}
		what, errs := validateDocument(dec, doc)
		if what == "" {
			continue // an empty document: comments only
		}
		if what == "?" {
			what = fmt.Sprintf("document %d", n)
		}
		for _, e := range errs {
			problems = append(problems, what+": "+e)
		}
		if len(errs) == 0 {
			valid = append(valid, what)
		}
	}
	return valid, problems, nil
}

// validateDocument decodes one YAML document strictly and checks it. It
// returns "KIND NAMESPACE/NAME" as the document says ("?" when it says no
// kind, "" when the document is empty) and the problems found.
func validateDocument(dec runtime.Decoder, doc []byte) (string, []string) {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return "?", []string{err.Error()}
	}
	if s := strings.TrimSpace(string(js)); s == "null" || s == "" {
		return "", nil
	}
	var raw map[string]any
	if err := json.Unmarshal(js, &raw); err != nil {
		return "?", []string{"not a mapping: " + err.Error()}
	}
	what := describe(raw)
	obj, gvk, err := dec.Decode(doc, nil, nil)
	// A strict decoding error (unknown or duplicate fields) comes with the
	// object decoded.
	strict, isStrict := runtime.AsStrictDecodingError(err)
	if err != nil && !isStrict {
		return what, []string{err.Error()}
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return what, []string{fmt.Sprintf("%s is not a resource kind (no metadata)", gvk)}
	}
	var problems []string
	if isStrict {
		for _, e := range strict.Errors() {
			problems = append(problems, e.Error())
		}
	}
	for _, e := range check(gvk.Kind, obj, acc, raw) {
		problems = append(problems, e.Error())
	}
	return what, problems
}

// describe names the object of the document raw: "KIND NAMESPACE/NAME",
// "KIND NAME" without a namespace, "?" without a kind.
func describe(raw map[string]any) string {
	kind, _ := raw["kind"].(string)
	if kind == "" {
		return "?"
	}
	md, _ := raw["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if ns, _ := md["namespace"].(string); ns != "" {
		name = ns + "/" + name
	}
	return kind + " " + name
}
