package topics

import (
	"strings"
	"testing"

	"supportplatform.dev/pkg/apperr"
)

func ptr[T any](v T) *T { return &v }

// fields returns the validation fields of err (nil when err is nil).
func fields(t *testing.T, err error, code apperr.Code) map[string]string {
	t.Helper()
	if err == nil {
		return nil
	}
	e, ok := err.(*apperr.Error)
	if !ok || e.Code != code {
		t.Fatalf("error = %v, want code %s", err, code)
	}
	return e.Fields
}

func sameKeys(got, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			return false
		}
	}
	return true
}

func TestTopicInput(t *testing.T) {
	cases := []struct {
		name     string
		in       TopicInput
		wantName string
		fields   map[string]string
	}{
		{"trimmed", TopicInput{Name: "  Billing \t"}, "Billing", nil},
		{"missing name", TopicInput{}, "", map[string]string{"name": "is required"}},
		{"blank name", TopicInput{Name: "   "}, "", map[string]string{"name": "is required"}},
		{"200 characters", TopicInput{Name: strings.Repeat("é", 200)}, strings.Repeat("é", 200), nil},
		{"201 characters", TopicInput{Name: strings.Repeat("a", 201)}, "", map[string]string{"name": "must be at most 200 characters"}},
		{"newline in name", TopicInput{Name: "a\nb"}, "", map[string]string{"name": "must not contain control characters"}},
		{"NUL in description", TopicInput{Name: "a", Description: "x\x00y"}, "", map[string]string{"description": "must not contain control characters"}},
		{"multi-line description", TopicInput{Name: "a", Description: "line 1\nline 2\ttab"}, "a", nil},
		{"2000 description", TopicInput{Name: "a", Description: strings.Repeat("d", 2000)}, "a", nil},
		{"2001 description", TopicInput{Name: "a", Description: strings.Repeat("d", 2001)}, "", map[string]string{"description": "must be at most 2000 characters"}},
		{"both bad", TopicInput{Description: strings.Repeat("d", 2001)}, "", map[string]string{"name": "", "description": ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := c.in.Normalize()
			got := fields(t, err, apperr.Invalid)
			if !sameKeys(got, c.fields) {
				t.Fatalf("fields = %v, want %v", got, c.fields)
			}
			for k, m := range c.fields {
				if m != "" && got[k] != m {
					t.Fatalf("%s: %q, want %q", k, got[k], m)
				}
			}
			if err == nil && out.Name != c.wantName {
				t.Fatalf("name = %q, want %q", out.Name, c.wantName)
			}
		})
	}
}

func TestActionAndDocumentInput(t *testing.T) {
	a, err := ActionInput{Name: " n ", HookName: "h"}.Normalize()
	if err != nil || a.Name != "n" || !a.IsActive || a.ChannelID != nil {
		t.Fatalf("defaults: %+v, %v", a, err)
	}
	_, err = ActionInput{ChannelID: ptr[int64](0), IsActive: ptr(false)}.Normalize()
	if f := fields(t, err, apperr.Invalid); !sameKeys(f, map[string]string{"name": "", "hookName": "", "channelID": ""}) {
		t.Fatalf("fields = %v", f)
	}
	d, err := DocumentInput{Title: "t", Content: "c\n"}.Normalize()
	if err != nil || d.IsHook || d.Content != "c\n" {
		t.Fatalf("defaults: %+v, %v", d, err)
	}
	_, err = DocumentInput{Title: "t", IsHook: ptr(true)}.Normalize()
	if f := fields(t, err, apperr.Invalid); f["hookName"] != "is required when isHook is true" {
		t.Fatalf("fields = %v", f)
	}
	_, err = DocumentInput{Title: strings.Repeat("t", 301), Content: strings.Repeat("c", MaxContentLen+1)}.Normalize()
	if f := fields(t, err, apperr.Invalid); !sameKeys(f, map[string]string{"title": "", "content": ""}) {
		t.Fatalf("fields = %v", f)
	}
}

func TestValidateTopicActions(t *testing.T) {
	ok := TopicActionInput{TopicID: ptr[int64](1), ActionID: ptr[int64](2), Priority: ptr[int64](0)}
	many := make([]TopicActionInput, MaxBulkItems+1)
	for i := range many {
		many[i] = TopicActionInput{TopicID: ptr[int64](1), ActionID: ptr(int64(i + 1)), Priority: ptr[int64](1)}
	}
	cases := []struct {
		name   string
		in     []TopicActionInput
		fields map[string]string
	}{
		{"one valid", []TopicActionInput{ok}, nil},
		{"max items", many[:MaxBulkItems], nil},
		{"too many", many, map[string]string{"items": "must hold at most 100 items"}},
		{"empty", nil, map[string]string{"items": "must hold at least one item"}},
		{"missing fields", []TopicActionInput{ok, {}}, map[string]string{
			"items[1].topicID": "is required", "items[1].actionID": "is required", "items[1].priority": "is required"}},
		{"bad values", []TopicActionInput{{TopicID: ptr[int64](-1), ActionID: ptr[int64](0), Priority: ptr[int64](MaxPriority + 1)}}, map[string]string{
			"items[0].topicID": "must be a positive integer", "items[0].actionID": "must be a positive integer",
			"items[0].priority": "must be an integer from 0 to 10000"}},
		{"negative priority", []TopicActionInput{ok, {TopicID: ptr[int64](1), ActionID: ptr[int64](3), Priority: ptr[int64](-1)}}, map[string]string{
			"items[1].priority": "must be an integer from 0 to 10000"}},
		{"pair twice", []TopicActionInput{ok, {TopicID: ptr[int64](1), ActionID: ptr[int64](3), Priority: ptr[int64](5)}, ok}, map[string]string{
			"items[2].actionID": "repeats the topic and action of items[0]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := ValidateTopicActions(c.in)
			got := fields(t, err, apperr.Invalid)
			if !sameKeys(got, c.fields) {
				t.Fatalf("fields = %v, want %v", got, c.fields)
			}
			for k, m := range c.fields {
				if got[k] != m {
					t.Fatalf("%s: %q, want %q", k, got[k], m)
				}
			}
			if err == nil {
				if len(out) != len(c.in) || !out[0].IsActive || out[0].TopicID != *c.in[0].TopicID {
					t.Fatalf("out = %+v", out)
				}
			}
		})
	}
	out, _ := ValidateTopicActions([]TopicActionInput{{TopicID: ptr[int64](1), ActionID: ptr[int64](2), Priority: ptr[int64](7), IsActive: ptr(false)}})
	if out[0].IsActive || out[0].Priority != 7 {
		t.Fatalf("isActive false lost: %+v", out[0])
	}
}

func TestCheckTopicActionRefs(t *testing.T) {
	items := []NewTopicAction{{TopicID: 1, ActionID: 10}, {TopicID: 2, ActionID: 20}, {TopicID: 1, ActionID: 30}}
	refs := TopicActionRefs{
		Topics:   map[int64]bool{1: true, 2: true},
		Actions:  map[int64]bool{10: true, 20: true, 30: true},
		Existing: map[[2]int64]bool{},
	}
	if err := CheckTopicActionRefs(items, refs, true); err != nil {
		t.Fatalf("all present: %v", err)
	}

	missing := refs
	missing.Topics = map[int64]bool{1: true}
	missing.Actions = map[int64]bool{10: true, 20: true}
	missing.Existing = map[[2]int64]bool{{1, 10}: true}
	err := CheckTopicActionRefs(items, missing, true)
	// Missing references are reported (400) before conflicts.
	if f := fields(t, err, apperr.Invalid); !sameKeys(f, map[string]string{"items[1].topicID": "", "items[2].actionID": ""}) {
		t.Fatalf("fields = %v", f)
	}

	dup := refs
	dup.Existing = map[[2]int64]bool{{2, 20}: true}
	err = CheckTopicActionRefs(items, dup, true)
	if f := fields(t, err, apperr.Conflict); !sameKeys(f, map[string]string{"items[1].actionID": ""}) {
		t.Fatalf("fields = %v", f)
	}
	// A single create names the bare field.
	err = CheckTopicActionRefs(items[1:2], dup, false)
	if f := fields(t, err, apperr.Conflict); !sameKeys(f, map[string]string{"actionID": ""}) {
		t.Fatalf("fields = %v", f)
	}
}

func TestRangesOfMappings(t *testing.T) {
	cases := []struct {
		name   string
		in     TopicDocumentInput
		fields []string
	}{
		{"ok low", TopicDocumentInput{TopicID: ptr[int64](1), DocumentID: ptr[int64](1), RelevanceScore: ptr[int64](0)}, nil},
		{"ok high", TopicDocumentInput{TopicID: ptr[int64](1), DocumentID: ptr[int64](1), RelevanceScore: ptr[int64](100)}, nil},
		{"too high", TopicDocumentInput{TopicID: ptr[int64](1), DocumentID: ptr[int64](1), RelevanceScore: ptr[int64](101)}, []string{"relevanceScore"}},
		{"negative", TopicDocumentInput{TopicID: ptr[int64](1), DocumentID: ptr[int64](1), RelevanceScore: ptr[int64](-1)}, []string{"relevanceScore"}},
		{"missing all", TopicDocumentInput{}, []string{"topicID", "documentID", "relevanceScore"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.in.Normalize()
			want := map[string]string{}
			for _, f := range c.fields {
				want[f] = ""
			}
			if got := fields(t, err, apperr.Invalid); !sameKeys(got, want) && !(got == nil && len(want) == 0) {
				t.Fatalf("fields = %v, want %v", got, c.fields)
			}
		})
	}
}

func TestParseTopicSort(t *testing.T) {
	cases := []struct {
		raw  string
		want TopicSort
		bad  bool
	}{
		{"", TopicSort{}, false},
		{"topicID", TopicSort{}, false},
		{"-topicid", TopicSort{Desc: true}, false},
		{"name", TopicSort{ByName: true}, false},
		{"-Name", TopicSort{ByName: true, Desc: true}, false},
		{"-", TopicSort{}, true},
		{"description", TopicSort{}, true},
		{"name;drop", TopicSort{}, true},
		{"--name", TopicSort{}, true},
	}
	for _, c := range cases {
		got, err := ParseTopicSort(c.raw)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseTopicSort(%q) = %+v, %v", c.raw, got, err)
		}
		if err != nil {
			if f := fields(t, err, apperr.Invalid); f["sort"] == "" {
				t.Errorf("sort error names no field: %v", f)
			}
		}
	}
}

func TestNormalizeURL(t *testing.T) {
	cases := []struct {
		raw, want string
		bad       bool
	}{
		{raw: "HTTPS://Shop.Example.COM/Help/Page?x=1#top", want: "https://shop.example.com/Help/Page?x=1"},
		{raw: "https://shop.example", want: "https://shop.example/"},
		{raw: "https://shop.example:443/a", want: "https://shop.example/a"},
		{raw: "http://shop.example:80/a", want: "http://shop.example/a"},
		{raw: "http://shop.example:8080/a", want: "http://shop.example:8080/a"},
		{raw: "https://[::1]:443/x", want: "https://[::1]/x"},
		{raw: "  https://a.example/b  ", want: "https://a.example/b"},
		{raw: "", bad: true},
		{raw: "/relative/path", bad: true},
		{raw: "shop.example/path", bad: true},
		{raw: "ftp://shop.example/", bad: true},
		{raw: "javascript:alert(1)", bad: true},
		{raw: "mailto:a@b.example", bad: true},
		{raw: "https:///nohost", bad: true},
		{raw: "https://user:pw@shop.example/", bad: true},
		{raw: "https://shop.example/\x00", bad: true},
		{raw: "https://shop.example/%zz", bad: true},
		{raw: "https://shop.example/" + strings.Repeat("a", MaxURLLen), bad: true},
	}
	for _, c := range cases {
		got, err := NormalizeURL(c.raw)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("NormalizeURL(%q) = %q, %v", c.raw, got, err)
		}
	}
}

func TestPageMappingInput(t *testing.T) {
	m, err := PageMappingInput{TopicID: ptr[int64](3), URLPattern: "HTTPS://A.example/x#f", MatchType: "Prefix"}.Normalize()
	if err != nil || m.URLPattern != "https://a.example/x" || m.MatchType != MatchPrefix {
		t.Fatalf("normalised: %+v, %v", m, err)
	}
	_, err = PageMappingInput{MatchType: "regex", URLPattern: "nope"}.Normalize()
	if f := fields(t, err, apperr.Invalid); !sameKeys(f, map[string]string{"topicID": "", "urlPattern": "", "matchType": ""}) {
		t.Fatalf("fields = %v", f)
	}
}

// Every text field that reaches PostgreSQL refuses NUL (PostgreSQL cannot
// store it) and invalid UTF-8 with a 400 naming the field.
func TestTextFieldsRefuseNULAndInvalidUTF8(t *testing.T) {
	for _, bad := range []struct{ name, s string }{{"NUL", "a\x00b"}, {"invalid UTF-8", "caf\xe9"}} {
		cases := []struct {
			field string
			run   func() error
		}{
			{"name", func() error { _, err := TopicInput{Name: bad.s}.Normalize(); return err }},
			{"description", func() error { _, err := TopicInput{Name: "n", Description: bad.s}.Normalize(); return err }},
			{"name", func() error { _, err := ActionInput{Name: bad.s, HookName: "h"}.Normalize(); return err }},
			{"hookName", func() error { _, err := ActionInput{Name: "n", HookName: bad.s}.Normalize(); return err }},
			{"title", func() error { _, err := DocumentInput{Title: bad.s}.Normalize(); return err }},
			{"content", func() error { _, err := DocumentInput{Title: "t", Content: bad.s}.Normalize(); return err }},
			{"hookName", func() error { _, err := DocumentInput{Title: "t", HookName: bad.s}.Normalize(); return err }},
			{"urlPattern", func() error {
				_, err := PageMappingInput{TopicID: ptr[int64](1), URLPattern: "https://a.example/" + bad.s, MatchType: "exact"}.Normalize()
				return err
			}},
			{"matchType", func() error {
				_, err := PageMappingInput{TopicID: ptr[int64](1), URLPattern: "https://a.example/", MatchType: "exact" + bad.s}.Normalize()
				return err
			}},
		}
		for _, c := range cases {
			t.Run(bad.name+" in "+c.field, func(t *testing.T) {
				f := fields(t, c.run(), apperr.Invalid)
				if len(f) != 1 || f[c.field] == "" {
					t.Fatalf("fields = %v, want %s alone", f, c.field)
				}
			})
		}
	}
}
