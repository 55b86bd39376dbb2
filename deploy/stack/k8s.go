package stack

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// ScaledServices are the binaries of the ingest path (the mail provider's
// callbacks and the folder imports), which scale apart from the API: more
// than one replica in docker-compose.yml, and a HorizontalPodAutoscaler and
// a PodDisruptionBudget in deploy/k8s/base.
var ScaledServices = []string{"mailingest", "importreply"}

// The Kubernetes deployment (deploy/k8s/base): every binary behind a
// ClusterIP Service of its own name on K8sServicePort, Traefik reading its
// configuration from ConfigMaps that gencompose renders from the service
// table, and the TLS certificate from a Secret.
const (
	// K8sBaseDir is the kustomize base, relative to the repository root.
	K8sBaseDir = "deploy/k8s/base"
	// K8sServicePort is the port of every service's Service and container
	// (HTTP_ADDR=:8080 in the sp-config ConfigMap).
	K8sServicePort = 8080
	// K8sTraefikConfigMap holds traefik.yml and dynamic.yml, mounted at
	// /etc/traefik.
	K8sTraefikConfigMap = "traefik-config"
	// K8sTraefikConfigFile and K8sTraefikPluginsFile are the generated
	// manifests, relative to the repository root.
	K8sTraefikConfigFile  = K8sBaseDir + "/traefik/config.yaml"
	K8sTraefikPluginsFile = K8sBaseDir + "/traefik/plugins.yaml"
	// K8sTLSDir is where the gateway's certificate Secret (type
	// kubernetes.io/tls) is mounted.
	K8sTLSDir = "/etc/traefik/tls"
	// K8sPluginRoot is where Traefik finds the local plugins: ./plugins-local
	// below its working directory, /.
	K8sPluginRoot = "/" + PluginDir
	// K8sNATSConfigFile is the generated ConfigMap K8sNATSConfigMap with
	// nats.conf, which every pod of the nats StatefulSet mounts at
	// /etc/nats (deploy/k8s/base/nats/nats.yaml).
	K8sNATSConfigFile = K8sBaseDir + "/nats/config.yaml"
	K8sNATSConfigMap  = "nats-config"
	// K8sNATSStatefulSet is the NATS cluster, K8sNATSHeadless its headless
	// Service (pod i is K8sNATSNode(i)); K8sNATSNodes pods.
	K8sNATSStatefulSet = "nats"
	K8sNATSHeadless    = "nats-headless"
	K8sNATSNodes       = 3
	// K8sNATSUsersSecret holds NATS_<SERVICE>_PASSWORD of every service
	// (ComposeNATSPasswordEnv), read by the NATS pods.
	K8sNATSUsersSecret = "sp-nats-users"
)

// K8sNATSNode is the DNS name (in the namespace) of NATS pod i.
func K8sNATSNode(i int) string {
	return fmt.Sprintf("%s-%d.%s", K8sNATSStatefulSet, i, K8sNATSHeadless)
}

// K8sGatewayConfig is the gateway configuration of the Kubernetes
// deployment: every routed service at http://<service>:8080 (its Service),
// the certificate from the mounted TLS Secret, the access log on stdout.
func K8sGatewayConfig() GatewayConfig {
	c := containerGatewayConfig(K8sServicePort)
	c.TLS = &DevTLS{CertFile: K8sTLSDir + "/tls.crt", KeyFile: K8sTLSDir + "/tls.key"}
	return c
}

// K8sPlugin is one local Traefik plugin as the Kubernetes deployment
// ships it: a ConfigMap whose keys are the plugin's files, each mounted
// (subPath, so the directory holds plain files) at Dir/<key>.
type K8sPlugin struct {
	Name      string // the plugin's directory name
	ConfigMap string // traefik-plugin-<name>
	Dir       string // mount directory in the Traefik container
	Files     map[string][]byte
}

// K8sPlugins reads the local plugins under gateway/plugins-local: every
// file but the tests.
func K8sPlugins(repoRoot string) ([]K8sPlugin, error) {
	root := filepath.Join(repoRoot, "gateway", PluginDir)
	byDir := map[string]*K8sPlugin{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(d.Name(), "_test.go") {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		dir := path.Dir(filepath.ToSlash(rel))
		pl := byDir[dir]
		if pl == nil {
			name := path.Base(dir)
			pl = &K8sPlugin{Name: name, ConfigMap: "traefik-plugin-" + name, Dir: path.Join(K8sPluginRoot, dir), Files: map[string][]byte{}}
			byDir[dir] = pl
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		pl.Files[d.Name()] = data
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []K8sPlugin
	for _, dir := range slices.Sorted(maps.Keys(byDir)) {
		out = append(out, *byDir[dir])
	}
	return out, nil
}

// GenerateK8sFiles renders the manifests of deploy/k8s/base that derive
// from the service table and the gateway templates: the Traefik
// configuration ConfigMap and one ConfigMap per local plugin. Keys are
// paths relative to repoRoot.
func GenerateK8sFiles(repoRoot string) (map[string][]byte, error) {
	static, dynamic, err := RenderGatewayConfig(filepath.Join(repoRoot, "gateway"), K8sGatewayConfig())
	if err != nil {
		return nil, err
	}
	config, err := renderConfigMaps([]configMap{newConfigMap(K8sTraefikConfigMap, map[string]string{
		"traefik.yml": string(static),
		"dynamic.yml": string(dynamic),
	})})
	if err != nil {
		return nil, err
	}
	plugins, err := K8sPlugins(repoRoot)
	if err != nil {
		return nil, err
	}
	var cms []configMap
	for _, p := range plugins {
		data := map[string]string{}
		for name, b := range p.Files {
			data[name] = string(b)
		}
		cms = append(cms, newConfigMap(p.ConfigMap, data))
	}
	pluginsYAML, err := renderConfigMaps(cms)
	if err != nil {
		return nil, err
	}
	natsCM := newConfigMap(K8sNATSConfigMap, map[string]string{
		"nats.conf": string(RenderNATSConfig(containerNATSConfig(K8sNATSNodes, K8sNATSNode))),
	})
	natsCM.Metadata.Labels = map[string]string{"app.kubernetes.io/name": K8sNATSStatefulSet}
	natsConfig, err := renderConfigMaps([]configMap{natsCM})
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		K8sTraefikConfigFile:  config,
		K8sTraefikPluginsFile: pluginsYAML,
		K8sNATSConfigFile:     natsConfig,
	}, nil
}

type configMap struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
}

func newConfigMap(name string, data map[string]string) configMap {
	cm := configMap{APIVersion: "v1", Kind: "ConfigMap", Data: data}
	cm.Metadata.Name = name
	cm.Metadata.Labels = map[string]string{"app.kubernetes.io/name": "traefik"}
	return cm
}

func renderConfigMaps(cms []configMap) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# Generated by `go run ./cmd/gencompose` (in deploy/) from the gateway\n" +
		"# templates, the local plugins and the service table; edit those, not this file.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	for _, cm := range cms {
		if err := enc.Encode(cm); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
