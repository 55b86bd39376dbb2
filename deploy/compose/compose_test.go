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
	for _, name := range []string{"postgres", "redis", "nats", "traefik"} {
		if _, ok := p.Services[name]; !ok {
			t.Errorf("service %s missing", name)
		}
	}
	if img := p.Services["traefik"].Image; !strings.HasPrefix(img, "traefik:v3.6") {
		t.Errorf("traefik image %q, want traefik:v3.6", img)
	}
	// JetStream and the users are in the generated configuration
	// (TestGeneratedFilesUpToDate; deploy/stack checks it with nats-server).
	nats := p.Services["nats"]
	if cmd := nats.Command; !slices.Equal(cmd, types.ShellCommand{"-c", "/etc/nats/nats.conf"}) {
		t.Errorf("nats command %v does not read its configuration", cmd)
	}
	mounted := false
	for _, v := range nats.Volumes {
		mounted = mounted || v.Target == "/etc/nats/nats.conf" && v.Source == filepath.Join(root, stack.ComposeNATSConfig)
	}
	if !mounted {
		t.Errorf("nats does not mount %s at /etc/nats/nats.conf: %+v", stack.ComposeNATSConfig, nats.Volumes)
	}
}

// Least privilege: each service connects to PostgreSQL as its own role and
// migrates as postgres, and to NATS as its own user with the password the
// nats container gives that user.
func TestServicesUseTheirOwnCredentials(t *testing.T) {
	_, p := loadProject(t)
	pgPassword := envValue(p.Services["postgres"], "POSTGRES_PASSWORD")
	for _, s := range stack.Services {
		cs := p.Services[s.Name]
		if envValue(cs, "NATS_PREFIX") != stack.ComposeNATSPrefix {
			t.Errorf("%s: NATS_PREFIX=%q, but nats.conf is generated for %q", s.Name, envValue(cs, "NATS_PREFIX"), stack.ComposeNATSPrefix)
		}
		u, err := url.Parse(envValue(cs, "NATS_URL"))
		if err != nil {
			t.Errorf("%s: NATS_URL: %v", s.Name, err)
			continue
		}
		pw, _ := u.User.Password()
		want := envValue(p.Services["nats"], stack.ComposeNATSPasswordEnv(s.Name))
		if u.User.Username() != s.Name || want == "" || pw != want {
			t.Errorf("%s: NATS_URL user %q with password %q, want user %s with %s of the nats service (%q)",
				s.Name, u.User.Username(), pw, s.Name, stack.ComposeNATSPasswordEnv(s.Name), want)
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
	for rel, want := range files {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Errorf("%s: %v (run `go run ./cmd/gencompose` in deploy/)", rel, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date: run `go run ./cmd/gencompose` in deploy/", rel)
		}
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
		cs := p.Services[s.Name]
		keys := []string{"REDIS_URL", "NATS_URL", "AUTH_JWKS_URL"}
		if s.Schema != "" {
			keys = append(keys, "DATABASE_URL", "DATABASE_MIGRATE_URL")
		}
		for _, key := range keys {
			v := envValue(cs, key)
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
