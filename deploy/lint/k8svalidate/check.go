package main

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// clusterScoped are the kinds of the known groups that live outside
// namespaces; every other kind is namespaced.
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "ComponentStatus": true,
	"IngressClass": true, "ClusterRole": true, "ClusterRoleBinding": true,
}

// nameRules are the kinds whose names the API restricts further than to a
// DNS subdomain.
var nameRules = map[string]apivalidation.ValidateNameFunc{
	"Namespace": apivalidation.NameIsDNSLabel,
	"Service":   apivalidation.NameIsDNS1035Label,
}

// listKey is a key field of a list the API treats as a map (OpenAPI
// x-kubernetes-list-type: map), with the value the API defaults it to.
type listKey struct{ name, dflt string }

// listField is the field of JSON name name in the struct type parent.
type listField struct {
	parent reflect.Type
	name   string
}

// listMaps are the lists of the known groups' specs whose items the
// Kubernetes 1.30 OpenAPI schema declares unique by these keys
// (x-kubernetes-list-map-keys; a set when the keys are nil). Status fields
// are left out: manifests do not set them.
var listMaps = map[listField][]listKey{
	{reflect.TypeOf(corev1.PodSpec{}), "containers"}:                             {{"name", ""}},
	{reflect.TypeOf(corev1.PodSpec{}), "initContainers"}:                         {{"name", ""}},
	{reflect.TypeOf(corev1.PodSpec{}), "ephemeralContainers"}:                    {{"name", ""}},
	{reflect.TypeOf(corev1.PodSpec{}), "volumes"}:                                {{"name", ""}},
	{reflect.TypeOf(corev1.PodSpec{}), "imagePullSecrets"}:                       {{"name", ""}},
	{reflect.TypeOf(corev1.PodSpec{}), "hostAliases"}:                            {{"ip", ""}},
	{reflect.TypeOf(corev1.PodSpec{}), "resourceClaims"}:                         {{"name", ""}},
	{reflect.TypeOf(corev1.PodSpec{}), "schedulingGates"}:                        {{"name", ""}},
	{reflect.TypeOf(corev1.PodSpec{}), "topologySpreadConstraints"}:              {{"topologyKey", ""}, {"whenUnsatisfiable", ""}},
	{reflect.TypeOf(corev1.Container{}), "env"}:                                  {{"name", ""}},
	{reflect.TypeOf(corev1.Container{}), "ports"}:                                {{"containerPort", ""}, {"protocol", "TCP"}},
	{reflect.TypeOf(corev1.Container{}), "volumeMounts"}:                         {{"mountPath", ""}},
	{reflect.TypeOf(corev1.Container{}), "volumeDevices"}:                        {{"devicePath", ""}},
	{reflect.TypeOf(corev1.EphemeralContainerCommon{}), "env"}:                   {{"name", ""}},
	{reflect.TypeOf(corev1.EphemeralContainerCommon{}), "ports"}:                 {{"containerPort", ""}, {"protocol", "TCP"}},
	{reflect.TypeOf(corev1.EphemeralContainerCommon{}), "volumeMounts"}:          {{"mountPath", ""}},
	{reflect.TypeOf(corev1.EphemeralContainerCommon{}), "volumeDevices"}:         {{"devicePath", ""}},
	{reflect.TypeOf(corev1.ResourceRequirements{}), "claims"}:                    {{"name", ""}},
	{reflect.TypeOf(corev1.ServiceSpec{}), "ports"}:                              {{"port", ""}, {"protocol", "TCP"}},
	{reflect.TypeOf(corev1.ServiceAccount{}), "secrets"}:                         {{"name", ""}},
	{reflect.TypeOf(corev1.NodeSpec{}), "podCIDRs"}:                              nil,
	{reflect.TypeOf(metav1.ObjectMeta{}), "finalizers"}:                          nil,
	{reflect.TypeOf(metav1.ObjectMeta{}), "ownerReferences"}:                     {{"uid", ""}},
	{reflect.TypeOf(batchv1.PodFailurePolicyOnExitCodesRequirement{}), "values"}: nil,
}

// optionalWithoutOmitempty are the fields of the known groups that the
// Kubernetes 1.30 OpenAPI schema leaves optional although their JSON tag has
// no omitempty (checked against that schema: of the 333 object types
// reachable from the known kinds, these are the only fields where
// "no omitempty" and "required" differ).
var optionalWithoutOmitempty = map[listField]bool{
	{reflect.TypeOf(corev1.ProjectedVolumeSource{}), "sources"}:                       true,
	{reflect.TypeOf(corev1.TypedLocalObjectReference{}), "apiGroup"}:                  true,
	{reflect.TypeOf(corev1.TypedObjectReference{}), "apiGroup"}:                       true,
	{reflect.TypeOf(corev1.GRPCAction{}), "service"}:                                  true,
	{reflect.TypeOf(corev1.HostAlias{}), "ip"}:                                        true,
	{reflect.TypeOf(corev1.Event{}), "reportingComponent"}:                            true,
	{reflect.TypeOf(corev1.Event{}), "reportingInstance"}:                             true,
	{reflect.TypeOf(corev1.HostIP{}), "ip"}:                                           true,
	{reflect.TypeOf(corev1.PodIP{}), "ip"}:                                            true,
	{reflect.TypeOf(corev1.ContainerImage{}), "names"}:                                true,
	{reflect.TypeOf(corev1.NodeRuntimeHandler{}), "name"}:                             true,
	{reflect.TypeOf(corev1.AzureFilePersistentVolumeSource{}), "secretNamespace"}:     true,
	{reflect.TypeOf(networkingv1.IngressClassParametersReference{}), "scope"}:         true,
	{reflect.TypeOf(rbacv1.Role{}), "rules"}:                                          true,
	{reflect.TypeOf(rbacv1.ClusterRole{}), "rules"}:                                   true,
	{reflect.TypeOf(appsv1.StatefulSetOrdinals{}), "start"}:                           true,
	{reflect.TypeOf(appsv1.StatefulSetStatus{}), "availableReplicas"}:                 true,
	{reflect.TypeOf(autoscalingv2.HorizontalPodAutoscalerStatus{}), "currentMetrics"}: true,
}

var (
	labelSelectorType = reflect.TypeOf(metav1.LabelSelector{})
	objectMetaType    = reflect.TypeOf(metav1.ObjectMeta{})
)

// check validates what a typed decode does not: the object's metadata as the
// API's generic validation does (name, namespace, labels, annotations), and,
// walking the object together with raw (the document as JSON values), the
// schema's required fields, the unique keys of listMaps, every label
// selector and the labels and annotations of nested metadata (pod templates).
// A namespaced object without a namespace gets "default", as kubectl apply
// gives it.
func check(kind string, obj runtime.Object, acc metav1.Object, raw map[string]any) field.ErrorList {
	namespaced := !clusterScoped[kind]
	if namespaced && acc.GetNamespace() == "" {
		acc.SetNamespace(metav1.NamespaceDefault)
	}
	nameFn, ok := nameRules[kind]
	if !ok {
		nameFn = apivalidation.NameIsDNSSubdomain
	}
	errs := apivalidation.ValidateObjectMetaAccessor(acc, namespaced, nameFn, field.NewPath("metadata"))
	w := walker{}
	w.walk(reflect.ValueOf(obj), raw, nil)
	return append(errs, w.errs...)
}

type walker struct{ errs field.ErrorList }

// walk checks v, whose JSON form is raw, at path, and descends into it.
func (w *walker) walk(v reflect.Value, raw any, path *field.Path) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			w.walk(v.Elem(), raw, path)
		}
	case reflect.Struct:
		m, ok := raw.(map[string]any)
		if !ok {
			return // a type with its own JSON form: Quantity, Time, IntOrString
		}
		if !v.CanAddr() {
			c := reflect.New(v.Type()).Elem()
			c.Set(v)
			v = c
		}
		switch v.Type() {
		case labelSelectorType:
			sel := v.Addr().Interface().(*metav1.LabelSelector)
			w.errs = append(w.errs, metavalidation.ValidateLabelSelector(sel, metavalidation.LabelSelectorValidationOptions{}, path)...)
		case objectMetaType:
			if path.String() != "metadata" { // the object's own: check() validates it
				om := v.Addr().Interface().(*metav1.ObjectMeta)
				w.errs = append(w.errs, metavalidation.ValidateLabels(om.Labels, path.Child("labels"))...)
				w.errs = append(w.errs, apivalidation.ValidateAnnotations(om.Annotations, path.Child("annotations"))...)
			}
		}
		w.fields(v, m, path)
	case reflect.Slice:
		l, _ := raw.([]any)
		for i := 0; i < v.Len() && i < len(l); i++ {
			w.walk(v.Index(i), l[i], path.Index(i))
		}
	case reflect.Map:
		m, _ := raw.(map[string]any)
		iter := v.MapRange()
		for iter.Next() {
			if k := iter.Key(); k.Kind() == reflect.String {
				w.walk(iter.Value(), m[k.String()], path.Key(k.String()))
			}
		}
	}
}

// fields checks the fields of the struct v: those the schema requires (the
// API types' convention: a JSON name without omitempty, less
// optionalWithoutOmitempty) must be present, and
// the lists of listMaps unique by their keys.
func (w *walker) fields(v reflect.Value, raw map[string]any, path *field.Path) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" && !embedsStruct(f) {
			name = f.Name // no tag: encoding/json's name
		}
		if name == "" { // inline: its fields are the parent's
			w.walk(v.Field(i), raw, path)
			continue
		}
		child := path.Child(name)
		rv, present := raw[name]
		if !present {
			if !slices.Contains(strings.Split(opts, ","), "omitempty") && !optionalWithoutOmitempty[listField{t, name}] {
				w.errs = append(w.errs, field.Required(child, ""))
			}
			continue
		}
		if keys, ok := listMaps[listField{t, name}]; ok {
			w.unique(rv, keys, child)
		}
		w.walk(v.Field(i), rv, child)
	}
}

// unique reports the items of the list raw that repeat an earlier item's
// keys (the whole item for a set).
func (w *walker) unique(raw any, keys []listKey, path *field.Path) {
	l, _ := raw.([]any)
	seen := map[string]bool{}
	for i, item := range l {
		id := fmt.Sprint(item)
		if keys != nil {
			m, _ := item.(map[string]any)
			parts := make([]string, len(keys))
			for j, k := range keys {
				val, ok := m[k.name]
				if !ok || val == nil {
					val = k.dflt
				}
				parts[j] = fmt.Sprintf("%s=%v", k.name, val)
			}
			id = strings.Join(parts, ", ")
		}
		if seen[id] {
			w.errs = append(w.errs, field.Duplicate(path.Index(i), id))
		}
		seen[id] = true
	}
}

// embedsStruct reports whether f is an embedded struct, whose fields
// encoding/json takes as its parent's.
func embedsStruct(f reflect.StructField) bool {
	t := f.Type
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return f.Anonymous && t.Kind() == reflect.Struct
}

// checkTables reports a field of listMaps or optionalWithoutOmitempty that
// its struct does not have (a table that went stale with k8s.io/api).
func checkTables() error {
	var fields []listField
	for f := range listMaps {
		fields = append(fields, f)
	}
	for f := range optionalWithoutOmitempty {
		fields = append(fields, f)
	}
	for _, f := range fields {
		found := false
		for i := range f.parent.NumField() {
			name, _, _ := strings.Cut(f.parent.Field(i).Tag.Get("json"), ",")
			found = found || name == f.name
		}
		if !found {
			return fmt.Errorf("%v has no field %q", f.parent, f.name)
		}
	}
	return nil
}
