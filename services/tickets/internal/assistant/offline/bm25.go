package offline

import "math"

// BM25 parameters: the usual ones. k1 saturates a term's repeats; b
// normalises by length (topics' field documents differ a lot in length).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// field is one part of a document with its weight: a topic's name counts
// more than a word in one of its documents.
type field struct {
	text   string
	weight float64
}

// textBytes is the length of the fields' texts: the cost of an index of
// them in the engine's caches.
func textBytes(fs []field) int64 {
	var n int64
	for _, f := range fs {
		n += int64(len(f.text))
	}
	return n
}

// bm25Doc is one indexed document: its weighted term frequencies.
type bm25Doc struct {
	tf  map[string]float64
	len float64
}

// bm25Index is a BM25 index over a few documents.
type bm25Index struct {
	docs   []bm25Doc
	df     map[string]int
	avgLen float64
	// background is a number of imaginary documents without any of the
	// terms, added to the real ones for the IDF: an index of a dozen
	// passages would otherwise call a word of half of them common and
	// worth nothing, when it is the very subject of the documents.
	background int
}

// newIndex indexes documents made of weighted fields.
func newIndex(docs [][]field) *bm25Index {
	ix := &bm25Index{docs: make([]bm25Doc, len(docs)), df: map[string]int{}}
	total := 0.0
	for i, fields := range docs {
		d := bm25Doc{tf: map[string]float64{}}
		for _, f := range fields {
			for _, t := range tokens(f.text) {
				d.tf[t] += f.weight
				d.len += f.weight
			}
		}
		for t := range d.tf {
			ix.df[t]++
		}
		total += d.len
		ix.docs[i] = d
	}
	if len(docs) > 0 {
		ix.avgLen = total / float64(len(docs))
	}
	return ix
}

// idf is BM25's inverse document frequency (the +1 form, never negative).
func (ix *bm25Index) idf(term string) float64 {
	n := float64(len(ix.docs) + ix.background)
	df := float64(ix.df[term])
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

// scores returns every document's BM25 score for the query terms (each
// distinct term counted once: a customer repeating a word in a long mail
// should not outweigh the other words).
func (ix *bm25Index) scores(query []string) []float64 {
	out := make([]float64, len(ix.docs))
	if ix.avgLen == 0 {
		return out
	}
	seen := map[string]bool{}
	for _, q := range query {
		if seen[q] || ix.df[q] == 0 {
			continue
		}
		seen[q] = true
		idf := ix.idf(q)
		for i, d := range ix.docs {
			tf := d.tf[q]
			if tf == 0 {
				continue
			}
			out[i] += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*d.len/ix.avgLen))
		}
	}
	return out
}

// matched counts the distinct query terms document i contains.
func (ix *bm25Index) matched(i int, query []string) int {
	seen := map[string]bool{}
	for _, q := range query {
		if !seen[q] && ix.docs[i].tf[q] > 0 {
			seen[q] = true
		}
	}
	return len(seen)
}
