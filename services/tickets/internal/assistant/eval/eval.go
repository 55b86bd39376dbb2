// Package eval is the assistant's evaluation set and the figures an engine
// reaches on it: top-1 and top-3 accuracy of topic detection and recall@3
// of document ranking. The set (testdata/eval.json) has ten helpdesk topics
// with a description and two or three help-centre documents each, and
// support messages in English, Spanish, French and German, each labelled
// with the topic it belongs to and the documents a good answer needs.
package eval

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"

	"supportplatform.dev/services/tickets/internal/assistant"
)

//go:embed testdata/eval.json
var evalJSON []byte

// Set is an evaluation set.
type Set struct {
	Topics   []Topic   `json:"topics"`
	Messages []Message `json:"messages"`
}

// Topic is a topic of the set with its documents.
type Topic struct {
	ID          int64      `json:"id"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Documents   []Document `json:"documents"`
}

// Document is a help-centre document linked to one topic.
type Document struct {
	ID        int64  `json:"id"`
	Title     string `json:"title"`
	Content   string `json:"content"`
	Relevance int    `json:"relevance"`
}

// Message is a labelled support message.
type Message struct {
	ID string `json:"id"`
	// Language is the ISO 639-1 code it is written in.
	Language string `json:"language"`
	Text     string `json:"text"`
	// Topic is the expected topic; Documents the documents a good answer
	// needs.
	Topic     int64   `json:"topic"`
	Documents []int64 `json:"documents"`
}

// Load returns the embedded evaluation set.
func Load() (Set, error) {
	var s Set
	if err := json.Unmarshal(evalJSON, &s); err != nil {
		return Set{}, fmt.Errorf("eval: testdata/eval.json: %w", err)
	}
	return s, nil
}

// AssistantTopics returns the set's topics as the engines take them.
func (s Set) AssistantTopics() []assistant.Topic {
	out := make([]assistant.Topic, len(s.Topics))
	for i, t := range s.Topics {
		out[i] = assistant.Topic{TopicID: t.ID, Name: t.Name, Description: t.Description}
		for _, d := range t.Documents {
			out[i].Documents = append(out[i].Documents, assistant.Document{
				DocumentID: d.ID, TopicID: t.ID, Title: d.Title, Content: d.Content, Relevance: d.Relevance})
		}
	}
	return out
}

// AssistantDocuments returns every document of the set, topic by topic.
func (s Set) AssistantDocuments() []assistant.Document {
	var out []assistant.Document
	for _, t := range s.AssistantTopics() {
		out = append(out, t.Documents...)
	}
	return out
}

// Figures are an engine's results on (part of) the set.
type Figures struct {
	// Top1 is the share of messages whose expected topic DetectTopics
	// ranks first; Top3 among the first three.
	Top1, Top3 float64
	// RecallAt3 is the mean, over messages, of the share of the expected
	// documents RankDocuments puts among its first three.
	RecallAt3 float64
	// N is how many messages the figures are over.
	N int
	// Assigned is the share of messages whose expected topic automatic
	// detection would assign (a score of at least assistant.TopicThreshold
	// among the first assistant.MaxAutoTopics); WrongAssigned the mean
	// number of other topics it would assign per message.
	Assigned, WrongAssigned float64
}

// Result is an engine's figures on the whole set and per language.
type Result struct {
	Figures
	PerLanguage map[string]Figures
	// Misses lists the messages whose expected topic was not ranked first,
	// with the topic that was, for looking into the method.
	Misses []Miss
}

// Miss is a message whose expected topic was not ranked first.
type Miss struct {
	MessageID      string
	Expected, Got  int64
	ExpectedScore  float64
	GotScore       float64
	ExpectedRanked int
}

// Evaluate runs the engine on every message of the set.
//
// Recall@3 ranks ALL the set's documents (about 25 across the ten topics),
// not only those of the expected topic: in production the prompt documents
// are those of the message's detected topics, usually one to three topics,
// so ranking the documents of every topic is the harder case, and ranking
// only the expected topic's two or three documents would make recall@3
// trivially 1.
func Evaluate(ctx context.Context, e assistant.Engine, s Set) (Result, error) {
	topics := s.AssistantTopics()
	docs := s.AssistantDocuments()
	type acc struct {
		top1, top3, recall, assigned, wrong float64
		n                                   int
	}
	all := acc{}
	per := map[string]*acc{}
	var misses []Miss
	for _, m := range s.Messages {
		scores, _, err := e.DetectTopics(ctx, m.Text, topics)
		if err != nil {
			return Result{}, fmt.Errorf("eval: %s: detect topics: %w", m.ID, err)
		}
		ranked, _, err := e.RankDocuments(ctx, m.Text, docs)
		if err != nil {
			return Result{}, fmt.Errorf("eval: %s: rank documents: %w", m.ID, err)
		}
		rank := slices.IndexFunc(scores, func(t assistant.TopicScore) bool { return t.TopicID == m.Topic })
		var top1, top3 float64
		if rank == 0 {
			top1 = 1
		} else {
			miss := Miss{MessageID: m.ID, Expected: m.Topic, ExpectedRanked: rank + 1}
			if len(scores) > 0 {
				miss.Got, miss.GotScore = scores[0].TopicID, scores[0].Score
			}
			if rank >= 0 {
				miss.ExpectedScore = scores[rank].Score
			}
			misses = append(misses, miss)
		}
		if rank >= 0 && rank < 3 {
			top3 = 1
		}
		var assigned, wrong float64
		for i, sc := range scores[:min(assistant.MaxAutoTopics, len(scores))] {
			switch {
			case sc.Score < assistant.TopicThreshold:
			case i == rank:
				assigned = 1
			default:
				wrong++
			}
		}
		found := 0
		for _, d := range ranked[:min(3, len(ranked))] {
			if slices.Contains(m.Documents, d.DocumentID) {
				found++
			}
		}
		recall := 1.0
		if len(m.Documents) > 0 {
			recall = float64(found) / float64(len(m.Documents))
		}
		for _, a := range []*acc{&all, perLang(per, m.Language)} {
			a.top1 += top1
			a.top3 += top3
			a.recall += recall
			a.assigned += assigned
			a.wrong += wrong
			a.n++
		}
	}
	figures := func(a acc) Figures {
		if a.n == 0 {
			return Figures{}
		}
		n := float64(a.n)
		return Figures{Top1: a.top1 / n, Top3: a.top3 / n, RecallAt3: a.recall / n, N: a.n, Assigned: a.assigned / n, WrongAssigned: a.wrong / n}
	}
	res := Result{Figures: figures(all), PerLanguage: map[string]Figures{}, Misses: misses}
	for lang, a := range per {
		res.PerLanguage[lang] = figures(*a)
	}
	return res, nil
}

func perLang[A any](m map[string]*A, lang string) *A {
	if m[lang] == nil {
		m[lang] = new(A)
	}
	return m[lang]
}

// Write prints the figures, overall and per language, one line each.
func (r Result) Write(w io.Writer) error {
	line := func(label string, f Figures) error {
		_, err := fmt.Fprintf(w, "%-4s top-1 %.3f  top-3 %.3f  recall@3 %.3f  assigned %.3f  wrongly assigned %.3f  (n=%d)\n",
			label, f.Top1, f.Top3, f.RecallAt3, f.Assigned, f.WrongAssigned, f.N)
		return err
	}
	if err := line("all", r.Figures); err != nil {
		return err
	}
	langs := make([]string, 0, len(r.PerLanguage))
	for l := range r.PerLanguage {
		langs = append(langs, l)
	}
	sort.Strings(langs)
	for _, l := range langs {
		if err := line(l, r.PerLanguage[l]); err != nil {
			return err
		}
	}
	return nil
}
