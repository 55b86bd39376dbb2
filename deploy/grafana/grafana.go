// Package grafana holds the example Grafana dashboard of the platform
// (supportplatform.json, beside this file) and what its tests need to read
// it: the panels, their PromQL expressions and the metric names these use.
package grafana

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

//go:embed supportplatform.json
var dashboardJSON []byte

// JSON is the dashboard file as it is imported into Grafana.
func JSON() []byte { return slices.Clone(dashboardJSON) }

// Dashboard is the part of Grafana's dashboard model the checks read.
type Dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []Panel `json:"panels"`
	Templating    struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is a panel or a row (whose collapsed panels are in Panels).
type Panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *Datasource `json:"datasource"`
	Targets    []Target    `json:"targets"`
	Panels     []Panel     `json:"panels"`
	GridPos    struct {
		H int `json:"h"`
		W int `json:"w"`
		X int `json:"x"`
		Y int `json:"y"`
	} `json:"gridPos"`
}

// Target is one query of a panel.
type Target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *Datasource `json:"datasource"`
}

// Datasource names a data source (by a variable here: ${DS_PROMETHEUS}).
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Variable is a templating variable.
type Variable struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Query any    `json:"query"`
}

// Load decodes the embedded dashboard.
func Load() (*Dashboard, error) {
	var d Dashboard
	if err := json.Unmarshal(dashboardJSON, &d); err != nil {
		return nil, fmt.Errorf("grafana: supportplatform.json: %w", err)
	}
	return &d, nil
}

// AllPanels returns every panel that is not a row, rows' collapsed panels
// included, in file order.
func (d *Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			if p.Type != "row" {
				out = append(out, p)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// MetricNames returns every metric name used by the dashboard's queries,
// sorted and without repeats.
func (d *Dashboard) MetricNames() ([]string, error) {
	var names []string
	for _, p := range d.AllPanels() {
		for _, t := range p.Targets {
			n, err := MetricNames(t.Expr)
			if err != nil {
				return nil, fmt.Errorf("panel %q query %s: %w", p.Title, t.RefID, err)
			}
			names = append(names, n...)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// PromQL words that are not metric names when they stand alone.
var keywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true,
}

// Keywords followed by a parenthesised list of label names.
var labelLists = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// MetricNames returns the metric names a PromQL expression selects, in
// order of appearance: identifiers that are not functions or aggregations
// (followed by "("), keywords, label names (inside {...} and after by,
// without, on, ignoring, group_left, group_right), strings, durations
// ([5m]) or Grafana variables ($job, ${x}, [$__rate_interval]). It is a
// lexer, not a parser: it fails on unbalanced brackets and unterminated
// strings, which is what a typo in a hand-written query most often is.
func MetricNames(expr string) ([]string, error) {
	var names []string
	var stack []byte
	closing := map[byte]byte{'(': ')', '{': '}', '[': ']'}
	skipList := false // the next "(" opens a list of label names
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("unterminated string at %d in %q", i, expr)
			}
			i = j + 1
		case c == '(' || c == '{' || c == '[':
			if c == '(' && skipList {
				j := strings.IndexByte(expr[i:], ')')
				if j < 0 {
					return nil, fmt.Errorf("unclosed label list at %d in %q", i, expr)
				}
				i += j + 1
				skipList = false
				continue
			}
			if c == '{' || c == '[' {
				// Label matchers and ranges hold no metric name.
				j := i + 1
				for j < len(expr) && expr[j] != closing[c] {
					if q := expr[j]; q == '"' || q == '\'' || q == '`' {
						k := strings.IndexByte(expr[j+1:], q)
						if k < 0 {
							return nil, fmt.Errorf("unterminated string at %d in %q", j, expr)
						}
						j += k + 1
					}
					j++
				}
				if j >= len(expr) {
					return nil, fmt.Errorf("unclosed %q at %d in %q", c, i, expr)
				}
				i = j + 1
				continue
			}
			stack = append(stack, c)
			i++
		case c == ')' || c == '}' || c == ']':
			if len(stack) == 0 || closing[stack[len(stack)-1]] != c {
				return nil, fmt.Errorf("unbalanced %q at %d in %q", c, i, expr)
			}
			stack = stack[:len(stack)-1]
			i++
		case c == '$':
			// A Grafana variable: $name or ${name}.
			j := i + 1
			if j < len(expr) && expr[j] == '{' {
				k := strings.IndexByte(expr[j:], '}')
				if k < 0 {
					return nil, fmt.Errorf("unclosed variable at %d in %q", i, expr)
				}
				i = j + k + 1
				continue
			}
			for j < len(expr) && isIdent(expr[j], false) {
				j++
			}
			i = j
		case isIdent(c, true):
			j := i + 1
			for j < len(expr) && isIdent(expr[j], false) {
				j++
			}
			word := expr[i:j]
			k := j
			for k < len(expr) && (expr[k] == ' ' || expr[k] == '\t' || expr[k] == '\n') {
				k++
			}
			switch {
			case labelLists[strings.ToLower(word)]:
				skipList = true
			case keywords[strings.ToLower(word)]:
			case k < len(expr) && expr[k] == '(':
				// A function or an aggregation.
			case nextWordIs(expr[k:], "by", "without"):
				// An aggregation with its grouping first: sum by (job) (...).
			default:
				names = append(names, word)
			}
			i = j
		case c >= '0' && c <= '9' || c == '.':
			j := i + 1
			for j < len(expr) && (isIdent(expr[j], false) || expr[j] == '.') {
				j++ // numbers, 1e3, durations such as 5m
			}
			i = j
		default:
			i++
		}
	}
	if len(stack) > 0 {
		return nil, fmt.Errorf("unclosed %q in %q", stack[len(stack)-1], expr)
	}
	return names, nil
}

// nextWordIs reports whether s starts with one of words as a whole word.
func nextWordIs(s string, words ...string) bool {
	for _, w := range words {
		if len(s) >= len(w) && strings.EqualFold(s[:len(w)], w) && (len(s) == len(w) || !isIdent(s[len(w)], false)) {
			return true
		}
	}
	return false
}

func isIdent(c byte, first bool) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (!first && c >= '0' && c <= '9')
}

// Covered reports whether the metric name used in a query is in the set of
// exposed sample names (each line of a /metrics exposition: a histogram
// shows as its _bucket, _sum and _count samples, and family names (# TYPE)
// count too).
func Covered(used string, exposed map[string]bool) bool {
	if exposed[used] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(used, suffix); ok && exposed[base] {
			return true
		}
	}
	return false
}
