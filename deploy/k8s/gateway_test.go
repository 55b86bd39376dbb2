package k8s

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"supportplatform.dev/deploy/stack"
)

// The pinned Traefik starts from what the Traefik Deployment mounts: the
// files of its ConfigMap and Secret volumes are laid out below a temporary
// root as the pod would see them (the absolute paths of the configuration
// moved below it, the ports made free ones), and the gateway must then
// serve the Secret's certificate, answer a path no service owns with the
// staticproblem plugin's 404 problem, plain HTTP with its 403, and a routed
// path whose Service does not resolve here with the problemjson plugin's
// problem: both plugins loaded from the ConfigMap layout.
func TestGatewayStartsFromTheManifests(t *testing.T) {
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	bin, err := stack.EnsureTraefik(ctx, root, nil)
	if err != nil {
		t.Fatalf("the pinned Traefik (make traefik): %v", err)
	}

	m := loadBase(t)
	d, c := m.traefik(t)
	pod := t.TempDir()
	certs, err := stack.EnsureDevTLS(filepath.Join(t.TempDir(), "tls"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]map[string]string{"sp-gateway-tls": {
		corev1.TLSCertKey:       string(mustRead(t, certs.CertFile)),
		corev1.TLSPrivateKeyKey: string(mustRead(t, certs.KeyFile)),
	}}
	httpsPort, httpPort := freePort(t), freePort(t)
	// What the pod sees at an absolute path lives below pod/.
	rewrite := strings.NewReplacer(
		`"/etc/traefik/`, `"`+pod+`/etc/traefik/`,
		`address: ":8443"`, fmt.Sprintf(`address: "127.0.0.1:%d"`, httpsPort),
		`address: ":8080"`, fmt.Sprintf(`address: "127.0.0.1:%d"`, httpPort),
	)
	for _, vm := range c.VolumeMounts {
		var files map[string]string
		for _, v := range d.Spec.Template.Spec.Volumes {
			switch {
			case v.Name != vm.Name:
			case v.ConfigMap != nil:
				cm, ok := m.configMap(v.ConfigMap.Name)
				if !ok {
					t.Fatalf("volume %s: no ConfigMap %s", v.Name, v.ConfigMap.Name)
				}
				files = cm.Data
			case v.Secret != nil:
				files = secrets[v.Secret.SecretName]
			case v.EmptyDir != nil:
				files = map[string]string{}
			}
		}
		if files == nil {
			t.Fatalf("mount %s: volume %s is not a ConfigMap, Secret or emptyDir", vm.MountPath, vm.Name)
		}
		target := filepath.Join(pod, vm.MountPath)
		if vm.SubPath != "" {
			content, ok := files[vm.SubPath]
			if !ok {
				t.Fatalf("mount %s: no key %s", vm.MountPath, vm.SubPath)
			}
			writeFile(t, target, rewrite.Replace(content))
			continue
		}
		if err := os.MkdirAll(target, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range files {
			writeFile(t, filepath.Join(target, name), rewrite.Replace(content))
		}
	}

	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = strings.Replace(a, "=/etc/traefik/", "="+pod+"/etc/traefik/", 1)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = filepath.Join(pod, c.WorkingDir)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.Env = []string{"HOME=" + pod, "PATH=" + os.Getenv("PATH")}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("traefik output:\n%s", logs.String())
		}
	}()

	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: certs.CAPool, ServerName: "localhost"}},
	}
	base := fmt.Sprintf("https://127.0.0.1:%d", httpsPort)
	// Routers load after the entrypoints listen: wait for the plugin's
	// answer, not just for the port.
	var resp *http.Response
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err = client.Get(base + "/api/no-such-path")
		if err == nil && resp.StatusCode == http.StatusNotFound && isProblem(resp) {
			resp.Body.Close()
			break
		}
		if err == nil {
			resp.Body.Close()
		}
		select {
		case <-exited:
			t.Fatalf("traefik exited")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 404 problem from the gateway within a minute: %v %v", err, resp)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Verified against the CA of the certificate put in the Secret: the
	// gateway serves it, not Traefik's default.
	resp, err = client.Get(base + "/api/Topics")
	if err != nil {
		t.Fatalf("GET /api/Topics: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode < 500 || !isProblem(resp) {
		t.Errorf("GET /api/Topics with the topics Service unreachable: %d %s, want a 5xx problem", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	resp, err = client.Get(fmt.Sprintf("http://127.0.0.1:%d/api/Topics", httpPort))
	if err != nil {
		t.Fatalf("plain HTTP: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !isProblem(resp) {
		t.Errorf("plain HTTP: %d %s, want the 403 problem", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func isProblem(resp *http.Response) bool {
	return strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json")
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
