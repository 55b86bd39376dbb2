package k8s

import (
	"bufio"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/pkg/contracts"
)

// NATS runs as a StatefulSet of three pods of the official image behind a
// headless Service: each names itself after its pod, routes to the others
// by their DNS names (the generated configuration, TestGateway checks it is
// up to date), keeps JetStream on a volume of its own and reads the users'
// passwords from the documented Secret; every service keeps three replicas
// and lists the three pods in its NATS_URL (the dev overlay's examples).
func TestNATSCluster(t *testing.T) {
	m := loadBase(t)
	o, ok := m.byKind["StatefulSet"][stack.K8sNATSStatefulSet]
	if !ok {
		t.Fatalf("no StatefulSet %s", stack.K8sNATSStatefulSet)
	}
	ss := o.(*appsv1.StatefulSet)
	if ss.Spec.Replicas == nil || *ss.Spec.Replicas != stack.K8sNATSNodes || ss.Spec.ServiceName != stack.K8sNATSHeadless ||
		ss.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("StatefulSet %s: replicas %v, serviceName %q, podManagementPolicy %q; want %d, %s, Parallel",
			ss.Name, ss.Spec.Replicas, ss.Spec.ServiceName, ss.Spec.PodManagementPolicy, stack.K8sNATSNodes, stack.K8sNATSHeadless)
	}
	pod := ss.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("nats pods have %d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !strings.HasPrefix(c.Image, "nats:2.") || !slices.Equal(c.Args, []string{"-c", "/etc/nats/nats.conf"}) {
		t.Errorf("nats container: image %q args %v, want the official nats image reading /etc/nats/nats.conf", c.Image, c.Args)
	}
	nameFromPod := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == stack.NATSServerNameEnv && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
	})
	if !nameFromPod {
		t.Errorf("nats container: %s is not the pod's name", stack.NATSServerNameEnv)
	}
	if !slices.ContainsFunc(c.EnvFrom, func(e corev1.EnvFromSource) bool {
		return e.SecretRef != nil && e.SecretRef.Name == stack.K8sNATSUsersSecret
	}) {
		t.Errorf("nats container does not read the Secret %s", stack.K8sNATSUsersSecret)
	}
	for name, port := range map[string]int32{"client": stack.NATSClientPort, "cluster": stack.NATSClusterPort, "monitor": stack.NATSMonitorPort} {
		if cp := containerPort(&c, intstr.FromString(name)); cp == nil || cp.ContainerPort != port {
			t.Errorf("nats container: port %s is %v, want %d", name, cp, port)
		}
	}
	mounts := map[string]string{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.MountPath] = vm.Name
	}
	if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
		return v.Name == mounts["/etc/nats"] && v.ConfigMap != nil && v.ConfigMap.Name == stack.K8sNATSConfigMap
	}) {
		t.Errorf("nats container does not mount ConfigMap %s at /etc/nats", stack.K8sNATSConfigMap)
	}
	if !slices.ContainsFunc(ss.Spec.VolumeClaimTemplates, func(p corev1.PersistentVolumeClaim) bool { return p.Name == mounts["/data"] }) {
		t.Errorf("nats container's /data is not a volume claim of its own (volumeClaimTemplates)")
	}

	svc, ok := m.byKind["Service"][stack.K8sNATSHeadless]
	if !ok {
		t.Fatalf("no Service %s", stack.K8sNATSHeadless)
	}
	if h := svc.(*corev1.Service); h.Spec.ClusterIP != corev1.ClusterIPNone || !h.Spec.PublishNotReadyAddresses {
		t.Errorf("Service %s: clusterIP %q, publishNotReadyAddresses %v; want a headless Service publishing every pod", h.Name, h.Spec.ClusterIP, h.Spec.PublishNotReadyAddresses)
	}

	cm, ok := m.configMap(stack.K8sNATSConfigMap)
	if !ok {
		t.Fatalf("no ConfigMap %s", stack.K8sNATSConfigMap)
	}
	conf := cm.Data["nats.conf"]
	for i := range stack.K8sNATSNodes {
		route := "nats-route://" + stack.K8sNATSNode(i) + ":" + strconv.Itoa(stack.NATSClusterPort)
		if !strings.Contains(conf, route) {
			t.Errorf("nats.conf has no route %s", route)
		}
	}
	if !strings.Contains(conf, "server_name: $"+stack.NATSServerNameEnv) {
		t.Errorf("nats.conf does not take the server's name from %s", stack.NATSServerNameEnv)
	}

	cfg, _ := m.configMap("sp-config")
	if cfg == nil || cfg.Data["NATS_REPLICAS"] != strconv.Itoa(contracts.ReplicasFor(stack.K8sNATSNodes)) {
		t.Errorf("sp-config: NATS_REPLICAS is not %d", contracts.ReplicasFor(stack.K8sNATSNodes))
	}
	keys := documentedSecrets(t)[stack.K8sNATSUsersSecret]
	for _, s := range contracts.Services {
		if !slices.Contains(keys, stack.ComposeNATSPasswordEnv(s.Name)) {
			t.Errorf("deploy/README.md's %s command has no %s", stack.K8sNATSUsersSecret, stack.ComposeNATSPasswordEnv(s.Name))
		}
	}

	// The dev overlay's examples: every service's NATS_URL lists the pods,
	// as its own user.
	secrets := filepath.Join(repoRoot(t), "deploy", "k8s", "overlays", "dev", "secrets")
	for _, s := range contracts.Services {
		raw := envFile(t, filepath.Join(secrets, s.Name+".env.example"))["NATS_URL"]
		urls := strings.Split(raw, ",")
		if len(urls) != stack.K8sNATSNodes {
			t.Errorf("%s.env.example: NATS_URL %q lists %d servers, want the %d pods", s.Name, raw, len(urls), stack.K8sNATSNodes)
			continue
		}
		for i, r := range urls {
			u, err := url.Parse(r)
			if err != nil || u.User.Username() != s.Name || u.Host != stack.K8sNATSNode(i)+":"+strconv.Itoa(stack.NATSClientPort) {
				t.Errorf("%s.env.example: NATS_URL server %d is %q (%v), want %s as %s", s.Name, i, r, err, stack.K8sNATSNode(i), s.Name)
			}
		}
	}
	users := envFile(t, filepath.Join(secrets, "nats.env.example"))
	for _, s := range contracts.Services {
		if _, ok := users[stack.ComposeNATSPasswordEnv(s.Name)]; !ok {
			t.Errorf("nats.env.example has no %s", stack.ComposeNATSPasswordEnv(s.Name))
		}
	}
}

func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out
}
