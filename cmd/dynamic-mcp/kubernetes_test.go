package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// TestKubernetesExample reads examples/kubernetes/dynamic-mcp.yaml (no
// cluster runs here) and checks it against what the hub and its image
// are: the container's args are the Dockerfile's CMD, its port the one
// EXPOSE names and the Service targets, the probes ask /readyz and
// /healthz (which TestDockerfile and TestNginxExample show answering),
// one replica, and the environment names variables the hub reads.
func TestKubernetesExample(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join(repoDir, "examples", "kubernetes", "dynamic-mcp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type probe struct {
		HTTPGet struct {
			Path string
			Port string
		} `yaml:"httpGet"`
	}
	var deployment struct {
		Spec struct {
			Replicas int
			Template struct {
				Spec struct {
					Containers []struct {
						Args  []string
						Ports []struct {
							Name          string
							ContainerPort int `yaml:"containerPort"`
						}
						Env []struct{ Name string }
						// The probes the balancer and the kubelet use.
						ReadinessProbe probe `yaml:"readinessProbe"`
						LivenessProbe  probe `yaml:"livenessProbe"`
					}
				}
			}
		}
	}
	var service struct {
		Spec struct {
			Ports []struct {
				TargetPort string `yaml:"targetPort"`
			}
		}
	}
	kinds := map[string]bool{}
	dec := yaml.NewDecoder(f)
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		var head struct{ Kind string }
		if err := doc.Decode(&head); err != nil {
			t.Fatal(err)
		}
		kinds[head.Kind] = true
		switch head.Kind {
		case "Deployment":
			err = doc.Decode(&deployment)
		case "Service":
			err = doc.Decode(&service)
		}
		if err != nil {
			t.Fatalf("%s: %v", head.Kind, err)
		}
	}
	for _, k := range []string{"Deployment", "Service", "Ingress"} {
		if !kinds[k] {
			t.Errorf("no %s in the example", k)
		}
	}
	if deployment.Spec.Replicas != 1 {
		t.Errorf("replicas: %d, want 1 (sessions live in one process in this build)", deployment.Spec.Replicas)
	}
	cs := deployment.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	c := cs[0]
	var hub *dockerStage
	for _, s := range readDockerfile(t) {
		if s.name == "hub" {
			hub = s
		}
	}
	if hub == nil {
		t.Fatal("Dockerfile: no hub stage")
	}
	if cmd := execForm(t, "CMD", lastOf(t, hub, "CMD")); !slices.Equal(c.Args, cmd) {
		t.Errorf("args %q, want the Dockerfile's CMD %q", c.Args, cmd)
	}
	if len(c.Ports) != 1 || !slices.Contains(hub.get("EXPOSE"), strconv.Itoa(c.Ports[0].ContainerPort)) {
		t.Errorf("ports %+v, want the one the Dockerfile EXPOSEs (%q)", c.Ports, hub.get("EXPOSE"))
	} else if name := c.Ports[0].Name; c.ReadinessProbe.HTTPGet.Port != name || c.LivenessProbe.HTTPGet.Port != name ||
		len(service.Spec.Ports) != 1 || service.Spec.Ports[0].TargetPort != name {
		t.Errorf("the probes and the Service must use port %q: %+v %+v %+v", name, c.ReadinessProbe, c.LivenessProbe, service.Spec.Ports)
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes: readiness %q, liveness %q, want /readyz and /healthz", c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)
	}
	known := []string{"DYNAMIC_MCP_TOKEN", vault.EnvKey, logFormatEnvVar, uiTokenEnvVar}
	for _, e := range c.Env {
		if !slices.Contains(known, e.Name) {
			t.Errorf("env %s is not a variable the hub reads (%q)", e.Name, known)
		}
	}
}
