// Package k8s checks the Kubernetes deployment without a cluster: every
// manifest of deploy/k8s/base decodes strictly into the Kubernetes API
// types (a misspelt field fails), the base agrees with the service table
// (every binary has a Deployment and a Service, the gateway routes to them),
// every Secret it references is one deploy/README.md tells the operator to
// create, and kustomize builds the base and the dev overlay.
package k8s

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"supportplatform.dev/deploy/stack"
)

// kinds are the API types the deployment may use, by apiVersion and kind.
var kinds = map[string]func() any{
	"apps/v1/Deployment":                     func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet":                    func() any { return &appsv1.StatefulSet{} },
	"v1/Service":                             func() any { return &corev1.Service{} },
	"v1/ConfigMap":                           func() any { return &corev1.ConfigMap{} },
	"v1/Namespace":                           func() any { return &corev1.Namespace{} },
	"v1/Secret":                              func() any { return &corev1.Secret{} },
	"policy/v1/PodDisruptionBudget":          func() any { return &policyv1.PodDisruptionBudget{} },
	"autoscaling/v2/HorizontalPodAutoscaler": func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"batch/v1/Job":                           func() any { return &batchv1.Job{} },
	"networking.k8s.io/v1/NetworkPolicy":     func() any { return &networkingv1.NetworkPolicy{} },
}

// decodeStrict decodes one YAML document into the API type its apiVersion
// and kind name, refusing unknown and duplicate fields and values of the
// wrong type.
func decodeStrict(doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return nil, fmt.Errorf("apiVersion %q kind %q is not a type this deployment uses", tm.APIVersion, tm.Kind)
	}
	obj := newObj()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, err
	}
	if meta(obj).Name == "" {
		return nil, errors.New("metadata.name is empty")
	}
	return obj, nil
}

func meta(obj any) *metav1.ObjectMeta {
	return obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
}

// documents splits a YAML stream into its non-empty documents.
func documents(data []byte) ([][]byte, error) {
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		var v any
		if err := yaml.Unmarshal(doc, &v); err != nil {
			return nil, err
		}
		if v != nil { // only comments
			docs = append(docs, doc)
		}
	}
}

// manifests are the decoded objects of a directory, by kind and name.
type manifests struct {
	byKind map[string]map[string]any
	files  map[string]string // kind/name -> file
}

func (m manifests) deployments() map[string]*appsv1.Deployment {
	out := map[string]*appsv1.Deployment{}
	for name, o := range m.byKind["Deployment"] {
		out[name] = o.(*appsv1.Deployment)
	}
	return out
}

// workloads are the Deployments and, as Deployments of the same pods, the
// StatefulSets (NATS): what the tests of pods (selectors, confinement,
// references) check.
func (m manifests) workloads() map[string]*appsv1.Deployment {
	out := m.deployments()
	for name, o := range m.byKind["StatefulSet"] {
		ss := o.(*appsv1.StatefulSet)
		out[name] = &appsv1.Deployment{ObjectMeta: ss.ObjectMeta,
			Spec: appsv1.DeploymentSpec{Replicas: ss.Spec.Replicas, Selector: ss.Spec.Selector, Template: ss.Spec.Template}}
	}
	return out
}

func (m manifests) configMap(name string) (*corev1.ConfigMap, bool) {
	o, ok := m.byKind["ConfigMap"][name]
	if !ok {
		return nil, false
	}
	return o.(*corev1.ConfigMap), true
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := stack.FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// loadBase decodes every resource file the base's kustomization lists
// (once per test binary: the tests only read the result).
func loadBase(t *testing.T) manifests {
	t.Helper()
	m, errs := decodedBase()
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	return m
}

var decodedBase = sync.OnceValues(func() (manifests, []error) {
	m := manifests{byKind: map[string]map[string]any{}, files: map[string]string{}}
	root, err := stack.FindRepoRoot(".")
	if err != nil {
		return m, []error{err}
	}
	base := filepath.Join(root, stack.K8sBaseDir)
	k, err := readKustomization(filepath.Join(base, "kustomization.yaml"))
	if err != nil {
		return m, []error{err}
	}
	var errs []error
	for _, rel := range k.Resources {
		data, err := os.ReadFile(filepath.Join(base, rel))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		docs, err := documents(data)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", rel, err))
			continue
		}
		for i, doc := range docs {
			obj, err := decodeStrict(doc)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s, document %d: %w", rel, i+1, err))
				continue
			}
			kind := kindOf(obj)
			name := meta(obj).Name
			if prev, dup := m.files[kind+"/"+name]; dup {
				errs = append(errs, fmt.Errorf("%s %s is defined in %s and %s", kind, name, prev, rel))
			}
			if m.byKind[kind] == nil {
				m.byKind[kind] = map[string]any{}
			}
			m.byKind[kind][name] = obj
			m.files[kind+"/"+name] = rel
		}
	}
	return m, errs
})

func kindOf(obj any) string {
	switch obj.(type) {
	case *appsv1.Deployment:
		return "Deployment"
	case *appsv1.StatefulSet:
		return "StatefulSet"
	case *corev1.Service:
		return "Service"
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *corev1.Namespace:
		return "Namespace"
	case *corev1.Secret:
		return "Secret"
	case *policyv1.PodDisruptionBudget:
		return "PodDisruptionBudget"
	case *autoscalingv2.HorizontalPodAutoscaler:
		return "HorizontalPodAutoscaler"
	case *batchv1.Job:
		return "Job"
	case *networkingv1.NetworkPolicy:
		return "NetworkPolicy"
	}
	panic(fmt.Sprintf("kind of %T", obj))
}

func loadKustomization(t *testing.T, file string) *kusttypes.Kustomization {
	t.Helper()
	k, err := readKustomization(file)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func readKustomization(file string) (*kusttypes.Kustomization, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var k kusttypes.Kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &k, nil
}

// A misspelt or misplaced field, a value of the wrong type, a duplicate
// field or an unknown kind fails the decoding that every manifest goes
// through.
func TestStrictDecodingRefusesTypos(t *testing.T) {
	const valid = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: x
spec:
  replicas: 2
  selector:
    matchLabels: {app: x}
  template:
    metadata:
      labels: {app: x}
    spec:
      containers:
        - name: x
          image: x
          resources:
            limits: {memory: 128Mi}
`
	tests := []struct {
		name    string
		old     string
		new     string
		wantErr string
	}{
		{name: "valid"},
		{name: "misspelt field", old: "containers:", new: "contianers:", wantErr: "contianers"},
		{name: "field at the wrong level", old: "  replicas: 2", new: "  replicas: 2\n  image: x", wantErr: "image"},
		{name: "wrong type", old: "replicas: 2", new: "replicas: two", wantErr: "replicas"},
		{name: "bad quantity", old: "memory: 128Mi", new: "memory: 128MB-", wantErr: "quantit"},
		{name: "duplicate field", old: "  replicas: 2", new: "  replicas: 2\n  replicas: 3", wantErr: "replicas"},
		{name: "unknown kind", old: "kind: Deployment", new: "kind: Deploymnet", wantErr: "Deploymnet"},
		{name: "wrong apiVersion", old: "apiVersion: apps/v1", new: "apiVersion: apps/v1beta1", wantErr: "apps/v1beta1"},
		{name: "no name", old: "  name: x\n", new: "  labels: {}\n", wantErr: "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := valid
			if tt.old != "" {
				if !strings.Contains(doc, tt.old) {
					t.Fatalf("%q not in the document", tt.old)
				}
				doc = strings.Replace(doc, tt.old, tt.new, 1)
			}
			_, err := decodeStrict([]byte(doc))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("valid document: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("decodeStrict = %v, want an error naming %q", err, tt.wantErr)
			}
		})
	}
}

// kustomization.yaml lists exactly the manifest files of the base, so a
// new file cannot be forgotten and a listed one cannot be missing.
func TestKustomizationListsEveryFile(t *testing.T) {
	base := filepath.Join(repoRoot(t), stack.K8sBaseDir)
	k := loadKustomization(t, filepath.Join(base, "kustomization.yaml"))
	var files []string
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		rel = filepath.ToSlash(rel)
		if rel != "kustomization.yaml" {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	listed := slices.Clone(k.Resources)
	slices.Sort(listed)
	slices.Sort(files)
	if !slices.Equal(listed, files) {
		t.Errorf("kustomization.yaml resources %v, files in %s %v", listed, stack.K8sBaseDir, files)
	}
	if len(slices.Compact(listed)) != len(k.Resources) {
		t.Errorf("kustomization.yaml lists a file twice: %v", k.Resources)
	}
}

// Every binary of the service table has a Deployment of its image and a
// ClusterIP Service on the port of every container (HTTP_ADDR :8080).
func TestEveryBinaryHasADeploymentAndService(t *testing.T) {
	m := loadBase(t)
	cfg, ok := m.configMap("sp-config")
	if !ok {
		t.Fatal("no ConfigMap sp-config")
	}
	if _, port, _ := net.SplitHostPort(cfg.Data["HTTP_ADDR"]); port != fmt.Sprint(stack.K8sServicePort) {
		t.Errorf("sp-config HTTP_ADDR=%q, want port %d", cfg.Data["HTTP_ADDR"], stack.K8sServicePort)
	}
	for _, s := range stack.Services {
		d, ok := m.deployments()[s.Name]
		if !ok {
			t.Errorf("service table entry %s has no Deployment in %s: add %s.yaml (Deployment, Service) and list it in kustomization.yaml", s.Name, stack.K8sBaseDir, s.Name)
			continue
		}
		c := mainContainer(t, d)
		if c == nil {
			continue
		}
		if want := "supportplatform/" + s.Name + ":latest"; c.Image != want {
			t.Errorf("%s: image %q, want %q (kustomize images: overrides it)", s.Name, c.Image, want)
		}
		port := containerPort(c, intstr.FromInt32(stack.K8sServicePort))
		if port == nil {
			t.Errorf("%s: container has no port %d", s.Name, stack.K8sServicePort)
		}
		for probe, want := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
			if want == nil || want.HTTPGet == nil {
				t.Errorf("%s: no HTTP probe for %s", s.Name, probe)
				continue
			}
			p := containerPort(c, want.HTTPGet.Port)
			if want.HTTPGet.Path != probe || p == nil || p.ContainerPort != stack.K8sServicePort {
				t.Errorf("%s: probe GET %s on port %s, want %s on %d", s.Name, want.HTTPGet.Path, want.HTTPGet.Port.String(), probe, stack.K8sServicePort)
			}
		}

		svcObj, ok := m.byKind["Service"][s.Name]
		if !ok {
			t.Errorf("service table entry %s has no Service in %s", s.Name, stack.K8sBaseDir)
			continue
		}
		svc := svcObj.(*corev1.Service)
		if svc.Spec.Type != corev1.ServiceTypeClusterIP {
			t.Errorf("Service %s: type %q, want ClusterIP (the gateway is the way in)", s.Name, svc.Spec.Type)
		}
		found := false
		for _, sp := range svc.Spec.Ports {
			if sp.Port == stack.K8sServicePort {
				found = true
				if p := containerPort(c, sp.TargetPort); p == nil || p.ContainerPort != stack.K8sServicePort {
					t.Errorf("Service %s: port %d targets %s, not the container's %d", s.Name, sp.Port, sp.TargetPort.String(), stack.K8sServicePort)
				}
			}
		}
		if !found {
			t.Errorf("Service %s has no port %d", s.Name, stack.K8sServicePort)
		}
	}
}

// Selectors select what they are meant to: each Deployment its own pods,
// each Service and PodDisruptionBudget the pods of exactly one Deployment,
// each HorizontalPodAutoscaler an existing Deployment.
func TestSelectorsMatchPods(t *testing.T) {
	m := loadBase(t)
	deployments := m.workloads()
	for name, d := range deployments {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("Deployment %s: selector %v does not match its pod labels %v (%v)", name, d.Spec.Selector, d.Spec.Template.Labels, err)
		}
	}
	selected := func(sel labels.Selector) []string {
		var names []string
		for name, d := range deployments {
			if !sel.Empty() && sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		return names
	}
	for name, o := range m.byKind["Service"] {
		svc := o.(*corev1.Service)
		got := selected(labels.SelectorFromSet(svc.Spec.Selector))
		if len(got) != 1 {
			t.Errorf("Service %s selects the pods of %v, want exactly one Deployment", name, got)
			continue
		}
		c := mainContainer(t, deployments[got[0]])
		for _, sp := range svc.Spec.Ports {
			if c != nil && containerPort(c, sp.TargetPort) == nil {
				t.Errorf("Service %s: targetPort %s is not a port of %s", name, sp.TargetPort.String(), got[0])
			}
		}
	}
	for name, o := range m.byKind["PodDisruptionBudget"] {
		pdb := o.(*policyv1.PodDisruptionBudget)
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			t.Errorf("PodDisruptionBudget %s: %v", name, err)
			continue
		}
		if got := selected(sel); len(got) != 1 {
			t.Errorf("PodDisruptionBudget %s selects the pods of %v, want exactly one Deployment", name, got)
		}
		if pdb.Spec.MinAvailable == nil && pdb.Spec.MaxUnavailable == nil {
			t.Errorf("PodDisruptionBudget %s: neither minAvailable nor maxUnavailable", name)
		}
	}
	for name, o := range m.byKind["HorizontalPodAutoscaler"] {
		hpa := o.(*autoscalingv2.HorizontalPodAutoscaler)
		ref := hpa.Spec.ScaleTargetRef
		d, ok := deployments[ref.Name]
		if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || !ok {
			t.Errorf("HorizontalPodAutoscaler %s scales %s %s %s, which is not a Deployment of the base", name, ref.APIVersion, ref.Kind, ref.Name)
			continue
		}
		// kubectl apply would reset the autoscaler's choice to a fixed
		// count at every deployment.
		if d.Spec.Replicas != nil {
			t.Errorf("Deployment %s sets replicas %d but %s scales it: leave replicas to the autoscaler", ref.Name, *d.Spec.Replicas, name)
		}
		cpu := false
		for _, metric := range hpa.Spec.Metrics {
			cpu = cpu || metric.Type == autoscalingv2.ResourceMetricSourceType && metric.Resource != nil && metric.Resource.Name == corev1.ResourceCPU
		}
		if !cpu {
			t.Errorf("HorizontalPodAutoscaler %s has no CPU metric", name)
		}
		if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 || hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas {
			t.Errorf("HorizontalPodAutoscaler %s: replicas %v..%d, want at least 2", name, hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
		}
	}
}

// The ingest path scales on CPU and keeps a replica through voluntary
// disruptions; renewal runs two replicas (no leader: it claims due
// subscriptions with SKIP LOCKED).
func TestIngestScalesAndRenewalHasReplicas(t *testing.T) {
	m := loadBase(t)
	for _, name := range stack.ScaledServices {
		hpaScales, pdbCovers := false, false
		for _, o := range m.byKind["HorizontalPodAutoscaler"] {
			hpaScales = hpaScales || o.(*autoscalingv2.HorizontalPodAutoscaler).Spec.ScaleTargetRef.Name == name
		}
		d, ok := m.deployments()[name]
		if !ok {
			t.Errorf("%s: no Deployment", name)
			continue
		}
		for _, o := range m.byKind["PodDisruptionBudget"] {
			sel, _ := metav1.LabelSelectorAsSelector(o.(*policyv1.PodDisruptionBudget).Spec.Selector)
			pdbCovers = pdbCovers || sel != nil && !sel.Empty() && sel.Matches(labels.Set(d.Spec.Template.Labels))
		}
		if !hpaScales || !pdbCovers {
			t.Errorf("%s: HorizontalPodAutoscaler %v, PodDisruptionBudget %v; want both", name, hpaScales, pdbCovers)
		}
	}
	if d, ok := m.deployments()["renewal"]; !ok || d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Errorf("renewal: want a Deployment with at least 2 replicas")
	}
}

// Every container runs as non-root on a read-only root file system,
// without privilege escalation, with CPU and memory requests and limits.
func TestContainersAreConfined(t *testing.T) {
	m := loadBase(t)
	for name, d := range m.workloads() {
		pod := d.Spec.Template.Spec
		for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
			where := fmt.Sprintf("Deployment %s, container %s", name, c.Name)
			nonRoot := pod.SecurityContext != nil && pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot
			if sc := c.SecurityContext; sc != nil && sc.RunAsNonRoot != nil {
				nonRoot = *sc.RunAsNonRoot
			}
			if !nonRoot {
				t.Errorf("%s: runAsNonRoot is not set", where)
			}
			sc := c.SecurityContext
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s: readOnlyRootFilesystem is not set", where)
			}
			if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s: allowPrivilegeEscalation is not false", where)
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
				if req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
					t.Errorf("%s: %s request %s, limit %s", where, r, req.String(), lim.String())
				}
			}
		}
	}
}

// secretVariables are the settings that carry a password or a key: they
// come from Secrets only, never from a ConfigMap or a literal value.
var secretVariables = []string{"DATABASE_URL", "DATABASE_MIGRATE_URL", "NATS_URL", "REDIS_URL",
	"GRAPH_CLIENT_SECRET", "AI_API_KEY", "LIBRETRANSLATE_API_KEY", "TICKET_REF_SECRET", "TICKET_REF_SECRET_PREVIOUS"}

// Every ConfigMap a pod reads is in the base (with the keys it reads);
// every Secret it reads is one deploy/README.md tells the operator to create
// (with the keys it reads); the base itself holds no Secret.
func TestReferencesResolve(t *testing.T) {
	m := loadBase(t)
	documented := documentedSecrets(t)
	if len(m.byKind["Secret"]) > 0 {
		t.Errorf("the base defines Secrets %v: reference them, never inline them", slices.Collect(maps.Keys(m.byKind["Secret"])))
	}
	for name, o := range m.byKind["ConfigMap"] {
		for _, v := range secretVariables {
			if _, ok := o.(*corev1.ConfigMap).Data[v]; ok {
				t.Errorf("ConfigMap %s holds %s, which carries a secret", name, v)
			}
		}
	}
	checkConfigMap := func(where, name, key string) {
		cm, ok := m.configMap(name)
		if !ok {
			t.Errorf("%s: ConfigMap %s is not in the base", where, name)
			return
		}
		if _, ok := cm.Data[key]; key != "" && !ok {
			t.Errorf("%s: ConfigMap %s has no key %s", where, name, key)
		}
	}
	checkSecret := func(where, name, key string) {
		keys, ok := documented[name]
		if !ok {
			t.Errorf("%s: Secret %s is not documented (deploy/README.md: a `kubectl create secret ... %s` command)", where, name, name)
			return
		}
		if key != "" && !slices.Contains(keys, key) {
			t.Errorf("%s: Secret %s key %s is not in its deploy/README.md command (keys %v)", where, name, key, keys)
		}
	}
	for name, d := range m.workloads() {
		pod := d.Spec.Template.Spec
		for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
			where := fmt.Sprintf("Deployment %s, container %s", name, c.Name)
			for _, ef := range c.EnvFrom {
				if ef.ConfigMapRef != nil {
					checkConfigMap(where, ef.ConfigMapRef.Name, "")
				}
				if ef.SecretRef != nil {
					checkSecret(where, ef.SecretRef.Name, "")
				}
			}
			for _, e := range c.Env {
				switch {
				case e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil:
					checkConfigMap(where+", "+e.Name, e.ValueFrom.ConfigMapKeyRef.Name, e.ValueFrom.ConfigMapKeyRef.Key)
				case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
					checkSecret(where+", "+e.Name, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
				case slices.Contains(secretVariables, e.Name):
					t.Errorf("%s: %s is not read from a Secret", where, e.Name)
				}
			}
		}
		for _, v := range pod.Volumes {
			where := fmt.Sprintf("Deployment %s, volume %s", name, v.Name)
			switch {
			case v.ConfigMap != nil:
				checkConfigMap(where, v.ConfigMap.Name, "")
				for _, it := range v.ConfigMap.Items {
					checkConfigMap(where, v.ConfigMap.Name, it.Key)
				}
			case v.Secret != nil:
				checkSecret(where, v.Secret.SecretName, "")
				for _, it := range v.Secret.Items {
					checkSecret(where, v.Secret.SecretName, it.Key)
				}
			}
		}
		// A subPath mount of a ConfigMap volume names one of its keys.
		for _, c := range pod.Containers {
			for _, vm := range c.VolumeMounts {
				for _, v := range pod.Volumes {
					if v.Name == vm.Name && vm.SubPath != "" && v.ConfigMap != nil {
						checkConfigMap(fmt.Sprintf("Deployment %s, mount %s", name, vm.MountPath), v.ConfigMap.Name, vm.SubPath)
					}
				}
			}
		}
	}
}

// documentedSecrets reads the `kubectl create secret` commands of
// deploy/README.md: Secret name -> keys.
func documentedSecrets(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	// A command runs until a line that does not end with a backslash.
	cmdRe := regexp.MustCompile(`kubectl(?: -n \S+)? create secret (generic|tls) ([a-z0-9.-]+)((?:[^\n]*\\\n)*[^\n]*)`)
	keyRe := regexp.MustCompile(`--from-(?:literal|file)=([A-Za-z0-9_.-]+)=`)
	out := map[string][]string{}
	for _, c := range cmdRe.FindAllStringSubmatch(string(data), -1) {
		keys := out[c[2]]
		if c[1] == "tls" {
			keys = append(keys, corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
		}
		for _, k := range keyRe.FindAllStringSubmatch(c[3], -1) {
			keys = append(keys, k[1])
		}
		out[c[2]] = keys
	}
	if len(out) == 0 {
		t.Fatal("deploy/README.md has no `kubectl create secret` command")
	}
	return out
}

// Services with a schema migrate in an init container (`<name> migrate`,
// as the schema owner of DATABASE_MIGRATE_URL) before serving as their own
// role; the serving container never holds the owner's URL. A service
// without a schema gets no database at all.
func TestMigrationsRunBeforeServing(t *testing.T) {
	m := loadBase(t)
	for _, s := range stack.Services {
		d, ok := m.deployments()[s.Name]
		if !ok {
			continue // TestEveryBinaryHasADeploymentAndService names it
		}
		pod := d.Spec.Template.Spec
		main := mainContainer(t, d)
		if main == nil {
			continue
		}
		if hasEnv(*main, "DATABASE_MIGRATE_URL") {
			t.Errorf("%s: the serving container holds DATABASE_MIGRATE_URL", s.Name)
		}
		var migrate *corev1.Container
		for i, c := range pod.InitContainers {
			if slices.Equal(c.Args, []string{"migrate"}) {
				migrate = &pod.InitContainers[i]
			}
		}
		if s.Schema == "" {
			if migrate != nil || hasEnv(*main, "DATABASE_URL") {
				t.Errorf("%s has no schema but a migration or DATABASE_URL", s.Name)
			}
			continue
		}
		if migrate == nil {
			t.Errorf("%s: no init container running `%s migrate`", s.Name, s.Name)
			continue
		}
		if migrate.Image != main.Image || len(migrate.Command) > 0 {
			t.Errorf("%s: migrate runs %q %v, want the service's own image and entrypoint", s.Name, migrate.Image, migrate.Command)
		}
		for _, v := range []string{"DATABASE_URL", "DATABASE_MIGRATE_URL"} {
			if !hasEnv(*migrate, v) {
				t.Errorf("%s: migrate has no %s", s.Name, v)
			}
		}
		if !hasEnv(*main, "DATABASE_URL") {
			t.Errorf("%s: the serving container has no DATABASE_URL", s.Name)
		}
	}
}

// backendVariables are the settings of PostgreSQL, Redis, NATS and the
// token verification: a Standalone service (the API reference page) is
// given none of them, from a Secret or a ConfigMap.
var backendVariables = []string{"DATABASE_URL", "DATABASE_MIGRATE_URL", "REDIS_URL", "REDIS_PREFIX",
	"NATS_URL", "NATS_PREFIX", "AUTH_JWKS_URL", "JWT_ISSUER", "JWT_AUDIENCE"}

// A Standalone service reads no Secret and no backend setting, and has no
// init container (no schema to migrate); the other services' needs are
// checked by TestMigrationsRunBeforeServing and TestReferencesResolve.
func TestStandaloneReadsNoBackend(t *testing.T) {
	m := loadBase(t)
	for _, s := range stack.Services {
		d, ok := m.deployments()[s.Name]
		if !s.Standalone || !ok {
			continue // TestEveryBinaryHasADeploymentAndService names a missing one
		}
		pod := d.Spec.Template.Spec
		if len(pod.InitContainers) > 0 {
			t.Errorf("%s uses no backend but has init containers", s.Name)
		}
		for _, v := range pod.Volumes {
			if v.Secret != nil {
				t.Errorf("%s uses no backend but mounts Secret %s", s.Name, v.Secret.SecretName)
			}
		}
		for _, c := range pod.Containers {
			for _, ef := range c.EnvFrom {
				if ef.SecretRef != nil {
					t.Errorf("%s, container %s: envFrom Secret %s", s.Name, c.Name, ef.SecretRef.Name)
				}
				if ef.ConfigMapRef == nil {
					continue
				}
				// A whole ConfigMap brings every key it holds.
				if cm, ok := m.configMap(ef.ConfigMapRef.Name); ok {
					for _, v := range backendVariables {
						if _, ok := cm.Data[v]; ok {
							t.Errorf("%s, container %s: envFrom ConfigMap %s brings %s", s.Name, c.Name, cm.Name, v)
						}
					}
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					t.Errorf("%s, container %s: %s from Secret %s", s.Name, c.Name, e.Name, e.ValueFrom.SecretKeyRef.Name)
				}
				if slices.Contains(backendVariables, e.Name) {
					t.Errorf("%s, container %s: sets %s", s.Name, c.Name, e.Name)
				}
			}
		}
	}
}

// Every variable the manifests set is one the READMEs' configuration
// tables document (the repository's or a service's), so a misspelt name
// fails here instead of being silently ignored by the service.
func TestEveryVariableIsDocumented(t *testing.T) {
	m := loadBase(t)
	readme, err := stack.ConfigDocs(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	documented := func(v string) bool {
		return bytes.Contains(readme, []byte("| `"+v+"`")) || bytes.Contains(readme, []byte("`"+v+"`, "))
	}
	vars := map[string]string{}
	for name, o := range m.byKind["ConfigMap"] {
		if strings.HasPrefix(name, "traefik-") || name == stack.K8sNATSConfigMap {
			continue // files, not variables
		}
		for k := range o.(*corev1.ConfigMap).Data {
			vars[k] = "ConfigMap " + name
		}
	}
	for name, d := range m.deployments() {
		pod := d.Spec.Template.Spec
		for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
			for _, e := range c.Env {
				vars[e.Name] = "Deployment " + name
			}
		}
	}
	for v, where := range vars {
		if !documented(v) {
			t.Errorf("%s sets %s, which no README's configuration table lists", where, v)
		}
	}
}

// The gateway's ConfigMaps are what gencompose renders from the table and
// the templates; every route goes to the Service of a routed binary; the
// Traefik Deployment mounts the configuration, the certificate and every
// plugin file where the static configuration and Traefik look.
func TestGateway(t *testing.T) {
	root := repoRoot(t)
	files, err := stack.GenerateK8sFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range stack.StaleFiles(root, files) {
		t.Errorf("%s is missing or out of date: run `go run ./cmd/gencompose` in deploy/", rel)
	}

	m := loadBase(t)
	cfg, ok := m.configMap(stack.K8sTraefikConfigMap)
	if !ok {
		t.Fatalf("no ConfigMap %s", stack.K8sTraefikConfigMap)
	}
	var dynamic struct {
		HTTP struct {
			Services map[string]struct {
				LoadBalancer struct {
					Servers []struct {
						URL string `json:"url"`
					} `json:"servers"`
				} `json:"loadBalancer"`
			} `json:"services"`
		} `json:"http"`
	}
	if err := yaml.Unmarshal([]byte(cfg.Data["dynamic.yml"]), &dynamic); err != nil {
		t.Fatalf("dynamic.yml: %v", err)
	}
	for _, s := range stack.Services {
		if _, ok := dynamic.HTTP.Services[s.Name]; s.Routed() && !ok {
			t.Errorf("routed service %s has no gateway service in %s", s.Name, stack.K8sTraefikConfigFile)
		}
	}
	for name, gs := range dynamic.HTTP.Services {
		for _, srv := range gs.LoadBalancer.Servers {
			u, err := url.Parse(srv.URL)
			if err != nil {
				t.Errorf("gateway service %s: %v", name, err)
				continue
			}
			ts, ok := stack.LookupService(u.Hostname())
			svc, found := m.byKind["Service"][u.Hostname()]
			if !ok || !ts.Routed() || !found {
				t.Errorf("gateway service %s sends to %s: not the Service of a routed binary", name, srv.URL)
				continue
			}
			if !slices.ContainsFunc(svc.(*corev1.Service).Spec.Ports, func(p corev1.ServicePort) bool { return fmt.Sprint(p.Port) == u.Port() }) {
				t.Errorf("gateway service %s sends to port %s, which Service %s does not expose", name, u.Port(), u.Hostname())
			}
		}
	}

	d, c := m.traefik(t)
	if !slices.Contains(c.Args, "--configFile=/etc/traefik/traefik.yml") || c.WorkingDir != "/" {
		t.Errorf("traefik: args %v, workingDir %q; want --configFile=/etc/traefik/traefik.yml in / (local plugins are under ./%s)", c.Args, c.WorkingDir, stack.PluginDir)
	}
	if got := stack.K8sGatewayConfig().DynamicFile; got != "/etc/traefik/dynamic.yml" {
		t.Errorf("the static configuration reads %s", got)
	}
	// mount path -> volume source ("configmap:name/key", "secret:name")
	mounts := map[string]string{}
	for _, vm := range c.VolumeMounts {
		for _, v := range d.Spec.Template.Spec.Volumes {
			switch {
			case v.Name != vm.Name:
			case v.ConfigMap != nil:
				mounts[vm.MountPath] = "configmap:" + v.ConfigMap.Name + "/" + vm.SubPath
			case v.Secret != nil:
				mounts[vm.MountPath] = "secret:" + v.Secret.SecretName
			}
		}
	}
	want := map[string]string{
		"/etc/traefik/traefik.yml": "configmap:" + stack.K8sTraefikConfigMap + "/traefik.yml",
		"/etc/traefik/dynamic.yml": "configmap:" + stack.K8sTraefikConfigMap + "/dynamic.yml",
		stack.K8sTLSDir:            "secret:sp-gateway-tls",
	}
	plugins, err := stack.K8sPlugins(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(plugins) == 0 {
		t.Fatal("no local plugins found")
	}
	for _, p := range plugins {
		for file := range p.Files {
			want[path.Join(p.Dir, file)] = "configmap:" + p.ConfigMap + "/" + file
		}
	}
	for mountPath, source := range want {
		if mounts[mountPath] != source {
			t.Errorf("traefik mounts %q at %s, want %s", mounts[mountPath], mountPath, source)
		}
	}
	if tls := stack.K8sGatewayConfig().TLS; tls == nil || path.Dir(tls.CertFile) != stack.K8sTLSDir || path.Base(tls.CertFile) != corev1.TLSCertKey || path.Base(tls.KeyFile) != corev1.TLSPrivateKeyKey {
		t.Errorf("the gateway reads its certificate from %+v, not the mounted sp-gateway-tls Secret", tls)
	}

	// The services' time budget is the one the gateway was rendered for.
	common, _ := m.configMap("sp-config")
	budget, err := time.ParseDuration(common.Data["REQUEST_TIMEOUT"])
	if want := stack.TimeoutsFor(stack.K8sGatewayConfig().RequestTimeout).RequestTimeout(); err != nil || budget != want {
		t.Errorf("sp-config REQUEST_TIMEOUT=%q, but the gateway's timeouts are rendered for %s", common.Data["REQUEST_TIMEOUT"], want)
	}
}

// kustomize builds the base into the same objects, and the dev overlay,
// with its example secrets, into a namespace where every Secret a pod
// needs exists with the keys it reads.
func TestKustomizeBuild(t *testing.T) {
	root := repoRoot(t)
	m := loadBase(t)
	want := 0
	for _, objs := range m.byKind {
		want += len(objs)
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(root, stack.K8sBaseDir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", stack.K8sBaseDir, err)
	}
	if res.Size() != want {
		t.Errorf("kustomize build gives %d objects, the files hold %d", res.Size(), want)
	}
	for _, r := range res.Resources() {
		if r.GetLabels()["app.kubernetes.io/part-of"] != "supportplatform" {
			t.Errorf("%s %s: no part-of label after the build", r.GetKind(), r.GetName())
		}
	}

	// The overlay in memory, its git-ignored secret files made from the
	// examples.
	mem := filesys.MakeFsInMemory()
	k8sDir := filepath.Join(root, "deploy", "k8s")
	err = filepath.WalkDir(k8sDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.go") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		target := strings.TrimSuffix(p, ".example")
		return mem.WriteFile(target, data)
	})
	if err != nil {
		t.Fatal(err)
	}
	secrets := filepath.Join(k8sDir, "overlays", "dev", "secrets")
	for _, f := range []string{"signing-key.pem", "tls.crt", "tls.key"} {
		if err := mem.WriteFile(filepath.Join(secrets, f), []byte("test "+f)); err != nil {
			t.Fatal(err)
		}
	}
	res, err = k.Run(mem, filepath.Join(k8sDir, "overlays", "dev"))
	if err != nil {
		t.Fatalf("kustomize build of the dev overlay: %v", err)
	}
	built := manifests{byKind: map[string]map[string]any{}, files: map[string]string{}}
	for _, r := range res.Resources() {
		doc, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Errorf("overlay output %s %s: %v", r.GetKind(), r.GetName(), err)
			continue
		}
		if kindOf(obj) != "Namespace" && meta(obj).Namespace != "supportplatform" {
			t.Errorf("overlay output %s %s in namespace %q", r.GetKind(), r.GetName(), meta(obj).Namespace)
		}
		if built.byKind[kindOf(obj)] == nil {
			built.byKind[kindOf(obj)] = map[string]any{}
		}
		built.byKind[kindOf(obj)][meta(obj).Name] = obj
	}
	secretHas := func(name, key string) bool {
		o, ok := built.byKind["Secret"][name]
		if !ok {
			return false
		}
		_, ok = o.(*corev1.Secret).Data[key]
		return ok || key == ""
	}
	for name, d := range built.workloads() {
		pod := d.Spec.Template.Spec
		for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
			for _, e := range c.Env {
				if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					continue
				}
				ref := e.ValueFrom.SecretKeyRef
				if !secretHas(ref.Name, ref.Key) {
					t.Errorf("overlay: Deployment %s, %s reads Secret %s key %s, which the overlay does not make", name, e.Name, ref.Name, ref.Key)
				}
			}
		}
		for _, v := range pod.Volumes {
			if v.Secret != nil && !secretHas(v.Secret.SecretName, "") {
				t.Errorf("overlay: Deployment %s mounts Secret %s, which the overlay does not make", name, v.Secret.SecretName)
			}
		}
	}
	if cm, ok := built.configMap("sp-mail-config"); !ok || !strings.HasPrefix(cm.Data["PUBLIC_BASE_URL"], "https://") || cm.Data["IMPORT_LOOKBACK"] == "" {
		t.Errorf("overlay: sp-mail-config is not the base's merged with the overlay's PUBLIC_BASE_URL: %v", cm)
	}
}

// traefik is the gateway's Deployment and its container; the test stops
// without them.
func (m manifests) traefik(t *testing.T) (*appsv1.Deployment, *corev1.Container) {
	t.Helper()
	d, ok := m.deployments()["traefik"]
	if !ok {
		t.Fatal("no Deployment traefik")
	}
	c := mainContainer(t, d)
	if c == nil {
		t.FailNow()
	}
	return d, c
}

func mainContainer(t *testing.T, d *appsv1.Deployment) *corev1.Container {
	t.Helper()
	for i, c := range d.Spec.Template.Spec.Containers {
		if c.Name == d.Name {
			return &d.Spec.Template.Spec.Containers[i]
		}
	}
	t.Errorf("Deployment %s has no container named %s", d.Name, d.Name)
	return nil
}

// containerPort resolves a port number or name against c's ports.
func containerPort(c *corev1.Container, p intstr.IntOrString) *corev1.ContainerPort {
	for i, cp := range c.Ports {
		if p.Type == intstr.String && cp.Name == p.StrVal || p.Type == intstr.Int && cp.ContainerPort == p.IntVal {
			return &c.Ports[i]
		}
	}
	return nil
}

func hasEnv(c corev1.Container, name string) bool {
	return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
}
