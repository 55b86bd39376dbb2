// Package compose checks the docker-compose deployment without a Docker
// engine: docker-compose.yml must load with the reference loader
// (compose-go), and the generated gateway configuration must route only to
// services that the compose file defines.
package compose

import (
	"bytes"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"gopkg.in/yaml.v3"

	"supportplatform.dev/deploy/stack"
)

func loadProject(t *testing.T) (string, *types.Project) {
	t.Helper()
	root, err := stack.FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	opts, err := cli.NewProjectOptions(
		[]string{filepath.Join(root, "docker-compose.yml")},
		cli.WithWorkingDirectory(root),
		cli.WithEnv(nil), // the developer's environment must not change the result
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		t.Fatal(err)
	}
	project, err := opts.LoadProject(t.Context())
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	return root, project
}

func TestComposeFileLoads(t *testing.T) {
	root, p := loadProject(t)
	for _, name := range []string{"postgres", "redis", "nats-0", "nats-1", "nats-2", "traefik"} {
		if _, ok := p.Services[name]; !ok {
			t.Errorf("service %s missing", name)
		}
	}
	if img := p.Services["traefik"].Image; !strings.HasPrefix(img, "traefik:v3.6") {
		t.Errorf("traefik image %q, want traefik:v3.6", img)
	}
	// JetStream, the routes and the users are in the generated
	// configuration (TestGeneratedFilesUpToDate; deploy/stack checks it
	// with nats-server). Each node names itself and has its own store.
	stores := map[string]bool{}
	for i := range stack.ComposeNATSNodes {
		name := stack.ComposeNATSNode(i)
		nats := p.Services[name]
		if cmd := nats.Command; !slices.Equal(cmd, types.ShellCommand{"-c", "/etc/nats/nats.conf"}) {
			t.Errorf("%s command %v does not read its configuration", name, cmd)
		}
		if got := envValue(nats, stack.NATSServerNameEnv); got != name {
			t.Errorf("%s: %s=%q, want its own name", name, stack.NATSServerNameEnv, got)
		}
		mounted := false
		for _, v := range nats.Volumes {
			mounted = mounted || v.Target == "/etc/nats/nats.conf" && v.Source == filepath.Join(root, stack.ComposeNATSConfig)
			if v.Target == "/data" {
				if stores[v.Source] {
					t.Errorf("%s shares its JetStream volume %s", name, v.Source)
				}
				stores[v.Source] = true
			}
		}
		if !mounted {
			t.Errorf("%s does not mount %s at /etc/nats/nats.conf: %+v", name, stack.ComposeNATSConfig, nats.Volumes)
		}
		if !strings.HasPrefix(nats.Image, "nats:") || nats.HealthCheck == nil {
			t.Errorf("%s: image %q, healthcheck %v", name, nats.Image, nats.HealthCheck)
		}
	}
	if len(stores) != stack.ComposeNATSNodes {
		t.Errorf("%d JetStream volumes for %d nodes", len(stores), stack.ComposeNATSNodes)
	}
	if _, ok := p.Services["nats"]; ok {
		t.Error("a single nats service beside the cluster")
	}
}

// Least privilege: each service connects to PostgreSQL as its own role and
// migrates as postgres, and to NATS as its own user with the password the
// nats container gives that user.
func TestServicesUseTheirOwnCredentials(t *testing.T) {
	_, p := loadProject(t)
	pgPassword := envValue(p.Services["postgres"], "POSTGRES_PASSWORD")
	for _, s := range stack.Services {
		cs, ok := p.Services[s.Name]
		if !ok {
			continue // TestEveryBinaryIsAComposeService names it
		}
		if s.Standalone {
			for _, key := range []string{"DATABASE_URL", "DATABASE_MIGRATE_URL", "REDIS_URL", "NATS_URL"} {
				if v := envValue(cs, key); v != "" {
					t.Errorf("%s uses no backend but has %s=%s", s.Name, key, v)
				}
			}
			continue
		}
		if envValue(cs, "NATS_PREFIX") != stack.ComposeNATSPrefix {
			t.Errorf("%s: NATS_PREFIX=%q, but nats.conf is generated for %q", s.Name, envValue(cs, "NATS_PREFIX"), stack.ComposeNATSPrefix)
		}
		if got := envValue(cs, "NATS_REPLICAS"); got != strconv.Itoa(stack.ComposeNATSNodes) {
			t.Errorf("%s: NATS_REPLICAS=%q with a cluster of %d", s.Name, got, stack.ComposeNATSNodes)
		}
		// Every node, each with the service's own user.
		urls := strings.Split(envValue(cs, "NATS_URL"), ",")
		if len(urls) != stack.ComposeNATSNodes {
			t.Errorf("%s: NATS_URL lists %d servers, want the %d nodes", s.Name, len(urls), stack.ComposeNATSNodes)
		}
		for i, raw := range urls {
			u, err := url.Parse(raw)
			if err != nil {
				t.Errorf("%s: NATS_URL: %v", s.Name, err)
				continue
			}
			node := stack.ComposeNATSNode(i)
			if u.Host != node+":"+strconv.Itoa(stack.NATSClientPort) {
				t.Errorf("%s: NATS_URL server %d is %s, want %s", s.Name, i, u.Host, node)
			}
			pw, _ := u.User.Password()
			want := envValue(p.Services[node], stack.ComposeNATSPasswordEnv(s.Name))
			if u.User.Username() != s.Name || want == "" || pw != want {
				t.Errorf("%s: NATS_URL user %q with password %q on %s, want user %s with %s of that node (%q)",
					s.Name, u.User.Username(), pw, node, s.Name, stack.ComposeNATSPasswordEnv(s.Name), want)
			}
		}

		if s.Schema == "" {
			if v := envValue(cs, "DATABASE_URL"); v != "" {
				t.Errorf("%s has no schema but DATABASE_URL=%s", s.Name, v)
			}
			continue
		}
		db, err := url.Parse(envValue(cs, "DATABASE_URL"))
		if err != nil {
			t.Errorf("%s: DATABASE_URL: %v", s.Name, err)
			continue
		}
		if pw, ok := db.User.Password(); db.User.Username() != s.DatabaseRole() || !ok || pw == "" {
			t.Errorf("%s: DATABASE_URL connects as %q (password set: %v), want its own role %s with a password",
				s.Name, db.User.Username(), ok, s.DatabaseRole())
		}
		mig, err := url.Parse(envValue(cs, "DATABASE_MIGRATE_URL"))
		if err != nil {
			t.Errorf("%s: DATABASE_MIGRATE_URL: %v", s.Name, err)
			continue
		}
		if pw, _ := mig.User.Password(); mig.User.Username() != "postgres" || pw != pgPassword || mig.Host != db.Host || mig.Path != db.Path {
			t.Errorf("%s: DATABASE_MIGRATE_URL=%s, want postgres with POSTGRES_PASSWORD on the database of DATABASE_URL", s.Name, mig.Redacted())
		}
	}
}

// The committed generated files are what the table and templates produce.
func TestGeneratedFilesUpToDate(t *testing.T) {
	root, _ := loadProject(t)
	files, err := stack.GenerateComposeFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range stack.StaleFiles(root, files) {
		t.Errorf("%s is missing or out of date: run `go run ./cmd/gencompose` in deploy/", rel)
	}
}

// Every route target of the compose gateway is a compose service that
// listens where the route sends requests, and every service of the table is
// built from its generated Dockerfile.
func TestGatewayRoutesTargetComposeServices(t *testing.T) {
	root, p := loadProject(t)

	var dynamic struct {
		HTTP struct {
			Routers map[string]struct {
				Service string `yaml:"service"`
			} `yaml:"routers"`
			Services map[string]struct {
				LoadBalancer struct {
					Servers []struct {
						URL string `yaml:"url"`
					} `yaml:"servers"`
				} `yaml:"loadBalancer"`
			} `yaml:"services"`
		} `yaml:"http"`
	}
	data, err := os.ReadFile(filepath.Join(root, stack.ComposeGatewayDir, "dynamic.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &dynamic); err != nil {
		t.Fatalf("dynamic.yml: %v", err)
	}
	if len(dynamic.HTTP.Services) == 0 {
		t.Fatal("dynamic.yml defines no services")
	}
	for name, svc := range dynamic.HTTP.Services {
		if len(svc.LoadBalancer.Servers) == 0 {
			t.Errorf("gateway service %s has no servers", name)
		}
		for _, s := range svc.LoadBalancer.Servers {
			u, err := url.Parse(s.URL)
			if err != nil {
				t.Errorf("gateway service %s: %v", name, err)
				continue
			}
			cs, ok := p.Services[u.Hostname()]
			if !ok {
				t.Errorf("gateway service %s targets %s, which is not a compose service", name, s.URL)
				continue
			}
			_, port, _ := net.SplitHostPort(envValue(cs, "HTTP_ADDR"))
			if port != u.Port() {
				t.Errorf("gateway sends %s to port %s but the container listens on HTTP_ADDR=%q", name, u.Port(), envValue(cs, "HTTP_ADDR"))
			}
		}
	}
	for name, r := range dynamic.HTTP.Routers {
		if _, ok := dynamic.HTTP.Services[r.Service]; !ok && !strings.HasSuffix(r.Service, "@internal") {
			t.Errorf("router %s uses undefined service %s", name, r.Service)
		}
	}
	// Every upstream is a routed service of the table, so the gateway sends
	// nothing to a worker or to infrastructure.
	for name, svc := range dynamic.HTTP.Services {
		for _, srv := range svc.LoadBalancer.Servers {
			u, _ := url.Parse(srv.URL)
			if ts, ok := stack.LookupService(u.Hostname()); !ok || !ts.Routed() {
				t.Errorf("gateway service %s sends to %s, which is not a routed service of the table", name, srv.URL)
			}
		}
	}

	for _, s := range stack.Services {
		cs, ok := p.Services[s.Name]
		if !ok {
			t.Errorf("table service %s is not in docker-compose.yml", s.Name)
			continue
		}
		if cs.Build == nil || filepath.Clean(cs.Build.Dockerfile) != filepath.Join(root, stack.DockerfilePath(s)) && cs.Build.Dockerfile != stack.DockerfilePath(s) {
			t.Errorf("%s: build %+v, want dockerfile %s", s.Name, cs.Build, stack.DockerfilePath(s))
		}
		if s.Routed() {
			if _, ok := dynamic.HTTP.Services[s.Name]; !ok {
				t.Errorf("routed service %s has no gateway service", s.Name)
			}
		}
	}
}

// Every URL a service is configured with points at a compose service.
func TestServiceEnvironmentTargetsComposeServices(t *testing.T) {
	_, p := loadProject(t)
	for _, s := range stack.Services {
		if s.Standalone {
			continue // no backend (TestServicesUseTheirOwnCredentials)
		}
		cs, ok := p.Services[s.Name]
		if !ok {
			continue // TestEveryBinaryIsAComposeService names it
		}
		keys := []string{"REDIS_URL", "NATS_URL", "AUTH_JWKS_URL"}
		if s.Schema != "" {
			keys = append(keys, "DATABASE_URL", "DATABASE_MIGRATE_URL")
		}
		for _, key := range keys {
			// NATS_URL lists the cluster's nodes, comma-separated.
			for _, v := range strings.Split(envValue(cs, key), ",") {
				u, err := url.Parse(v)
				if err != nil || u.Hostname() == "" {
					t.Errorf("%s: %s=%q is not a URL", s.Name, key, v)
					continue
				}
				if _, ok := p.Services[u.Hostname()]; !ok {
					t.Errorf("%s: %s=%s names no compose service", s.Name, key, v)
				}
			}
		}
	}
}

// The gateway container mounts the generated configuration and the plugin
// where the static configuration and Traefik's plugin loader look.
func TestTraefikMounts(t *testing.T) {
	root, p := loadProject(t)
	mounts := map[string]string{}
	for _, v := range p.Services["traefik"].Volumes {
		if _, err := os.Stat(v.Source); err != nil {
			t.Errorf("traefik mounts %s: %v", v.Source, err)
		}
		mounts[v.Target] = v.Source
	}
	want := map[string]string{
		"/etc/traefik/traefik.yml": filepath.Join(root, stack.ComposeGatewayDir, "traefik.yml"),
		"/etc/traefik/dynamic.yml": filepath.Join(root, stack.ComposeGatewayDir, "dynamic.yml"),
		"/" + stack.PluginDir:      filepath.Join(root, "gateway", stack.PluginDir),
	}
	for target, source := range want {
		if mounts[target] != source {
			t.Errorf("traefik mount %s = %q, want %q", target, mounts[target], source)
		}
	}
	if p.Services["traefik"].WorkingDir != "/" {
		t.Errorf("traefik working_dir %q: local plugins are found under ./plugins-local", p.Services["traefik"].WorkingDir)
	}
	if got := stack.ComposeGatewayConfig().DynamicFile; got != "/etc/traefik/dynamic.yml" {
		t.Errorf("static configuration reads %s", got)
	}
}

func envValue(s types.ServiceConfig, key string) string {
	if v := s.Environment[key]; v != nil {
		return *v
	}
	return ""
}

// Every binary of the service table is a compose service that compose can
// build, check, order and configure: built from its generated Dockerfile, a
// healthcheck running its own binary's `healthcheck`, depends_on with
// conditions (infrastructure healthy; auth healthy for the routed
// services, whose requests need its JWKS; the service that migrates a
// shared schema healthy for the others of that schema), env files that
// exist, and no fixed container name or host port, so that it scales.
// A Standalone service (the API reference page) waits for nothing and reads
// no common.env, which holds the backends' URLs: only its own env file.
func TestEveryBinaryIsAComposeService(t *testing.T) {
	root, p := loadProject(t)
	for _, s := range stack.Services {
		cs, ok := p.Services[s.Name]
		if !ok {
			t.Errorf("service table entry %s has no block in docker-compose.yml: add one with build, healthcheck, depends_on and env_file", s.Name)
			continue
		}
		if cs.Build == nil {
			t.Errorf("%s: no build", s.Name)
		}

		hc := cs.HealthCheck
		wantTest := types.HealthCheckTest{"CMD", "/usr/local/bin/" + s.Name, "healthcheck"}
		switch {
		case hc == nil || hc.Disable:
			t.Errorf("%s: no healthcheck; want test %q", s.Name, wantTest)
		case !slices.Equal(hc.Test, wantTest):
			t.Errorf("%s: healthcheck test %q, want %q (the binary checks its own /readyz)", s.Name, hc.Test, wantTest)
		case hc.Interval == nil || hc.Timeout == nil || hc.Retries == nil:
			t.Errorf("%s: healthcheck without interval, timeout or retries: %+v", s.Name, hc)
		}

		for dep, want := range requiredDependencies(s) {
			d, ok := cs.DependsOn[dep]
			if !ok || d.Condition != want {
				t.Errorf("%s: depends_on %s with condition %q, want %q", s.Name, dep, d.Condition, want)
			}
		}
		for dep, d := range cs.DependsOn {
			if d.Condition != types.ServiceConditionHealthy && d.Condition != types.ServiceConditionCompletedSuccessfully {
				t.Errorf("%s: depends_on %s with condition %q: start only after it is healthy", s.Name, dep, d.Condition)
			}
		}

		wantEnv := []string{"deploy/env/common.env.example", "deploy/env/" + s.Name + ".env.example"}
		if s.Standalone {
			wantEnv = wantEnv[1:]
		}
		var envFiles []string
		for _, f := range cs.EnvFiles {
			envFiles = append(envFiles, f.Path)
			if _, err := os.Stat(f.Path); err != nil {
				t.Errorf("%s: env_file %s: %v", s.Name, f.Path, err)
			}
		}
		for _, w := range wantEnv {
			if !slices.Contains(envFiles, filepath.Join(root, w)) {
				t.Errorf("%s: env_file %v does not include %s", s.Name, envFiles, w)
			}
		}
		if s.Standalone {
			// Its env files are all it reads: nothing of common.env's
			// backends, nor a dependency on one.
			if slices.Contains(envFiles, filepath.Join(root, "deploy/env/common.env.example")) {
				t.Errorf("%s uses no backend but reads common.env.example (the backends' URLs)", s.Name)
			}
			for dep := range cs.DependsOn {
				t.Errorf("%s uses no backend but depends_on %s", s.Name, dep)
			}
		}

		if cs.ContainerName != "" || len(cs.Ports) > 0 {
			t.Errorf("%s: container_name %q, ports %v: a service is reached through the gateway and must be able to scale", s.Name, cs.ContainerName, cs.Ports)
		}
	}
}

// The ingest path (the provider's callbacks and the folder imports) runs
// several replicas.
func TestIngestRunsReplicas(t *testing.T) {
	_, p := loadProject(t)
	for _, name := range stack.ScaledServices {
		cs, ok := p.Services[name]
		if !ok {
			t.Errorf("%s is not a compose service", name)
			continue
		}
		if cs.Deploy == nil || cs.Deploy.Replicas == nil || *cs.Deploy.Replicas < 2 {
			t.Errorf("%s: deploy.replicas %v, want at least 2", name, cs.Deploy)
		}
	}
}

// The gateway starts once every service it routes to is healthy.
func TestTraefikWaitsForRoutedServices(t *testing.T) {
	_, p := loadProject(t)
	tr := p.Services["traefik"]
	for _, s := range stack.Services {
		if !s.Routed() {
			continue
		}
		if d, ok := tr.DependsOn[s.Name]; !ok || d.Condition != types.ServiceConditionHealthy {
			t.Errorf("traefik: depends_on %s with condition %q, want %s", s.Name, d.Condition, types.ServiceConditionHealthy)
		}
	}
}

// requiredDependencies are the compose services s must wait for, with
// their condition.
func requiredDependencies(s stack.Service) map[string]string {
	if s.Standalone {
		return nil // ready as soon as it listens: nothing to wait for
	}
	deps := map[string]string{
		"redis": types.ServiceConditionHealthy,
	}
	for i := range stack.ComposeNATSNodes {
		deps[stack.ComposeNATSNode(i)] = types.ServiceConditionHealthy
	}
	if s.Schema != "" {
		deps["postgres"] = types.ServiceConditionHealthy
		// The first service of the table with this schema migrates it (and
		// relays its outbox); the others start after it.
		for _, o := range stack.Services {
			if o.Schema == s.Schema {
				if o.Name != s.Name {
					deps[o.Name] = types.ServiceConditionHealthy
				}
				break
			}
		}
	}
	if s.Routed() && s.Name != "auth" {
		deps["auth"] = types.ServiceConditionHealthy
	}
	return deps
}

// Every variable the env files give a service is one the READMEs'
// configuration tables document (the repository's or a service's), so a
// misspelt name fails here instead of being ignored by the service.
func TestEveryVariableIsDocumented(t *testing.T) {
	root, p := loadProject(t)
	readme, err := stack.ConfigDocs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stack.Services {
		cs, ok := p.Services[s.Name]
		if !ok {
			continue // TestEveryBinaryIsAComposeService names it
		}
		for v := range cs.Environment {
			if !bytes.Contains(readme, []byte("| `"+v+"`")) && !bytes.Contains(readme, []byte("`"+v+"`, ")) {
				t.Errorf("%s: %s is set but in no README's configuration table", s.Name, v)
			}
		}
	}
}
