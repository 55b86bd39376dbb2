// Package config reads one configuration struct per binary from the
// environment, once, using struct tags:
//
//	Addr string `env:"HTTP_ADDR" default:":8080" desc:"listen address"`
//
// Supported field types: string, bool, int, int64, float64, time.Duration,
// []string (comma separated), and nested structs (their fields are read too).
package config

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Var describes one environment variable of a config struct, for docs.
type Var struct {
	Name, Default, Description string
	Required                   bool
}

// Load fills dst (a pointer to a struct) from getenv.
func Load(getenv func(string) string, dst any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return errors.New("config: Load needs a pointer to a struct")
	}
	var errs []error
	load(getenv, v.Elem(), &errs)
	return errors.Join(errs...)
}

func load(getenv func(string) string, v reflect.Value, errs *[]error) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		name := f.Tag.Get("env")
		if name == "" {
			if fv.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Time{}) {
				load(getenv, fv, errs)
			}
			continue
		}
		raw, set := strings.TrimSpace(getenv(name)), true
		if raw == "" {
			raw, set = f.Tag.Get("default"), false
		}
		if raw == "" {
			if f.Tag.Get("required") == "true" {
				*errs = append(*errs, fmt.Errorf("config: %s is required", name))
			}
			continue
		}
		if err := setValue(fv, raw); err != nil {
			src := "default"
			if set {
				src = "value"
			}
			*errs = append(*errs, fmt.Errorf("config: %s: invalid %s %q: %w", name, src, raw, err))
		}
	}
}

func setValue(fv reflect.Value, raw string) error {
	switch fv.Interface().(type) {
	case time.Duration:
		d, err := time.ParseDuration(raw)
		if err != nil {
			return err
		}
		fv.SetInt(int64(d))
		return nil
	case []string:
		var out []string
		for _, p := range strings.Split(raw, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		fv.Set(reflect.ValueOf(out))
		return nil
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(raw)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return err
		}
		fv.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return err
		}
		fv.SetInt(n)
	case reflect.Float64:
		n, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return err
		}
		fv.SetFloat(n)
	default:
		return fmt.Errorf("unsupported field type %s", fv.Type())
	}
	return nil
}

// Describe lists the variables of a config struct (pointer or value), in
// field order, for the README table and its drift test.
func Describe(cfg any) []Var {
	t := reflect.TypeOf(cfg)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []Var
	describe(t, &out)
	return out
}

func describe(t reflect.Type, out *[]Var) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := f.Tag.Get("env")
		if name == "" {
			if f.Type.Kind() == reflect.Struct {
				describe(f.Type, out)
			}
			continue
		}
		*out = append(*out, Var{Name: name, Default: f.Tag.Get("default"),
			Description: f.Tag.Get("desc"), Required: f.Tag.Get("required") == "true"})
	}
}

// Undocumented returns the variables of cfg that doc (the README) does not
// list as a table row "| `NAME` | `default` |" ("(empty)" for no default),
// so neither the names nor the defaults in the config table can drift.
func Undocumented(doc string, cfg any) []string {
	var missing []string
	for _, v := range Describe(cfg) {
		def := "(empty)"
		if v.Default != "" {
			def = "`" + v.Default + "`"
		}
		if !strings.Contains(doc, "| `"+v.Name+"` | "+def+" |") {
			missing = append(missing, v.Name)
		}
	}
	return missing
}
