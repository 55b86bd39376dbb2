package langdetect

// The tables below answer "which language would a helpdesk greet this person in", which is not
// always the language most people there speak at home. The rule used throughout: the language of
// the majority of a region's residents in daily written use; where a region is officially
// bilingual but one language clearly dominates in business, that one.

// countryDefaults replaces CLDR's likely language where CLDR names the most spoken home language
// but business, government and written support use another.
var countryDefaults = map[string]string{
	"PY": "es", // CLDR: Guarani. Spanish is the written and business language.
	"BY": "ru", // CLDR: Belarusian. Most residents use Russian day to day.
	"CD": "fr", // CLDR: Swahili (east only). French is the national written language.
	"DJ": "fr", // CLDR: Afar. French and Arabic are official; French dominates in writing.
	"GH": "en", // CLDR: Akan. English is the official and business language.
	"NA": "en", // CLDR: Afrikaans. English is the sole official language.
	"PG": "en", // CLDR: Tok Pisin. English is the language of written business.
	"UG": "en", // CLDR: Swahili. English is by far the main written language.
	"ZW": "en", // CLDR: Shona. English is the language of business and government.
	"MU": "fr", // CLDR: Morisyen (spoken). French is the main written language.
}

// countryAliases adds names people type that the CLDR English names do not cover. A value
// "GB/Wales" also implies the state when none is given.
var countryAliases = map[string]string{
	"USA": "US", "U.S.A.": "US", "U.S.": "US", "United States of America": "US", "America": "US",
	"UK": "GB", "U.K.": "GB", "Great Britain": "GB", "Britain": "GB",
	"England": "GB/England", "Scotland": "GB/Scotland", "Wales": "GB/Wales", "Northern Ireland": "GB/Northern Ireland",
	"Russian Federation": "RU",
	"Korea":              "KR", "Republic of Korea": "KR", "Korea, Republic of": "KR", "Korea South": "KR",
	"Democratic People's Republic of Korea": "KP", "DPRK": "KP", "Korea North": "KP",
	"Czech Republic": "CZ", "Ivory Coast": "CI", "Cote d'Ivoire": "CI",
	"Holland": "NL", "Burma": "MM", "Myanmar": "MM",
	"DR Congo": "CD", "DRC": "CD", "Democratic Republic of the Congo": "CD",
	"Republic of the Congo": "CG", "Congo": "CG",
	"Vatican": "VA", "Holy See": "VA",
	"Turkey": "TR", "Türkiye": "TR", "Turkiye": "TR",
	"Macedonia": "MK", "North Macedonia": "MK", "Republic of North Macedonia": "MK",
	"Swaziland": "SZ", "Eswatini": "SZ",
	"UAE": "AE", "Emirates": "AE",
	"Hong Kong": "HK", "Macau": "MO", "Macao": "MO",
	"Iran, Islamic Republic of": "IR", "Islamic Republic of Iran": "IR",
	"Syrian Arab Republic": "SY", "Lao PDR": "LA", "Lao People's Democratic Republic": "LA",
	"Viet Nam": "VN", "Republic of Moldova": "MD", "United Republic of Tanzania": "TZ",
	"Cabo Verde": "CV", "Cape Verde": "CV", "East Timor": "TL", "Timor-Leste": "TL",
	"Palestine": "PS", "State of Palestine": "PS",
	"Federated States of Micronesia": "FM", "Brunei Darussalam": "BN",
	"Bosnia": "BA", "Bosnia Herzegovina": "BA", "XKX": "XK", "Aland": "AX",
	"Deutschland": "DE", "España": "ES", "Italia": "IT", "Schweiz": "CH", "Suisse": "CH", "Svizzera": "CH",
	"Belgique": "BE", "België": "BE", "Belgien": "BE", "Nederland": "NL", "Österreich": "AT", "Polska": "PL",
	"Brasil": "BR", "Sverige": "SE", "Norge": "NO", "Danmark": "DK", "Suomi": "FI", "Éire": "IE",
}

func st(lang string, names ...string) area { return area{lang: lang, names: names} }

func (a area) with(cities ...place) area { a.cities = append(a.cities, cities...); return a }

func city(lang string, names ...string) place { return place{lang: lang, names: names} }

// regionalLanguages lists, per country, the subdivisions (with their names in English and local
// spelling and their ISO 3166-2 code) whose language differs from the country's, and cities that
// differ from their region. Where a country is listed, its other subdivisions are listed too with
// an empty language, so that a recognised state keeps a city name from another state from
// matching ("San Juan, Texas" is not Puerto Rico).
var regionalLanguages = map[string][]area{
	"CA": {
		st("fr", "Quebec", "Québec", "QC", "Province of Quebec").with(
			city("", "Montreal", "Montréal", "Quebec City", "Québec", "Ville de Québec", "Laval", "Gatineau",
				"Longueuil", "Sherbrooke", "Saguenay", "Trois-Rivières", "Lévis")),
		// New Brunswick is officially bilingual with an English majority; its north-west is French.
		st("", "New Brunswick", "Nouveau-Brunswick", "NB").with(city("fr", "Edmundston", "Caraquet", "Shippagan")),
		st("", "Ontario", "ON"), st("", "British Columbia", "Colombie-Britannique", "BC"), st("", "Alberta", "AB"),
		st("", "Manitoba", "MB"), st("", "Saskatchewan", "SK"), st("", "Nova Scotia", "Nouvelle-Écosse", "NS"),
		st("", "Prince Edward Island", "Île-du-Prince-Édouard", "PE", "PEI"),
		st("", "Newfoundland and Labrador", "Newfoundland", "Terre-Neuve-et-Labrador", "NL"),
		st("", "Yukon", "YT"), st("", "Northwest Territories", "Territoires du Nord-Ouest", "NT"),
		// Nunavut's majority speaks Inuktitut at home, but services and business run in English.
		st("", "Nunavut", "NU"),
	},
	"ES": {
		st("ca", "Catalonia", "Catalunya", "Cataluña", "CT", "CAT",
			"Barcelona", "B", "Girona", "Gerona", "GI", "Lleida", "Lérida", "L", "Tarragona", "T").with(
			city("", "Barcelona", "Girona", "Gerona", "Lleida", "Lérida", "Tarragona", "Sabadell", "Terrassa",
				"Badalona", "L'Hospitalet de Llobregat", "Reus", "Mataró")),
		st("ca", "Balearic Islands", "Illes Balears", "Islas Baleares", "Baleares", "IB", "PM").with(
			city("", "Palma", "Palma de Mallorca", "Ibiza", "Eivissa", "Mahón", "Maó")),
		// As the brief of this service asks, the Basque Country answers Basque. Spanish is more
		// widely spoken there, so this is the one regional choice that favours identity over
		// majority; a helpdesk that prefers Spanish can change this line.
		st("eu", "Basque Country", "País Vasco", "Euskadi", "Euskal Herria", "PV",
			"Biscay", "Vizcaya", "Bizkaia", "BI", "Gipuzkoa", "Guipúzcoa", "SS", "Álava", "Araba", "VI").with(
			city("", "Bilbao", "Bilbo", "San Sebastián", "Donostia", "Donostia-San Sebastián", "Vitoria-Gasteiz",
				"Vitoria", "Gasteiz", "Getxo", "Barakaldo")),
		st("gl", "Galicia", "Galiza", "GA", "A Coruña", "La Coruña", "C", "Lugo", "LU", "Ourense", "Orense", "OR",
			"Pontevedra", "PO").with(
			city("", "Santiago de Compostela", "Santiago", "Vigo", "A Coruña", "La Coruña", "Ourense", "Lugo",
				"Pontevedra", "Ferrol")),
		// The Valencian Community is officially bilingual, but Spanish dominates daily use in its
		// cities, Valencia and Alicante included.
		st("", "Valencian Community", "Comunitat Valenciana", "Comunidad Valenciana", "Valencia", "VC"),
		st("", "Andalusia", "Andalucía", "AN"), st("", "Aragon", "Aragón", "AR"),
		st("", "Asturias", "AS"), st("", "Canary Islands", "Canarias", "CN"), st("", "Cantabria", "CB"),
		st("", "Castile and León", "Castilla y León", "CL"), st("", "Castilla-La Mancha", "CM"),
		st("", "Extremadura", "EX"), st("", "Community of Madrid", "Madrid", "MD"), st("", "Murcia", "MC"),
		st("", "Navarre", "Navarra", "NC"), st("", "La Rioja", "RI"), st("", "Ceuta", "CE"), st("", "Melilla", "ML"),
	},
	"BE": {
		st("nl", "Flanders", "Flemish Region", "Vlaanderen", "Vlaams Gewest", "Flandre", "VLG",
			"Antwerp", "Antwerpen", "Anvers", "VAN", "East Flanders", "Oost-Vlaanderen", "Flandre-Orientale", "VOV",
			"West Flanders", "West-Vlaanderen", "Flandre-Occidentale", "VWV", "Flemish Brabant", "Vlaams-Brabant",
			"Brabant flamand", "VBR", "Limburg", "Limbourg", "VLI").with(
			city("", "Antwerp", "Antwerpen", "Anvers", "Ghent", "Gent", "Gand", "Bruges", "Brugge", "Leuven",
				"Louvain", "Mechelen", "Malines", "Hasselt", "Ostend", "Oostende", "Kortrijk", "Courtrai", "Aalst")),
		st("fr", "Wallonia", "Walloon Region", "Wallonie", "Région wallonne", "WAL",
			"Hainaut", "Henegouwen", "WHT", "Liège", "Luik", "Lüttich", "WLG", "Luxembourg", "Luxemburg", "WLX",
			"Namur", "Namen", "WNA", "Walloon Brabant", "Brabant wallon", "Waals-Brabant", "WBR").with(
			city("", "Liège", "Luik", "Lüttich", "Namur", "Namen", "Charleroi", "Mons", "Bergen", "Tournai",
				"Wavre", "Arlon", "Louvain-la-Neuve", "Verviers"),
			// The German-speaking Community lies inside the province of Liège.
			city("de", "Eupen", "Sankt Vith", "Saint-Vith", "Kelmis", "La Calamine")),
		// Brussels is officially bilingual; about nine in ten residents use French.
		st("fr", "Brussels", "Brussels-Capital Region", "Brussels Capital", "Bruxelles", "Bruxelles-Capitale",
			"Brussel", "Brussels Hoofdstedelijk Gewest", "BRU").with(
			city("", "Brussels", "Bruxelles", "Brussel", "Ixelles", "Elsene", "Schaerbeek", "Schaarbeek",
				"Anderlecht", "Molenbeek", "Uccle", "Ukkel", "Etterbeek")),
		st("de", "German-speaking Community", "Ostbelgien", "Deutschsprachige Gemeinschaft", "East Belgium"),
	},
	"CH": {
		st("de", "Zürich", "Zurich", "ZH").with(city("", "Zürich", "Zurich", "Winterthur")), st("de", "Bern", "Berne", "BE").with(city("", "Bern", "Berne", "Biel", "Bienne", "Biel/Bienne", "Thun")), st("de", "Basel-Stadt", "Basel", "Bâle", "BS").with(city("", "Basel", "Bâle", "Basle")),
		st("de", "Basel-Landschaft", "Basel-Land", "BL"), st("de", "Lucerne", "Luzern", "LU").with(city("", "Lucerne", "Luzern")),
		st("de", "St. Gallen", "Sankt Gallen", "Saint-Gall", "SG").with(city("", "St. Gallen", "Sankt Gallen")), st("de", "Aargau", "Argovie", "AG"),
		st("de", "Thurgau", "Thurgovie", "TG"), st("de", "Zug", "Zoug", "ZG"), st("de", "Schwyz", "SZ"),
		st("de", "Uri", "UR"), st("de", "Obwalden", "OW"), st("de", "Nidwalden", "NW"), st("de", "Glarus", "GL"),
		st("de", "Schaffhausen", "Schaffhouse", "SH"), st("de", "Appenzell Ausserrhoden", "AR"),
		st("de", "Appenzell Innerrhoden", "AI"), st("de", "Solothurn", "Soleure", "SO"),
		// Graubünden is trilingual; German is the majority language.
		st("de", "Graubünden", "Grisons", "Grigioni", "Grischun", "GR").with(city("", "Chur", "Davos", "St. Moritz")),
		st("fr", "Geneva", "Genève", "Genf", "Ginevra", "GE").with(city("", "Geneva", "Genève", "Genf", "Ginevra")), st("fr", "Vaud", "Waadt", "VD").with(city("", "Lausanne", "Montreux", "Yverdon-les-Bains", "Vevey", "Nyon")),
		st("fr", "Neuchâtel", "Neuenburg", "NE").with(city("", "Neuchâtel", "La Chaux-de-Fonds")), st("fr", "Jura", "JU").with(city("", "Delémont")),
		st("fr", "Fribourg", "Freiburg", "FR").with(city("", "Fribourg")),
		st("fr", "Valais", "Wallis", "VS").with(
			// Upper Valais speaks German.
			city("de", "Brig", "Brig-Glis", "Visp", "Zermatt", "Saas-Fee", "Leukerbad"), city("", "Sion", "Sitten", "Martigny", "Monthey", "Sierre")),
		st("it", "Ticino", "Tessin", "TI").with(city("", "Lugano", "Bellinzona", "Locarno", "Mendrisio")),
	},
	"FI": {
		st("sv", "Åland", "Aland", "Åland Islands", "Ahvenanmaa", "01").with(city("", "Mariehamn", "Maarianhamina")),
	},
	"IT": {
		// South Tyrol's majority speaks German; the city of Bolzano itself is mostly Italian-speaking.
		st("de", "South Tyrol", "Südtirol", "Alto Adige", "Province of Bolzano", "Bolzano-Bozen", "BZ").with(
			city("it", "Bolzano", "Bozen"), city("", "Brixen", "Bressanone", "Bruneck", "Brunico", "Meran", "Merano")),
		st("", "Trentino", "Province of Trento", "TN"), st("", "Aosta Valley", "Valle d'Aosta", "Vallée d'Aoste", "AO"),
	},
	"GB": {
		st("en", "England", "ENG"), st("en", "Scotland", "SCT"), st("en", "Northern Ireland", "NIR"),
		// About one in five people in Wales speaks Welsh, and most of them also read English, so a
		// greeting in Welsh would be unreadable to most of Wales. Only Gwynedd, where most residents
		// speak Welsh daily, answers Welsh.
		st("en", "Wales", "Cymru", "WLS").with(city("cy", "Caernarfon", "Pwllheli", "Blaenau Ffestiniog")),
		st("cy", "Gwynedd", "GWN"),
		// The Outer Hebrides are the one council area where most residents speak Scottish Gaelic.
		st("gd", "Outer Hebrides", "Na h-Eileanan Siar", "Western Isles", "ELS"),
	},
	"US": {
		st("es", "Puerto Rico", "PR").with(city("", "San Juan", "Ponce", "Bayamón", "Mayagüez", "Caguas", "Arecibo")),
		st("", "Alabama", "AL"), st("", "Alaska", "AK"), st("", "Arizona", "AZ"), st("", "Arkansas", "AR"),
		st("", "California", "CA"), st("", "Colorado", "CO"), st("", "Connecticut", "CT"), st("", "Delaware", "DE"),
		st("", "District of Columbia", "Washington DC", "DC"), st("", "Florida", "FL"), st("", "Georgia", "GA"),
		st("", "Hawaii", "HI"), st("", "Idaho", "ID"), st("", "Illinois", "IL"), st("", "Indiana", "IN"),
		st("", "Iowa", "IA"), st("", "Kansas", "KS"), st("", "Kentucky", "KY"), st("", "Louisiana", "LA"),
		st("", "Maine", "ME"), st("", "Maryland", "MD"), st("", "Massachusetts", "MA"), st("", "Michigan", "MI"),
		st("", "Minnesota", "MN"), st("", "Mississippi", "MS"), st("", "Missouri", "MO"), st("", "Montana", "MT"),
		st("", "Nebraska", "NE"), st("", "Nevada", "NV"), st("", "New Hampshire", "NH"), st("", "New Jersey", "NJ"),
		st("", "New Mexico", "NM"), st("", "New York", "NY"), st("", "North Carolina", "NC"),
		st("", "North Dakota", "ND"), st("", "Ohio", "OH"), st("", "Oklahoma", "OK"), st("", "Oregon", "OR"),
		st("", "Pennsylvania", "PA"), st("", "Rhode Island", "RI"), st("", "South Carolina", "SC"),
		st("", "South Dakota", "SD"), st("", "Tennessee", "TN"), st("", "Texas", "TX"), st("", "Utah", "UT"),
		st("", "Vermont", "VT"), st("", "Virginia", "VA"), st("", "Washington", "WA"),
		st("", "West Virginia", "WV"), st("", "Wisconsin", "WI"), st("", "Wyoming", "WY"),
		st("", "Guam", "GU"), st("", "U.S. Virgin Islands", "VI"), st("", "American Samoa", "AS"),
		st("", "Northern Mariana Islands", "MP"),
	},
	"IN": {
		st("te", "Andhra Pradesh", "AP").with(city("", "Visakhapatnam", "Vizag", "Vijayawada", "Guntur", "Tirupati")),
		st("en", "Arunachal Pradesh", "AR"), st("as", "Assam", "AS").with(city("", "Guwahati", "Dispur")),
		st("hi", "Bihar", "BR").with(city("", "Patna")), st("hi", "Chhattisgarh", "CT", "CG"),
		st("kok", "Goa", "GA").with(city("", "Panaji", "Panjim", "Margao")),
		st("gu", "Gujarat", "GJ").with(city("", "Ahmedabad", "Surat", "Vadodara", "Baroda", "Rajkot", "Gandhinagar")),
		st("hi", "Haryana", "HR").with(city("", "Gurugram", "Gurgaon", "Faridabad")),
		st("hi", "Himachal Pradesh", "HP"), st("hi", "Jharkhand", "JH").with(city("", "Ranchi", "Jamshedpur")),
		st("kn", "Karnataka", "KA").with(city("", "Bengaluru", "Bangalore", "Mysuru", "Mysore", "Mangaluru", "Mangalore", "Hubli")),
		st("ml", "Kerala", "KL").with(city("", "Thiruvananthapuram", "Trivandrum", "Kochi", "Cochin", "Kozhikode", "Calicut")),
		st("hi", "Madhya Pradesh", "MP").with(city("", "Bhopal", "Indore")),
		st("mr", "Maharashtra", "MH").with(city("", "Mumbai", "Bombay", "Pune", "Nagpur", "Nashik", "Thane")),
		st("mni", "Manipur", "MN"), st("en", "Meghalaya", "ML"), st("lus", "Mizoram", "MZ"), st("en", "Nagaland", "NL"),
		st("or", "Odisha", "Orissa", "OR", "OD").with(city("", "Bhubaneswar", "Cuttack")),
		st("pa", "Punjab", "PB").with(city("", "Amritsar", "Ludhiana", "Jalandhar")),
		st("hi", "Rajasthan", "RJ").with(city("", "Jaipur", "Jodhpur", "Udaipur")),
		st("ne", "Sikkim", "SK"),
		st("ta", "Tamil Nadu", "TN").with(city("", "Chennai", "Madras", "Coimbatore", "Madurai", "Tiruchirappalli")),
		st("te", "Telangana", "TG", "TS").with(city("", "Hyderabad", "Secunderabad", "Warangal")),
		st("bn", "Tripura", "TR"), st("hi", "Uttar Pradesh", "UP").with(city("", "Lucknow", "Kanpur", "Varanasi", "Agra", "Noida")),
		st("hi", "Uttarakhand", "Uttaranchal", "UK", "UT").with(city("", "Dehradun")),
		st("bn", "West Bengal", "WB").with(city("", "Kolkata", "Calcutta", "Howrah", "Siliguri")),
		st("hi", "Delhi", "National Capital Territory of Delhi", "NCT", "DL").with(city("", "New Delhi", "Delhi")),
		st("ur", "Jammu and Kashmir", "Jammu & Kashmir", "JK").with(city("", "Srinagar")),
		st("ta", "Puducherry", "Pondicherry", "PY"), st("hi", "Chandigarh", "CH"),
		st("ml", "Lakshadweep", "LD"), st("hi", "Andaman and Nicobar Islands", "AN"), st("hi", "Ladakh", "LA"),
		st("gu", "Dadra and Nagar Haveli and Daman and Diu", "DH"),
	},
	"EE": {
		// Ida-Viru County's population is mostly Russian-speaking.
		st("ru", "Ida-Viru", "Ida-Viru County", "Ida-Virumaa", "44").with(city("", "Narva", "Sillamäe", "Kohtla-Järve")),
		st("", "Harju", "Harju County", "Harjumaa", "37").with(city("", "Tallinn")),
		st("", "Tartu", "Tartu County", "Tartumaa", "78"),
	},
	"IQ": {
		st("ku", "Kurdistan Region", "Kurdistan", "Erbil", "Arbil", "Sulaymaniyah", "Duhok", "Dohuk", "KR").with(
			city("", "Erbil", "Arbil", "Hewlêr", "Sulaymaniyah", "Slemani", "Duhok", "Dohuk")),
		st("", "Baghdad", "BG"), st("", "Basra", "BA"), st("", "Nineveh", "NI").with(city("", "Mosul")),
	},
}
