package k8s

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"supportplatform.dev/deploy/stack"
)

// cnpgCluster and cnpgPooler are the fields of CloudNativePG's Cluster and
// Pooler (postgresql.cnpg.io/v1) the production overlay sets; decoding is
// strict, so a field outside them (a typo) fails.
type cnpgCluster struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		Instances             int    `json:"instances"`
		ImageName             string `json:"imageName"`
		PrimaryUpdateStrategy string `json:"primaryUpdateStrategy"`
		MinSyncReplicas       int    `json:"minSyncReplicas"`
		MaxSyncReplicas       int    `json:"maxSyncReplicas"`
		EnableSuperuserAccess bool   `json:"enableSuperuserAccess"`
		PostgreSQL            struct {
			Parameters map[string]string `json:"parameters"`
		} `json:"postgresql"`
		Bootstrap struct {
			InitDB struct {
				Database string                `json:"database"`
				Owner    string                `json:"owner"`
				Secret   struct{ Name string } `json:"secret"`
			} `json:"initdb"`
		} `json:"bootstrap"`
		Managed struct {
			Roles []struct {
				Name           string                `json:"name"`
				Ensure         string                `json:"ensure"`
				Login          bool                  `json:"login"`
				PasswordSecret struct{ Name string } `json:"passwordSecret"`
			} `json:"roles"`
		} `json:"managed"`
		Storage    struct{ Size string }       `json:"storage"`
		WalStorage struct{ Size string }       `json:"walStorage"`
		Resources  corev1.ResourceRequirements `json:"resources"`
		Affinity   struct {
			EnablePodAntiAffinity bool   `json:"enablePodAntiAffinity"`
			TopologyKey           string `json:"topologyKey"`
			PodAntiAffinityType   string `json:"podAntiAffinityType"`
		} `json:"affinity"`
		Monitoring struct {
			EnablePodMonitor bool `json:"enablePodMonitor"`
		} `json:"monitoring"`
	} `json:"spec"`
}

type cnpgPooler struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		Cluster   struct{ Name string } `json:"cluster"`
		Instances int                   `json:"instances"`
		Type      string                `json:"type"`
		PgBouncer struct {
			PoolMode   string            `json:"poolMode"`
			Parameters map[string]string `json:"parameters"`
		} `json:"pgbouncer"`
	} `json:"spec"`
}

// sessions are the connections of DATABASE_SESSION_URL a replica of a
// service holds: its outbox relay's LISTEN (boot.Options.Outbox), or
// importreply's folder locks (IMPORT_CONCURRENCY, "" read from
// sp-mail-config).
var sessions = map[string]string{"auth": "1", "topics": "1", "mailingest": "1", "tickets": "1", "importreply": "IMPORT_CONCURRENCY"}

// Reserves of the budget (deploy/README.md): pods in their migrate init
// container at once (each one direct connection, closed before its
// service's pool opens), and the administrators' and the operator's own.
const (
	migrationReserve = 20
	adminReserve     = 10
)

// The production overlay builds; every service with a schema reaches
// PostgreSQL through the CloudNativePG Pooler in transaction mode with an
// explicit pool size, keeps its sessions on DATABASE_SESSION_URL, and
// every Secret key it reads is documented; the cluster has replicas and
// the services' roles; and the connection budget of deploy/README.md
// holds: the pooler's server connections, the sessions of every replica
// (HPA maximum and rollout surge), the migrations and the administrators
// fit in max_connections, as the README says in figures.
func TestProductionOverlay(t *testing.T) {
	root := repoRoot(t)
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(root, "deploy", "k8s", "overlays", "production"))
	if err != nil {
		t.Fatalf("kustomize build of the production overlay: %v", err)
	}
	built := manifests{byKind: map[string]map[string]any{}, files: map[string]string{}}
	var clusters []cnpgCluster
	var poolers []cnpgPooler
	for _, r := range res.Resources() {
		doc, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		if r.GetNamespace() != "supportplatform" && r.GetKind() != "Namespace" {
			t.Errorf("%s %s in namespace %q", r.GetKind(), r.GetName(), r.GetNamespace())
		}
		switch r.GetApiVersion() + "/" + r.GetKind() {
		case "postgresql.cnpg.io/v1/Cluster":
			var c cnpgCluster
			if err := yaml.UnmarshalStrict(doc, &c); err != nil {
				t.Errorf("Cluster %s: %v", r.GetName(), err)
			}
			clusters = append(clusters, c)
			continue
		case "postgresql.cnpg.io/v1/Pooler":
			var p cnpgPooler
			if err := yaml.UnmarshalStrict(doc, &p); err != nil {
				t.Errorf("Pooler %s: %v", r.GetName(), err)
			}
			poolers = append(poolers, p)
			continue
		}
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Errorf("overlay output %s %s: %v", r.GetKind(), r.GetName(), err)
			continue
		}
		if built.byKind[kindOf(obj)] == nil {
			built.byKind[kindOf(obj)] = map[string]any{}
		}
		built.byKind[kindOf(obj)][meta(obj).Name] = obj
	}
	if len(clusters) != 1 || len(poolers) != 1 {
		t.Fatalf("%d Clusters and %d Poolers, want one of each", len(clusters), len(poolers))
	}
	cluster, pooler := clusters[0], poolers[0]
	documented := documentedSecrets(t)
	// Secrets the operator makes itself.
	generated := map[string][]string{cluster.Metadata.Name + "-superuser": {"username", "password"}}

	// The cluster: a primary and replicas, the migrator owning the
	// database, every service role managed with a documented password.
	if cluster.Spec.Instances < 3 || cluster.Spec.MinSyncReplicas < 1 {
		t.Errorf("Cluster: %d instances, %d synchronous replicas; want a primary and two replicas, one synchronous", cluster.Spec.Instances, cluster.Spec.MinSyncReplicas)
	}
	checkSecret := func(where, name string, keys ...string) {
		have, ok := documented[name]
		if !ok {
			have, ok = generated[name]
		}
		if !ok {
			t.Errorf("%s: Secret %s is not documented (deploy/README.md: a `kubectl create secret ... %s` command)", where, name, name)
			return
		}
		for _, k := range keys {
			if !slices.Contains(have, k) {
				t.Errorf("%s: Secret %s key %s is not in its deploy/README.md command (keys %v)", where, name, k, have)
			}
		}
	}
	checkSecret("Cluster bootstrap", cluster.Spec.Bootstrap.InitDB.Secret.Name, "username", "password")
	var roles []string
	for _, r := range cluster.Spec.Managed.Roles {
		roles = append(roles, r.Name)
		if !r.Login || r.Ensure != "present" {
			t.Errorf("role %s: login %v, ensure %q", r.Name, r.Login, r.Ensure)
		}
		checkSecret("role "+r.Name, r.PasswordSecret.Name, "username", "password")
	}
	for _, s := range stack.Services {
		if role := s.DatabaseRole(); role != "" && !slices.Contains(roles, role) {
			t.Errorf("Cluster: role %s of %s is not managed", role, s.Name)
		}
	}
	if pooler.Spec.Cluster.Name != cluster.Metadata.Name || pooler.Spec.Type != "rw" || pooler.Spec.PgBouncer.PoolMode != "transaction" {
		t.Errorf("Pooler %s: cluster %s, type %s, mode %s; want the cluster's primary in transaction mode", pooler.Metadata.Name,
			pooler.Spec.Cluster.Name, pooler.Spec.Type, pooler.Spec.PgBouncer.PoolMode)
	}
	num := func(where string, m map[string]string, key string) int {
		n, err := strconv.Atoi(m[key])
		if err != nil {
			t.Fatalf("%s: %s %q: %v", where, key, m[key], err)
		}
		return n
	}
	maxConnections := num("Cluster", cluster.Spec.PostgreSQL.Parameters, "max_connections")
	pb := pooler.Spec.PgBouncer.Parameters
	poolSize, maxDB, maxClient := num("Pooler", pb, "default_pool_size"), num("Pooler", pb, "max_db_connections"), num("Pooler", pb, "max_client_conn")
	var schemaRoles []string
	for _, s := range stack.Services {
		if r := s.DatabaseRole(); r != "" && !slices.Contains(schemaRoles, r) {
			schemaRoles = append(schemaRoles, r)
		}
	}
	users := len(schemaRoles)
	servers := pooler.Spec.Instances * min(maxDB, users*poolSize)

	mailCfg, ok := built.configMap("sp-mail-config")
	if !ok {
		t.Fatal("no ConfigMap sp-mail-config")
	}
	hpas := map[string]int{}
	for _, o := range built.byKind["HorizontalPodAutoscaler"] {
		h := o.(*autoscalingv2.HorizontalPodAutoscaler)
		hpas[h.Spec.ScaleTargetRef.Name] = int(h.Spec.MaxReplicas)
	}
	var clients, sessionConns int
	var lines []string
	for _, s := range stack.Services {
		if s.Schema == "" {
			continue
		}
		d, ok := built.deployments()[s.Name]
		if !ok {
			t.Errorf("no Deployment %s", s.Name)
			continue
		}
		c := mainContainer(t, d)
		if c == nil {
			continue
		}
		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			env[e.Name] = e
		}
		if env["DATABASE_POOLER"].Value != "transaction" {
			t.Errorf("%s: DATABASE_POOLER %q, want transaction", s.Name, env["DATABASE_POOLER"].Value)
		}
		conns, err := strconv.Atoi(env["DATABASE_MAX_CONNS"].Value)
		if err != nil || conns <= 0 {
			t.Errorf("%s: DATABASE_MAX_CONNS %q: set the pool's size", s.Name, env["DATABASE_MAX_CONNS"].Value)
		}
		for _, v := range []string{"DATABASE_URL", "DATABASE_SESSION_URL"} {
			e, ok := env[v]
			switch {
			case !ok && v == "DATABASE_SESSION_URL" && sessions[s.Name] == "":
			case !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil:
				t.Errorf("%s: %s is not read from a Secret", s.Name, v)
			default:
				checkSecret(s.Name+", "+v, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
			}
		}
		replicas := 1
		if d.Spec.Replicas != nil {
			replicas = int(*d.Spec.Replicas)
		}
		if n, ok := hpas[s.Name]; ok {
			replicas = n
		}
		surge := 0
		if ru := d.Spec.Strategy.RollingUpdate; d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType && ru != nil && ru.MaxSurge != nil {
			surge, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, replicas, true)
		}
		pods := replicas + surge
		perPod := 0
		switch v := sessions[s.Name]; v {
		case "":
		case "1":
			perPod = 1
		default:
			perPod, err = strconv.Atoi(mailCfg.Data[v])
			if err != nil {
				t.Fatalf("sp-mail-config %s %q", v, mailCfg.Data[v])
			}
		}
		clients += pods * conns
		sessionConns += pods * perPod
		lines = append(lines, fmt.Sprintf("%s: %d pods x (%d pooled + %d sessions)", s.Name, pods, conns, perPod))
	}
	total := servers + sessionConns + migrationReserve + adminReserve
	t.Logf("budget: %s; pooler %d x min(%d, %d roles x %d) = %d server connections; sessions %d; migrations %d; administrators %d; total %d of max_connections %d; clients of the pooler %d of max_client_conn %d per pod",
		strings.Join(lines, ", "), pooler.Spec.Instances, maxDB, users, poolSize, servers, sessionConns, migrationReserve, adminReserve, total, maxConnections, clients, maxClient)
	if total > maxConnections {
		t.Errorf("connection budget %d exceeds max_connections %d", total, maxConnections)
	}
	if clients > maxClient {
		t.Errorf("%d client connections could reach one pooler pod, more than max_client_conn %d", clients, maxClient)
	}
	readme, err := os.ReadFile(filepath.Join(root, "deploy", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, figure := range []string{
		fmt.Sprintf("%d + %d + %d + %d = %d ≤ %d", servers, sessionConns, migrationReserve, adminReserve, total, maxConnections),
		fmt.Sprintf("%d client connections", clients),
	} {
		if !strings.Contains(string(readme), figure) {
			t.Errorf("deploy/README.md does not give the production budget as computed: %q", figure)
		}
	}
}
