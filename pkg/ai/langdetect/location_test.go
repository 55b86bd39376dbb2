package langdetect

import (
	"errors"
	"testing"

	"supportplatform.dev/ai/langcode"
)

func TestForLocation(t *testing.T) {
	tests := []struct {
		name    string
		loc     Location
		want    string
		country string
		basis   Basis
	}{
		// Countries alone: CLDR likely language, by code, alpha-3, name or alias.
		{"Germany by name", Location{Country: "Germany"}, "de", "DE", BasisCountry},
		{"Germany alpha-2 lower case", Location{Country: "de"}, "de", "DE", BasisCountry},
		{"Germany alpha-3", Location{Country: "DEU"}, "de", "DE", BasisCountry},
		{"France", Location{Country: "FRANCE"}, "fr", "FR", BasisCountry},
		{"Spain alone", Location{Country: "Spain"}, "es", "ES", BasisCountry},
		{"Japan", Location{Country: "JP"}, "ja", "JP", BasisCountry},
		{"Brazil", Location{Country: "Brazil"}, "pt", "BR", BasisCountry},
		{"China", Location{Country: "China"}, "zh", "CN", BasisCountry},
		{"USA alias", Location{Country: "USA"}, "en", "US", BasisCountry},
		{"United States of America alias", Location{Country: "United States of America"}, "en", "US", BasisCountry},
		{"UK alias", Location{Country: "UK"}, "en", "GB", BasisCountry},
		{"Russia", Location{Country: "Russia"}, "ru", "RU", BasisCountry},
		{"Russian Federation alias", Location{Country: "Russian Federation"}, "ru", "RU", BasisCountry},
		{"South Korea", Location{Country: "South Korea"}, "ko", "KR", BasisCountry},
		{"Czech Republic alias", Location{Country: "Czech Republic"}, "cs", "CZ", BasisCountry},
		{"Czechia", Location{Country: "czechia"}, "cs", "CZ", BasisCountry},
		{"Ivory Coast alias", Location{Country: "Ivory Coast"}, "fr", "CI", BasisCountry},
		{"Côte d'Ivoire with plain apostrophe", Location{Country: "Cote d'Ivoire"}, "fr", "CI", BasisCountry},
		{"The Netherlands", Location{Country: "The Netherlands"}, "nl", "NL", BasisCountry},
		{"St. abbreviation", Location{Country: "Saint Lucia"}, "en", "LC", BasisCountry},
		{"ampersand written out", Location{Country: "Trinidad and Tobago"}, "en", "TT", BasisCountry},
		{"local name", Location{Country: "Deutschland"}, "de", "DE", BasisCountry},
		{"Paraguay answers Spanish, not Guarani", Location{Country: "Paraguay"}, "es", "PY", BasisCountry},
		{"Belarus answers Russian", Location{Country: "BY"}, "ru", "BY", BasisCountry},
		{"Aland is its own ISO country", Location{Country: "AX"}, "sv", "AX", BasisCountry},
		{"Puerto Rico as a country", Location{Country: "Puerto Rico"}, "es", "PR", BasisCountry},
		{"Andorra", Location{Country: "Andorra"}, "ca", "AD", BasisCountry},

		// Canada.
		{"Canada alone", Location{Country: "Canada"}, "en", "CA", BasisCountry},
		{"Quebec by name", Location{Country: "Canada", State: "Quebec"}, "fr", "CA", BasisState},
		{"Québec accented", Location{Country: "CA", State: "QUÉBEC"}, "fr", "CA", BasisState},
		{"Quebec by ISO code", Location{Country: "CAN", State: "QC"}, "fr", "CA", BasisState},
		{"Quebec by prefixed ISO code", Location{Country: "Canada", State: "CA-QC"}, "fr", "CA", BasisState},
		{"Montreal without state", Location{Country: "Canada", City: "Montreal"}, "fr", "CA", BasisCity},
		{"Montréal accented in Quebec", Location{Country: "Canada", State: "QC", City: "montréal"}, "fr", "CA", BasisCity},
		{"Ontario", Location{Country: "Canada", State: "Ontario", City: "Toronto"}, "en", "CA", BasisState},
		{"Edmundston in New Brunswick", Location{Country: "Canada", State: "NB", City: "Edmundston"}, "fr", "CA", BasisCity},

		// Spain.
		{"Catalonia", Location{Country: "Spain", State: "Catalonia"}, "ca", "ES", BasisState},
		{"Catalunya local name", Location{Country: "ES", State: "Catalunya"}, "ca", "ES", BasisState},
		{"Barcelona without state", Location{Country: "Spain", City: "Barcelona"}, "ca", "ES", BasisCity},
		{"Basque Country", Location{Country: "Spain", State: "Basque Country"}, "eu", "ES", BasisState},
		{"Bilbao", Location{Country: "Spain", City: "Bilbao"}, "eu", "ES", BasisCity},
		{"Euskadi local name", Location{Country: "España", State: "Euskadi"}, "eu", "ES", BasisState},
		{"Galicia", Location{Country: "Spain", State: "Galicia"}, "gl", "ES", BasisState},
		{"Santiago de Compostela", Location{Country: "Spain", City: "Santiago de Compostela"}, "gl", "ES", BasisCity},
		{"Madrid", Location{Country: "Spain", State: "Madrid", City: "Madrid"}, "es", "ES", BasisState},
		{"Valencia stays Spanish", Location{Country: "Spain", State: "Valencia"}, "es", "ES", BasisState},
		{"Mallorca", Location{Country: "Spain", State: "Illes Balears", City: "Palma"}, "ca", "ES", BasisCity},

		// Belgium.
		{"Belgium alone", Location{Country: "Belgium"}, "nl", "BE", BasisCountry},
		{"Flanders", Location{Country: "Belgium", State: "Flanders"}, "nl", "BE", BasisState},
		{"Antwerp", Location{Country: "Belgium", City: "Antwerp"}, "nl", "BE", BasisCity},
		{"Ghent Dutch spelling", Location{Country: "Belgium", City: "Gent"}, "nl", "BE", BasisCity},
		{"Wallonia", Location{Country: "Belgium", State: "Wallonia"}, "fr", "BE", BasisState},
		{"Liege without accent", Location{Country: "Belgium", City: "Liege"}, "fr", "BE", BasisCity},
		{"Namur", Location{Country: "BE", City: "Namur"}, "fr", "BE", BasisCity},
		{"Brussels", Location{Country: "Belgium", City: "Brussels"}, "fr", "BE", BasisCity},
		{"Bruxelles as state", Location{Country: "Belgique", State: "Bruxelles"}, "fr", "BE", BasisState},
		{"Eupen is German-speaking", Location{Country: "Belgium", State: "Liège", City: "Eupen"}, "de", "BE", BasisCity},

		// Switzerland.
		{"Switzerland alone", Location{Country: "Switzerland"}, "de", "CH", BasisCountry},
		{"Zurich without umlaut", Location{Country: "Switzerland", State: "Zurich"}, "de", "CH", BasisState},
		{"Zürich city", Location{Country: "CH", City: "Zürich"}, "de", "CH", BasisCity},
		{"Lugano", Location{Country: "Switzerland", City: "Lugano"}, "it", "CH", BasisCity},
		{"Genf German name", Location{Country: "Switzerland", City: "Genf"}, "fr", "CH", BasisCity},
		{"Bern", Location{Country: "Switzerland", State: "BE"}, "de", "CH", BasisState},
		{"Basel", Location{Country: "Switzerland", State: "Basel"}, "de", "CH", BasisState},
		{"Geneva", Location{Country: "Switzerland", State: "Geneva"}, "fr", "CH", BasisState},
		{"Genève", Location{Country: "Schweiz", State: "Genève"}, "fr", "CH", BasisState},
		{"Vaud", Location{Country: "Switzerland", State: "VD", City: "Lausanne"}, "fr", "CH", BasisCity},
		{"Vaud without a listed city", Location{Country: "Switzerland", State: "Vaud", City: "Ecublens"}, "fr", "CH", BasisState},
		{"Neuchâtel", Location{Country: "Switzerland", State: "Neuchatel"}, "fr", "CH", BasisState},
		{"Jura", Location{Country: "Switzerland", State: "Jura"}, "fr", "CH", BasisState},
		{"Ticino", Location{Country: "Switzerland", State: "Ticino"}, "it", "CH", BasisState},
		{"Zermatt in Valais speaks German", Location{Country: "Switzerland", State: "Valais", City: "Zermatt"}, "de", "CH", BasisCity},

		// United Kingdom.
		{"Wales", Location{Country: "United Kingdom", State: "Wales"}, "en", "GB", BasisState},
		{"Cardiff", Location{Country: "GB", State: "Wales", City: "Cardiff"}, "en", "GB", BasisState},
		{"Wales as a country name", Location{Country: "Wales"}, "en", "GB", BasisState},
		{"Gwynedd", Location{Country: "UK", State: "Gwynedd"}, "cy", "GB", BasisState},
		{"Scotland", Location{Country: "UK", State: "Scotland", City: "Glasgow"}, "en", "GB", BasisState},

		// Others.
		{"Aland as a Finnish region", Location{Country: "Finland", State: "Åland"}, "sv", "FI", BasisState},
		{"Aland by ISO 3166-2 code", Location{Country: "FI", State: "FI-01"}, "sv", "FI", BasisState},
		{"Helsinki", Location{Country: "Finland", City: "Helsinki"}, "fi", "FI", BasisCountry},
		{"South Tyrol", Location{Country: "Italy", State: "South Tyrol"}, "de", "IT", BasisState},
		{"Südtirol", Location{Country: "Italia", State: "Südtirol"}, "de", "IT", BasisState},
		{"Bolzano city is Italian-speaking", Location{Country: "Italy", State: "South Tyrol", City: "Bolzano"}, "it", "IT", BasisCity},
		{"Puerto Rico as a US state", Location{Country: "United States", State: "Puerto Rico"}, "es", "US", BasisState},
		{"San Juan in Puerto Rico", Location{Country: "US", City: "San Juan"}, "es", "US", BasisCity},
		{"San Juan in Texas", Location{Country: "US", State: "TX", City: "San Juan"}, "en", "US", BasisState},
		{"California", Location{Country: "USA", State: "California", City: "Los Angeles"}, "en", "US", BasisState},
		{"India alone", Location{Country: "India"}, "hi", "IN", BasisCountry},
		{"Tamil Nadu", Location{Country: "India", State: "Tamil Nadu"}, "ta", "IN", BasisState},
		{"Chennai", Location{Country: "India", City: "Chennai"}, "ta", "IN", BasisCity},
		{"Bangalore old name", Location{Country: "India", City: "Bangalore"}, "kn", "IN", BasisCity},
		{"Maharashtra by code", Location{Country: "IN", State: "IN-MH"}, "mr", "IN", BasisState},
		{"Kolkata", Location{Country: "India", City: "Kolkata"}, "bn", "IN", BasisCity},
		{"Kerala", Location{Country: "India", State: "Kerala"}, "ml", "IN", BasisState},
		{"Goa answers Konkani (no ISO 639-1 code)", Location{Country: "India", State: "Goa"}, "kok", "IN", BasisState},
		{"Narva", Location{Country: "Estonia", City: "Narva"}, "ru", "EE", BasisCity},
		{"Tallinn", Location{Country: "Estonia", City: "Tallinn"}, "et", "EE", BasisCity},
		{"Erbil", Location{Country: "Iraq", City: "Erbil"}, "ku", "IQ", BasisCity},
		{"unmatched state falls back to the country", Location{Country: "France", State: "Bretagne", City: "Rennes"}, "fr", "FR", BasisCountry},
	}
	if len(tests) < 40 {
		t.Fatalf("only %d cases", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ForLocation(tt.loc)
			if err != nil {
				t.Fatalf("ForLocation(%+v): %v", tt.loc, err)
			}
			if got.Lang != tt.want || got.Country != tt.country || got.Basis != tt.basis {
				t.Fatalf("ForLocation(%+v) = %s/%s by %s, want %s/%s by %s",
					tt.loc, got.Lang, got.Country, got.Basis, tt.want, tt.country, tt.basis)
			}
		})
	}
}

func TestForLocationUndecided(t *testing.T) {
	tests := []struct {
		name string
		loc  Location
		want bool
	}{
		{"multilingual country, unknown city", Location{Country: "Switzerland", City: "Ascona"}, true},
		{"multilingual country, unknown state", Location{Country: "Belgium", State: "Somewhere"}, true},
		{"multilingual country, nothing more given", Location{Country: "Switzerland"}, false},
		{"multilingual country, recognised state", Location{Country: "Switzerland", State: "Ticino"}, false},
		{"single-language country, unknown city", Location{Country: "Germany", City: "Kleinkleckersdorf"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ForLocation(tt.loc)
			if err != nil {
				t.Fatal(err)
			}
			if got.Undecided(tt.loc) != tt.want {
				t.Fatalf("Undecided = %v for %+v (result %+v)", !tt.want, tt.loc, got)
			}
		})
	}
}

func TestForLocationErrors(t *testing.T) {
	for _, c := range []string{"", "   ", "Narnia", "XX", "ZZ", "EU", "Atlantis", "United Nations"} {
		t.Run("unknown "+c, func(t *testing.T) {
			_, err := ForLocation(Location{Country: c})
			var uce *UnknownCountryError
			if !errors.Is(err, ErrUnknownCountry) || !errors.As(err, &uce) || uce.Country != c {
				t.Fatalf("ForLocation(%q) error = %v, want *UnknownCountryError", c, err)
			}
		})
	}
	if _, err := ForLocation(Location{Country: "Antarctica"}); !errors.Is(err, ErrNoLanguage) {
		t.Fatalf("Antarctica error = %v, want ErrNoLanguage", err)
	}
}

// TestTablesUseNormalisedCodes guards the hand-written tables: every language they name must be a
// real code in the form the rest of the platform compares against.
func TestTablesUseNormalisedCodes(t *testing.T) {
	check := func(where, lang string) {
		if lang == "" {
			return
		}
		n, err := langcode.Normalize(lang)
		if err != nil || n != lang {
			t.Errorf("%s: language %q normalises to %q, %v", where, lang, n, err)
		}
	}
	for country, lang := range countryDefaults {
		check("default for "+country, lang)
	}
	for country, areas := range regionalLanguages {
		for _, a := range areas {
			check(country+"/"+a.names[0], a.lang)
			for _, c := range a.cities {
				check(country+"/"+a.names[0]+"/"+c.names[0], c.lang)
			}
		}
	}
	for alias, target := range countryAliases {
		code := target[:2]
		if _, ok := tables().defaults[code]; !ok {
			t.Errorf("alias %q points at %q, which is not a known country", alias, code)
		}
	}
	for code, lang := range tables().defaults {
		check("CLDR default for "+code, lang)
	}
}

func TestCountryCode(t *testing.T) {
	for in, want := range map[string]string{
		"gb": "GB", "GBR": "GBR"[:2], "Great Britain": "GB", "U.S.A.": "US", "america": "US",
		"Holland": "NL", "Türkiye": "TR", "Turkey": "TR", "Myanmar (Burma)": "MM", "Burma": "MM",
		"DR Congo": "CD", "Congo - Kinshasa": "CD", "Bosnia & Herzegovina": "BA", "Hong Kong": "HK",
		"Kosovo": "XK", "XKX": "XK",
	} {
		if got, ok := CountryCode(in); !ok || got != want {
			t.Errorf("CountryCode(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestFold(t *testing.T) {
	for in, want := range map[string]string{
		"Zürich":               "zurich",
		"  LIÈGE ":             "liege",
		"St. Gallen":           "saint gallen",
		"Côte d’Ivoire":        "cote divoire",
		"Bosnia & Herzegovina": "bosnia and herzegovina",
		"The Netherlands":      "netherlands",
		"Vitoria-Gasteiz":      "vitoria gasteiz",
		"Łódź":                 "lodz",
		"Åland":                "aland",
	} {
		if got := fold(in); got != want {
			t.Errorf("fold(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFoldAllocatesLittle: fold runs for every name as the tables are built and for every
// lookup; it must not build its transforms per call.
func TestFoldAllocatesLittle(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = fold("Saint-Jérôme & Sœurs St. Øster") }); n > 20 {
		t.Fatalf("fold allocates %.0f times per call, want at most 20", n)
	}
}
