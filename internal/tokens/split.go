package tokens

import (
	"unicode"
	"unicode/utf8"
)

// Splitting text into the pieces byte-pair merging works on, by hand: the vocabularies'
// patterns need a backtracking engine (a lookahead, overlapping classes), and regexp2 ran
// them at about 2 MB/s, most of a count's time. Each function below follows one
// alternative of the pattern with the engine's semantics (leftmost alternative that
// matches, greedy quantifiers that give back one rune at a time); FuzzSplit checks the
// pieces against regexp2 running the pattern itself.

// runeAt decodes the rune at byte i of s (utf8.RuneError, 0 at the end).
func runeAt(s string, i int) (rune, int) {
	if i >= len(s) {
		return utf8.RuneError, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func isLetter(r rune) bool {
	return r < utf8.RuneSelf && (r|0x20 >= 'a' && r|0x20 <= 'z') || r >= utf8.RuneSelf && unicode.IsLetter(r)
}
func isNumber(r rune) bool { return r >= '0' && r <= '9' || r >= utf8.RuneSelf && unicode.IsNumber(r) }
func isSpace(r rune) bool  { return unicode.IsSpace(r) }

// isPrefix is [^\r\n\p{L}\p{N}]: the one rune before a word.
func isPrefix(r rune) bool { return r != '\r' && r != '\n' && !isLetter(r) && !isNumber(r) }

// isPunct is [^\s\p{L}\p{N}].
func isPunct(r rune) bool { return !isSpace(r) && !isLetter(r) && !isNumber(r) }

// isUpperish is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], isLowerish [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func isUpperish(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'A' && r <= 'Z'
	}
	return unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M)
}

func isLowerish(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z'
	}
	return unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M)
}

// run returns the end of the longest run of runes from i that in accepts (i when none).
func run(s string, i int, in func(rune) bool) int {
	for i < len(s) {
		r, n := runeAt(s, i)
		if !in(r) {
			break
		}
		i += n
	}
	return i
}

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, or i.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return i
	}
	lower := func(b byte) byte { return b | 0x20 }
	switch lower(s[i+1]) {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if i+2 < len(s) && lower(s[i+2]) == 'e' {
			return i + 3
		}
	case 'l':
		if i+2 < len(s) && lower(s[i+2]) == 'l' {
			return i + 3
		}
	}
	return i
}

// spaces matches the pattern's three whitespace alternatives at i, which is a space:
// \s*[\r\n]+ (up to the run's last line break), \s+(?!\S) (the run but its last rune,
// unless the text ends), \s+.
func spaces(s string, i int) int {
	end, lastBreak, last := i, -1, i
	for end < len(s) {
		r, n := runeAt(s, end)
		if !isSpace(r) {
			break
		}
		if r == '\r' || r == '\n' {
			lastBreak = end + 1
		}
		last = end
		end += n
	}
	switch {
	case lastBreak >= 0:
		return lastBreak
	case end == len(s) || last == i:
		return end
	default:
		return last
	}
}

// nextO200k returns the end of the piece of o200k_base's pattern that starts at i.
func nextO200k(s string, i int) int {
	r, n := runeAt(s, i)
	// [^\r\n\p{L}\p{N}]?[U]*[L]+(?i:'s|…)?, then [^\r\n\p{L}\p{N}]?[U]+[L]*(?i:'s|…)?, each
	// with the optional rune first, then without it
	pre := isPrefix(r)
	if pre {
		if end, ok := lowerWord(s, i+n); ok {
			return end
		}
	}
	if end, ok := lowerWord(s, i); ok {
		return end
	}
	if pre {
		if end, ok := upperWord(s, i+n); ok {
			return end
		}
	}
	if end, ok := upperWord(s, i); ok {
		return end
	}
	switch {
	case isNumber(r): // \p{N}{1,3}
		return numbers(s, i)
	case r == ' ' && punctAt(s, i+1): //  ?[^\s\p{L}\p{N}]+[\r\n/]*
		return run(s, run(s, i+1, isPunct), isBreakOrSlash)
	case isPunct(r):
		return run(s, run(s, i, isPunct), isBreakOrSlash)
	default: // a space: the pattern's last three alternatives
		return spaces(s, i)
	}
}

// lowerWord matches [U]*[L]+(?i:'s|…)? at i: the U run taken whole, then given back a rune
// at a time until an L run can start.
func lowerWord(s string, i int) (int, bool) {
	uEnd := run(s, i, isUpperish)
	if lEnd := run(s, uEnd, isLowerish); lEnd > uEnd {
		return contraction(s, lEnd), true
	}
	for k := uEnd; k > i; {
		_, n := utf8.DecodeLastRuneInString(s[i:k])
		k -= n
		if r, _ := runeAt(s, k); isLowerish(r) {
			return contraction(s, run(s, k, isLowerish)), true
		}
	}
	return 0, false
}

// upperWord matches [U]+[L]*(?i:'s|…)? at i.
func upperWord(s string, i int) (int, bool) {
	uEnd := run(s, i, isUpperish)
	if uEnd == i {
		return 0, false
	}
	return contraction(s, run(s, uEnd, isLowerish)), true
}

// numbers matches \p{N}{1,3} at i, which is a number.
func numbers(s string, i int) int {
	end := i
	for k := 0; k < 3; k++ {
		r, n := runeAt(s, end)
		if n == 0 || !isNumber(r) {
			break
		}
		end += n
	}
	return end
}

func isBreak(r rune) bool        { return r == '\r' || r == '\n' }
func isBreakOrSlash(r rune) bool { return r == '\r' || r == '\n' || r == '/' }

// nextCL100k returns the end of the piece of cl100k_base's pattern that starts at i.
func nextCL100k(s string, i int) int {
	if end := contraction(s, i); end > i { // (?i:'s|'t|'re|'ve|'m|'ll|'d)
		return end
	}
	r, n := runeAt(s, i)
	if isPrefix(r) { // [^\r\n\p{L}\p{N}]?\p{L}+
		if end := run(s, i+n, isLetter); end > i+n {
			return end
		}
	}
	if end := run(s, i, isLetter); end > i {
		return end
	}
	switch {
	case isNumber(r): // \p{N}{1,3}
		return numbers(s, i)
	case r == ' ' && punctAt(s, i+1): //  ?[^\s\p{L}\p{N}]+[\r\n]*
		return run(s, run(s, i+1, isPunct), isBreak)
	case isPunct(r):
		return run(s, run(s, i, isPunct), isBreak)
	default:
		return spaces(s, i)
	}
}

// punctAt reports whether a rune of [^\s\p{L}\p{N}] is at byte i of s.
func punctAt(s string, i int) bool {
	r, n := runeAt(s, i)
	return n > 0 && isPunct(r)
}
