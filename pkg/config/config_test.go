package config

import (
	"strings"
	"testing"
	"time"
)

type testConfig struct {
	Addr string `env:"ADDR" default:":8080" desc:"listen"`
	Common
	TTL   time.Duration `env:"TTL" default:"1m"`
	Max   int           `env:"MAX" default:"3"`
	On    bool          `env:"ON"`
	List  []string      `env:"LIST" default:"a, b"`
	Token string        `env:"TOKEN" required:"true"`
}

func TestLoad(t *testing.T) {
	env := map[string]string{"TOKEN": "x", "MAX": "7", "ON": "true", "NATS_PREFIX": "t1"}
	var c testConfig
	if err := Load(func(k string) string { return env[k] }, &c); err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":8080" || c.TTL != time.Minute || c.Max != 7 || !c.On || len(c.List) != 2 || c.List[1] != "b" || c.NATSPrefix != "t1" || c.LogLevel != "info" {
		t.Fatalf("%+v", c)
	}
}

func TestLoadErrors(t *testing.T) {
	env := map[string]string{"MAX": "many", "TTL": "soon"}
	var c testConfig
	err := Load(func(k string) string { return env[k] }, &c)
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{"MAX", "TTL", "TOKEN is required"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q lacks %q", err, want)
		}
	}
}

func TestDescribe(t *testing.T) {
	vars := Describe(testConfig{})
	if vars[0].Name != "ADDR" || vars[0].Default != ":8080" || vars[0].Description != "listen" {
		t.Fatalf("%+v", vars[0])
	}
	names := map[string]bool{}
	for _, v := range vars {
		names[v.Name] = true
	}
	if !names["DATABASE_URL"] || !names["TOKEN"] {
		t.Fatalf("nested or required vars missing: %v", names)
	}
}

func TestUndocumented(t *testing.T) {
	doc := "| `ADDR` | `:8080` | x |\n| `TOKEN` | (empty) | y |\n| `MAX` | `4` | wrong default |"
	missing := Undocumented(doc, testConfig{})
	if len(missing) == 0 || missing[0] != "LOG_LEVEL" {
		t.Fatalf("%v", missing)
	}
	found := map[string]bool{}
	for _, m := range missing {
		found[m] = true
	}
	if found["ADDR"] || found["TOKEN"] || !found["MAX"] {
		t.Fatalf("documented vars reported or a wrong default accepted: %v", missing)
	}
}
