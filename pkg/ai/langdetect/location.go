package langdetect

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/text/language"
	"golang.org/x/text/language/display"
	"golang.org/x/text/unicode/norm"

	"supportplatform.dev/ai/langcode"
)

// ErrUnknownCountry is matched (errors.Is) by the error for a country the tables do not know.
var ErrUnknownCountry = errors.New("unknown country")

// ErrNoLanguage is matched by the error for a territory without a population (Antarctica,
// Bouvet Island...), for which no language is likely.
var ErrNoLanguage = errors.New("no language is known for this territory")

// UnknownCountryError names the country input that matched nothing.
type UnknownCountryError struct {
	Country string
}

func (e *UnknownCountryError) Error() string {
	return fmt.Sprintf("unknown country %q: want an ISO 3166 alpha-2 or alpha-3 code or an English country name", e.Country)
}

// Is makes errors.Is(err, ErrUnknownCountry) hold.
func (e *UnknownCountryError) Is(target error) bool { return target == ErrUnknownCountry }

// Location is where a person is. Country is required; State (a region, province, canton...) and
// City refine the answer where a country speaks several languages.
type Location struct {
	Country, State, City string
}

// Basis says which part of a location decided the language.
type Basis int

const (
	BasisCountry Basis = iota
	BasisState
	BasisCity
)

func (b Basis) String() string {
	switch b {
	case BasisState:
		return "state"
	case BasisCity:
		return "city"
	}
	return "country"
}

// LocationResult is the likely language at a location.
type LocationResult struct {
	// Lang is the normalised ISO 639 code (639-1 when the language has one).
	Lang string
	// Country is the ISO 3166-1 alpha-2 code the country input resolved to.
	Country string
	Basis   Basis
	// Multilingual says the country's language differs by region. When State or City was given
	// but matched nothing (Basis is BasisCountry), the answer is the country's majority language
	// and a caller with a better source of knowledge may want to ask it.
	Multilingual bool
}

// Undecided reports whether a state or city was given that could have changed the answer but was
// not recognised.
func (r LocationResult) Undecided(loc Location) bool {
	return r.Multilingual && r.Basis == BasisCountry &&
		(strings.TrimSpace(loc.State) != "" || strings.TrimSpace(loc.City) != "")
}

// ForLocation returns the most likely language at loc: the CLDR likely language of the country,
// overridden by a table of regions and cities that speak another language (Quebec, Catalonia,
// Flanders, Ticino...). Names match without regard to case or accents, in English or local
// spelling, and states also by ISO 3166-2 code ("QC", "CA-QC").
func ForLocation(loc Location) (LocationResult, error) {
	t := tables()
	country, implied, ok := t.country(loc.Country)
	if !ok {
		return LocationResult{}, &UnknownCountryError{Country: loc.Country}
	}
	res := LocationResult{Country: country, Lang: t.defaults[country]}
	if res.Lang == "" {
		return LocationResult{}, fmt.Errorf("%w: %s", ErrNoLanguage, country)
	}
	areas := t.areas[country]
	res.Multilingual = areas != nil && areas.multilingual

	state := loc.State
	if strings.TrimSpace(state) == "" {
		state = implied
	}
	var a *area
	if areas != nil && strings.TrimSpace(state) != "" {
		a = areas.state(country, state)
	}
	if areas != nil && strings.TrimSpace(loc.City) != "" {
		if lang, ok := areas.city(loc.City, a); ok {
			res.Lang, res.Basis = lang, BasisCity
			return res, nil
		}
	}
	if a != nil {
		res.Lang, res.Basis = a.lang, BasisState
		if a.lang == "" {
			res.Lang = t.defaults[country]
		}
	}
	return res, nil
}

// CountryCode resolves a country code or English name to its ISO 3166-1 alpha-2 code.
func CountryCode(country string) (string, bool) {
	code, _, ok := tables().country(country)
	return code, ok
}

// fold makes names comparable: no accents, lower case, "&" as "and", "St." as "saint",
// punctuation as single spaces, and no leading "the".
//
// It runs for every name of the tables as they are built and for every lookup, so it builds
// nothing per call: a transform chain and two replacers per call made megabytes of garbage.
func fold(s string) string {
	s = norm.NFD.String(s)
	if strings.IndexFunc(s, isMark) >= 0 {
		s = strings.Map(func(r rune) rune {
			if isMark(r) {
				return -1
			}
			return r
		}, s)
	}
	s = norm.NFC.String(s)
	s = strings.ToLower(s)
	s = unaccented.Replace(s)
	s = punctuation.Replace(s)
	var b strings.Builder
	space := true
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	words := strings.Fields(b.String())
	if len(words) > 1 && words[0] == "the" {
		words = words[1:]
	}
	for i, w := range words {
		if w == "st" || w == "ste" {
			words[i] = "saint"
		}
	}
	return strings.Join(words, " ")
}

// Letters some languages write without a combining accent, and the punctuation fold drops or
// spells out (Replacers are safe for concurrent use).
var (
	unaccented  = strings.NewReplacer("ß", "ss", "ø", "o", "æ", "ae", "œ", "oe", "ł", "l", "đ", "d", "ı", "i")
	punctuation = strings.NewReplacer("&", " and ", ".", "", "'", "", "’", "")
)

// isMark reports a nonspacing mark (an accent once NFD has taken it off its letter).
func isMark(r rune) bool { return unicode.Is(unicode.Mn, r) }

type locationTables struct {
	names    map[string]string // folded name or code -> alpha-2
	implied  map[string]string // folded alias -> implied state (country "Wales" -> state "Wales")
	defaults map[string]string // alpha-2 -> language
	areas    map[string]*areaIndex
}

var tables = sync.OnceValue(buildTables)

func buildTables() *locationTables {
	t := &locationTables{
		names:    map[string]string{},
		implied:  map[string]string{},
		defaults: map[string]string{},
		areas:    map[string]*areaIndex{},
	}
	regionNames := display.English.Regions()
	for a := 'A'; a <= 'Z'; a++ {
		for b := 'A'; b <= 'Z'; b++ {
			code := string([]rune{a, b})
			r, err := language.ParseRegion(code)
			if err != nil || !r.IsCountry() || r.Canonicalize() != r || notCountries[code] {
				continue
			}
			name := regionNames.Name(r)
			if name == "" || name == "Unknown Region" {
				continue
			}
			t.names[fold(name)] = code
			t.names[strings.ToLower(code)] = code
			if iso3 := r.ISO3(); iso3 != "" && iso3 != "ZZZ" {
				t.names[strings.ToLower(iso3)] = code
			}
			t.defaults[code] = likelyLanguage(code, r)
		}
	}
	for alias, target := range countryAliases {
		code, state, _ := strings.Cut(target, "/")
		t.names[fold(alias)] = code
		if state != "" {
			t.implied[fold(alias)] = state
		}
	}
	for code, list := range regionalLanguages {
		t.areas[code] = newAreaIndex(t.defaults[code], list)
	}
	return t
}

// notCountries are codes x/text marks as countries that are not places people live in.
var notCountries = map[string]bool{"UN": true, "EZ": true}

func likelyLanguage(code string, r language.Region) string {
	if lang, ok := countryDefaults[code]; ok {
		return lang
	}
	tag, err := language.Compose(language.Und, r)
	if err != nil {
		return ""
	}
	base, conf := tag.Base()
	if conf == language.No {
		return ""
	}
	n, err := langcode.Normalize(base.String())
	if err != nil {
		return ""
	}
	return n
}

func (t *locationTables) country(s string) (code, impliedState string, ok bool) {
	f := fold(s)
	if f == "" {
		return "", "", false
	}
	if code, ok := t.names[f]; ok {
		return code, t.implied[f], true
	}
	// Codes in deprecated or numeric form (UK, 826) that x/text maps to a current country.
	if r, err := language.ParseRegion(strings.TrimSpace(s)); err == nil && r.IsCountry() {
		if code, ok := t.names[strings.ToLower(r.Canonicalize().String())]; ok {
			return code, "", true
		}
	}
	return "", "", false
}

// area is a subdivision (state, province, region, canton) with its language and the cities in
// it that differ from it. An empty lang means the country's default.
type area struct {
	lang   string
	names  []string
	cities []place
}

type place struct {
	lang  string
	names []string
}

type cityRef struct {
	lang string
	in   *area
}

type areaIndex struct {
	multilingual bool
	byName       map[string]*area
	cities       map[string][]cityRef
}

func newAreaIndex(def string, list []area) *areaIndex {
	idx := &areaIndex{byName: map[string]*area{}, cities: map[string][]cityRef{}}
	for i := range list {
		a := &list[i]
		if a.lang != "" && a.lang != def {
			idx.multilingual = true
		}
		for _, n := range a.names {
			idx.byName[fold(n)] = a
		}
		for _, c := range a.cities {
			lang := c.lang
			if lang == "" {
				lang = a.lang
			}
			if lang == "" {
				lang = def
			}
			if lang != def {
				idx.multilingual = true
			}
			for _, n := range c.names {
				f := fold(n)
				idx.cities[f] = append(idx.cities[f], cityRef{lang: lang, in: a})
			}
		}
	}
	return idx
}

func (idx *areaIndex) state(country, s string) *area {
	f := fold(s)
	if a, ok := idx.byName[f]; ok {
		return a
	}
	// ISO 3166-2 codes come with the country prefix: "CA-QC" folds to "ca qc".
	if rest, ok := strings.CutPrefix(f, strings.ToLower(country)+" "); ok {
		return idx.byName[rest]
	}
	return nil
}

// city finds a city, within the state when one was recognised. A city name used in several
// areas with different languages is ignored unless the state settles it.
func (idx *areaIndex) city(s string, in *area) (string, bool) {
	refs := idx.cities[fold(s)]
	if len(refs) == 0 {
		return "", false
	}
	if in != nil {
		for _, r := range refs {
			if r.in == in {
				return r.lang, true
			}
		}
		return "", false
	}
	for _, r := range refs[1:] {
		if r.lang != refs[0].lang {
			return "", false
		}
	}
	return refs[0].lang, true
}
