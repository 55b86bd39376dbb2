package stack

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"supportplatform.dev/pkg/contracts"
)

// Compose describes the docker-compose deployment: container addresses
// instead of loopback ports.
const (
	// ComposeServicePort is the port every service listens on inside its
	// container (HTTP_ADDR=:8080 in deploy/env/common.env.example).
	ComposeServicePort = 8080
	// ComposeGatewayDir is where the generated Traefik configuration for
	// compose is committed, relative to the repository root.
	ComposeGatewayDir  = "deploy/compose/traefik"
	dockerfileTemplate = "deploy/service.Dockerfile.tmpl"
	// ComposeNATSConfig is the nats service's configuration: one user per
	// service with the permissions of pkg/contracts, passwords from the
	// environment (ComposeNATSPasswordEnv).
	ComposeNATSConfig = "deploy/compose/nats/nats.conf"
	// ComposeNATSPrefix is NATS_PREFIX in deploy/env/common.env.example.
	ComposeNATSPrefix = "sp"
	// ComposeNATSNodes is the NATS cluster of docker-compose.yml: services
	// nats-0, nats-1 and nats-2, each naming itself with
	// NATSServerNameEnv, routes on NATSClusterPort.
	ComposeNATSNodes = 3
	// NATSServerNameEnv holds a containerised node's server_name.
	NATSServerNameEnv = "NATS_SERVER_NAME"
	// NATSClientPort, NATSClusterPort and NATSMonitorPort are a
	// containerised node's ports (compose and Kubernetes).
	NATSClientPort  = 4222
	NATSClusterPort = 6222
	NATSMonitorPort = 8222
)

// ComposeNATSNode is the compose service name of NATS node i.
func ComposeNATSNode(i int) string { return fmt.Sprintf("nats-%d", i) }

// containerNATSConfig is the configuration of every node of a NATS cluster
// in containers: its name from the environment, clients, routes and
// monitoring on the standard ports, JetStream in /data, routes to every
// node (host(i)), passwords from the environment.
func containerNATSConfig(nodes int, host func(i int) string) NATSConfig {
	var routes []string
	for i := range nodes {
		routes = append(routes, fmt.Sprintf("nats-route://%s:%d", host(i), NATSClusterPort))
	}
	return NATSConfig{
		ServerNameEnv: NATSServerNameEnv,
		Listen:        fmt.Sprintf("0.0.0.0:%d", NATSClientPort),
		HTTPPort:      NATSMonitorPort, // the healthcheck
		StoreDir:      "/data",
		Users:         ServiceNATSUsers(contracts.Names{Prefix: ComposeNATSPrefix}, true, ComposeNATSPasswordEnv),
		Cluster: &NATSCluster{Name: NATSClusterName, Listen: fmt.Sprintf("0.0.0.0:%d", NATSClusterPort), Routes: routes,
			Replicas: contracts.ReplicasFor(nodes)},
	}
}

// ComposeNATSPasswordEnv is the variable holding a service's NATS password
// in the nats container (deploy/env/nats.env.example).
func ComposeNATSPasswordEnv(service string) string {
	return "NATS_" + strings.ToUpper(service) + "_PASSWORD"
}

// ComposeGatewayConfig is the gateway configuration of the compose
// deployment: Traefik's own default certificate, the access log on stdout,
// every routed service at http://<service>:8080.
func ComposeGatewayConfig() GatewayConfig { return containerGatewayConfig(ComposeServicePort) }

// containerGatewayConfig is the gateway of a deployment in containers
// (compose, Kubernetes): Traefik in its own container, the access log on
// stdout, every routed service reached by its name at servicePort.
func containerGatewayConfig(servicePort int) GatewayConfig {
	return GatewayConfig{
		WebAddress:       ":8080",
		WebSecureAddress: ":8443",
		DynamicFile:      "/etc/traefik/dynamic.yml",
		LogLevel:         "INFO",
		Routes: ServiceRoutes(Services, func(s Service) string {
			return fmt.Sprintf("http://%s:%d", s.Name, servicePort)
		}),
		RateLimit: DefaultRateLimit,
	}
}

// DockerfilePath is the Dockerfile of a service, relative to the
// repository root.
func DockerfilePath(s Service) string { return "deploy/" + s.Name + ".Dockerfile" }

// GenerateComposeFiles renders every file the compose deployment derives
// from the service table: the Traefik static and dynamic configuration and
// one Dockerfile per service. Keys are paths relative to repoRoot.
func GenerateComposeFiles(repoRoot string) (map[string][]byte, error) {
	static, dynamic, err := RenderGatewayConfig(filepath.Join(repoRoot, "gateway"), ComposeGatewayConfig())
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		ComposeGatewayDir + "/traefik.yml": static,
		ComposeGatewayDir + "/dynamic.yml": dynamic,
		ComposeNATSConfig:                  RenderNATSConfig(containerNATSConfig(ComposeNATSNodes, ComposeNATSNode)),
	}
	tmpl, err := template.ParseFiles(filepath.Join(repoRoot, filepath.FromSlash(dockerfileTemplate)))
	if err != nil {
		return nil, err
	}
	for _, s := range Services {
		var b bytes.Buffer
		data := struct {
			Service
			ModuleDir, CmdPackage, Tags string
			Port                        int
		}{s, s.ModuleDir(), s.CmdPackage(), BuildTags, ComposeServicePort}
		if err := tmpl.Execute(&b, data); err != nil {
			return nil, fmt.Errorf("%s: %w", DockerfilePath(s), err)
		}
		files[DockerfilePath(s)] = b.Bytes()
	}
	return files, nil
}

// StaleFiles are the paths of files (GenerateComposeFiles,
// GenerateK8sFiles: relative to repoRoot) whose committed copy is missing
// or differs from the generated one, sorted.
func StaleFiles(repoRoot string, files map[string][]byte) []string {
	var stale []string
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		old, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(rel)))
		if err != nil || !bytes.Equal(old, files[rel]) {
			stale = append(stale, rel)
		}
	}
	return stale
}
