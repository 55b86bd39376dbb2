package tickets

import "supportplatform.dev/ai/langdetect"

// searchConfigs maps ISO 639-1 codes to the PostgreSQL text search
// configurations (stemmers) of PostgreSQL 13 and later.
var searchConfigs = map[string]string{
	"ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "da": "danish", "nl": "dutch",
	"en": "english", "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
	"hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian",
	"ne": "nepali", "no": "norwegian", "nb": "norwegian", "nn": "norwegian", "pt": "portuguese",
	"ro": "romanian", "ru": "russian", "sr": "serbian", "es": "spanish", "sv": "swedish", "ta": "tamil",
	"tr": "turkish", "yi": "yiddish",
}

// TextLanguage detects the language of a text for full-text search: its ISO
// 639-1 code ("" when not recognised) and the PostgreSQL text search
// configuration that stems it ("simple" when there is none). A guess that
// is not confident counts as not recognised: the text is then indexed by
// its exact words only.
func TextLanguage(text string) (lang, config string) {
	r := langdetect.DetectText(text)
	if r.Lang == "" || (!r.Reliable && r.Confidence < 0.5) {
		return "", "simple"
	}
	if cfg, ok := searchConfigs[r.Lang]; ok {
		return r.Lang, cfg
	}
	return r.Lang, "simple"
}
