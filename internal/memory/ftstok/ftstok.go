// Package ftstok splits text into the terms the search index's FTS5 tokenizer ('porter
// unicode61 remove_diacritics 2') makes of it, in Go, for text whose words are ASCII: a
// search can then highlight its hits without handing each one back to FTS5, whose
// tokenizer (translated C) spent half of a 10k search's CPU there. Text with a character
// whose treatment differs by Unicode version or by diacritic folding (a non-ASCII letter,
// digit or mark, invalid UTF-8, NUL) is refused, and the caller asks FTS5 instead.
package ftstok

import (
	"unicode"
	"unicode/utf8"
)

// MaxStemmed is the longest token the porter step stems; longer ones are kept as they are.
const MaxStemmed = 64

// Scan calls fn for each token of text in order, with its byte range and the token in
// lower case (valid only during the call, with room to stem it in place: the index's term
// is Stem(tok)). It reports false, having stopped, when text holds a character FTS5 may
// tokenize otherwise than Scan does.
func Scan(text string, fn func(start, end int, tok []byte)) bool {
	var buf [MaxStemmed + 8]byte
	start := -1
	for i := 0; i < len(text); {
		c := text[i]
		if isAlnum(c) {
			if start < 0 {
				start = i
			}
			i++
			continue
		}
		n := 1
		switch {
		case c == 0:
			return false // FTS5 copies snippet text only up to a NUL
		case c >= utf8.RuneSelf:
			var r rune
			r, n = utf8.DecodeRuneInString(text[i:])
			if !separator(r) {
				return false
			}
		}
		if start >= 0 {
			emit(text, start, i, buf[:0], fn)
			start = -1
		}
		i += n
	}
	if start >= 0 {
		emit(text, start, len(text), buf[:0], fn)
	}
	return true
}

func emit(text string, start, end int, buf []byte, fn func(start, end int, tok []byte)) {
	tok := text[start:end]
	if len(tok) > MaxStemmed {
		buf = make([]byte, 0, len(tok)) // kept whole by Stem
	}
	fn(start, end, lower(buf, tok))
}

func lower(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// separators are the non-ASCII ranges where every punctuation, symbol and space character
// (Go's tables) separates tokens in FTS5's unicode61 too (TestSeparatorsAreFTS5s checks each
// one): typographic punctuation, arrows, maths, box drawing, shapes, symbols, CJK brackets.
// Outside them FTS5's older Unicode tables may disagree: a character assigned since, like
// U+07FE (a symbol now), is a token character to FTS5.
var separators = [][2]rune{
	{0x00A0, 0x00BF}, {0x00D7, 0x00D7}, {0x00F7, 0x00F7},
	{0x2000, 0x206F}, {0x2190, 0x23F3}, {0x2500, 0x26FF}, {0x2701, 0x27BF},
	{0x3000, 0x3003}, {0x3008, 0x3011}, {0x3014, 0x301F},
}

// separator reports whether non-ASCII r separates tokens as FTS5 sees them.
func separator(r rune) bool {
	if !(unicode.IsPunct(r) || unicode.IsSymbol(r) || unicode.IsSpace(r)) {
		return false
	}
	for _, rg := range separators {
		if rg[0] <= r && r <= rg[1] {
			return true
		}
	}
	return false
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// IsWord reports whether w is one token as Scan makes them: lower-case ASCII letters and
// digits only.
func IsWord(w string) bool {
	if w == "" {
		return false
	}
	for i := 0; i < len(w); i++ {
		if c := w[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
