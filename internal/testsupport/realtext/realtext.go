// Package realtext picks search terms from real text (the repository's sources and docs), so
// search benchmarks query what users' artifacts contain.
package realtext

import (
	"sort"
	"strings"
	"unicode"
)

// Words splits text into lowercase words of letters.
func Words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) })
}

// Terms returns the mid-frequency words of texts: 4 to 20 letters, ranked by frequency
// (ties by the word), skipping the 50 most common (they match nearly every document) and
// keeping the next 2,000 — queries that find some documents but not most.
func Terms(texts ...string) []string {
	count := map[string]int{}
	for _, t := range texts {
		for _, w := range Words(t) {
			if len(w) >= 4 && len(w) <= 20 {
				count[w]++
			}
		}
	}
	words := make([]string, 0, len(count))
	for w := range count {
		words = append(words, w)
	}
	sort.Slice(words, func(i, j int) bool {
		if count[words[i]] != count[words[j]] {
			return count[words[i]] > count[words[j]]
		}
		return words[i] < words[j]
	})
	return words[min(50, len(words)):min(2050, len(words))]
}
