package tickets

import (
	"encoding/json"
	"strings"
	"testing"

	"supportplatform.dev/pkg/apperr"
)

func TestEndUserInputNormalize(t *testing.T) {
	manyKeys := map[string]int{}
	for i := range MaxCustomFields + 1 {
		manyKeys[strings.Repeat("k", i+1)] = i
	}
	tooMany, _ := json.Marshal(manyKeys)
	delete(manyKeys, strings.Repeat("k", MaxCustomFields+1))
	fifty, _ := json.Marshal(manyKeys)
	big := `{"v":"` + strings.Repeat("x", MaxCustomFieldsBytes) + `"}`
	cases := []struct {
		name     string
		in       EndUserInput
		badField string // "" = valid
		want     EndUserInput
	}{
		{"minimal", EndUserInput{Name: "  Ada  "}, "", EndUserInput{Name: "Ada", CustomFields: json.RawMessage(`{}`)}},
		{"everything normalised", EndUserInput{Name: "Ada", Email: " Ada@Example.COM ", Phone: " +44 (0)20-7946 0000 ", Language: "ENG",
			CustomFields: json.RawMessage(` { "a" : [1, 2] } `)}, "",
			EndUserInput{Name: "Ada", Email: "ada@example.com", Phone: "+44 (0)20-7946 0000", Language: "en", CustomFields: json.RawMessage(`{"a":[1,2]}`)}},
		{"null custom fields", EndUserInput{Name: "A", CustomFields: json.RawMessage(`null`)}, "", EndUserInput{Name: "A", CustomFields: json.RawMessage(`{}`)}},
		{"fifty keys", EndUserInput{Name: "A", CustomFields: fifty}, "", EndUserInput{Name: "A", CustomFields: fifty}},
		{"name missing", EndUserInput{}, "name", EndUserInput{}},
		{"name blank", EndUserInput{Name: "   "}, "name", EndUserInput{}},
		{"name 200", EndUserInput{Name: strings.Repeat("é", 200)}, "", EndUserInput{Name: strings.Repeat("é", 200), CustomFields: json.RawMessage(`{}`)}},
		{"name 201", EndUserInput{Name: strings.Repeat("é", 201)}, "name", EndUserInput{}},
		{"name control character", EndUserInput{Name: "A\nB"}, "name", EndUserInput{}},
		{"email with display name", EndUserInput{Name: "A", Email: "Ada <ada@example.com>"}, "email", EndUserInput{}},
		{"email two addresses", EndUserInput{Name: "A", Email: "a@example.com, b@example.com"}, "email", EndUserInput{}},
		{"email no domain", EndUserInput{Name: "A", Email: "ada"}, "email", EndUserInput{}},
		{"phone letters", EndUserInput{Name: "A", Phone: "call me"}, "phone", EndUserInput{}},
		{"phone without digits", EndUserInput{Name: "A", Phone: "+()"}, "phone", EndUserInput{}},
		{"phone 41", EndUserInput{Name: "A", Phone: strings.Repeat("1", 41)}, "phone", EndUserInput{}},
		{"language unknown", EndUserInput{Name: "A", Language: "xx"}, "language", EndUserInput{}},
		{"language with region", EndUserInput{Name: "A", Language: "en-US"}, "language", EndUserInput{}},
		{"custom fields array", EndUserInput{Name: "A", CustomFields: json.RawMessage(`[1]`)}, "customFieldsData", EndUserInput{}},
		{"custom fields string", EndUserInput{Name: "A", CustomFields: json.RawMessage(`"x"`)}, "customFieldsData", EndUserInput{}},
		{"custom fields number", EndUserInput{Name: "A", CustomFields: json.RawMessage(`3`)}, "customFieldsData", EndUserInput{}},
		{"custom fields too many keys", EndUserInput{Name: "A", CustomFields: tooMany}, "customFieldsData", EndUserInput{}},
		{"custom fields too large", EndUserInput{Name: "A", CustomFields: json.RawMessage(big)}, "customFieldsData", EndUserInput{}},
		{"custom fields empty key", EndUserInput{Name: "A", CustomFields: json.RawMessage(`{"":1}`)}, "customFieldsData", EndUserInput{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.in.Normalize()
			if tc.badField != "" {
				if !apperr.Is(err, apperr.Invalid) {
					t.Fatalf("want invalid, got %v", err)
				}
				if f := err.(*apperr.Error).Fields; f[tc.badField] == "" || len(f) != 1 {
					t.Fatalf("fields %v, want only %s", f, tc.badField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tc.want.Name || got.Email != tc.want.Email || got.Phone != tc.want.Phone ||
				got.Language != tc.want.Language || string(got.CustomFields) != string(tc.want.CustomFields) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseEndUserSort(t *testing.T) {
	cases := []struct {
		raw  string
		want EndUserSort
		bad  bool
	}{
		{"", EndUserSort{By: SortByID}, false},
		{"endUserID", EndUserSort{By: SortByID}, false},
		{"-endUserId", EndUserSort{By: SortByID, Desc: true}, false},
		{"name", EndUserSort{By: SortByName}, false},
		{"-name", EndUserSort{By: SortByName, Desc: true}, false},
		{"dateCreated", EndUserSort{By: SortByCreated}, false},
		{"-dateCreated", EndUserSort{By: SortByCreated, Desc: true}, false},
		{"email", EndUserSort{}, true},
		{"--name", EndUserSort{}, true},
		{"+name", EndUserSort{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.raw, func(t *testing.T) {
			got, err := ParseEndUserSort(tc.raw)
			if tc.bad {
				if !apperr.Is(err, apperr.Invalid) {
					t.Fatalf("want invalid, got %v", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v %v", got, err)
			}
		})
	}
}
