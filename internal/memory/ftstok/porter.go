package ftstok

// Stem is FTS5's porter step on a lower-case ASCII token: Porter's algorithm as SQLite
// writes it (its rule lists, its measure, and a y after the first letter counting as a
// vowel in the *v* condition), so a stem here is the term the index holds. Tokens under 3
// or over MaxStemmed bytes are kept whole, as FTS5 keeps them. b is stemmed in place; the
// result may be one byte longer (step 1b may add an e), within cap(b) when cap(b) allows.
// Written here because Go's stemmers implement Porter2 or the paper's variant, not this one.
func Stem(b []byte) []byte {
	if len(b) < 3 || len(b) > MaxStemmed {
		return b
	}
	var i int
	b = step1a(b)
	// step 1b: only a removed ed or ing goes on (a replaced eed does not)
	if b, i = apply(b, step1b); i > 0 {
		if b, i = apply(b, step1b2); i < 0 {
			if c := b[len(b)-1]; !isVowel(c, false) && c != 'l' && c != 's' && c != 'z' && len(b) > 1 && c == b[len(b)-2] {
				b = b[:len(b)-1]
			} else if mEq1(b) && oStar(b) {
				b = append(b, 'e')
			}
		}
	}
	if b[len(b)-1] == 'y' && hasVowel(b[:len(b)-1]) {
		b[len(b)-1] = 'i'
	}
	b, _ = apply(b, step2)
	b, _ = apply(b, step3)
	b, _ = apply(b, step4)
	if n := len(b); b[n-1] == 'e' && (mGt1(b[:n-1]) || mEq1(b[:n-1]) && !oStar(b[:n-1])) {
		b = b[:n-1]
	}
	if n := len(b); n > 1 && b[n-1] == 'l' && b[n-2] == 'l' && mGt1(b[:n-1]) {
		b = b[:n-1]
	}
	return b
}

func step1a(b []byte) []byte {
	n := len(b)
	switch {
	case b[n-1] != 's':
	case b[n-2] == 'e':
		if n > 4 && b[n-4] == 's' && b[n-3] == 's' || n > 3 && b[n-3] == 'i' {
			return b[:n-2]
		}
		return b[:n-1]
	case b[n-2] != 's':
		return b[:n-1]
	}
	return b
}

// rule replaces suffix by repl when the stem before the suffix meets cond (nil: always).
type rule struct {
	suffix, repl string
	cond         func([]byte) bool
}

// apply applies the first rule whose suffix ends b after a stem of at least one byte; no
// later rule is tried, even when that rule's condition fails. It returns b as changed (in
// place when cap(b) allows) and the rule's index, or -1 when none applied.
func apply(b []byte, rules []rule) ([]byte, int) {
	for i, r := range rules {
		n := len(b) - len(r.suffix)
		if n < 1 || b[len(b)-1] != r.suffix[len(r.suffix)-1] || string(b[n:]) != r.suffix {
			continue
		}
		if r.cond != nil && !r.cond(b[:n]) {
			return b, -1
		}
		return append(b[:n], r.repl...), i
	}
	return b, -1
}

var (
	step1b  = []rule{{"eed", "ee", mGt0}, {"ed", "", hasVowel}, {"ing", "", hasVowel}}
	step1b2 = []rule{{"at", "ate", nil}, {"bl", "ble", nil}, {"iz", "ize", nil}}
	step2   = []rule{
		{"ational", "ate", mGt0}, {"tional", "tion", mGt0},
		{"enci", "ence", mGt0}, {"anci", "ance", mGt0},
		{"izer", "ize", mGt0},
		{"logi", "log", mGt0},
		{"bli", "ble", mGt0}, {"alli", "al", mGt0}, {"entli", "ent", mGt0}, {"eli", "e", mGt0}, {"ousli", "ous", mGt0},
		{"ization", "ize", mGt0}, {"ation", "ate", mGt0}, {"ator", "ate", mGt0},
		{"alism", "al", mGt0}, {"iveness", "ive", mGt0}, {"fulness", "ful", mGt0}, {"ousness", "ous", mGt0},
		{"aliti", "al", mGt0}, {"iviti", "ive", mGt0}, {"biliti", "ble", mGt0},
	}
	step3 = []rule{
		{"ical", "ic", mGt0}, {"ness", "", mGt0}, {"icate", "ic", mGt0}, {"iciti", "ic", mGt0},
		{"ful", "", mGt0}, {"ative", "", mGt0}, {"alize", "al", mGt0},
	}
	step4 = []rule{
		{"al", "", mGt1}, {"ance", "", mGt1}, {"ence", "", mGt1}, {"er", "", mGt1}, {"ic", "", mGt1},
		{"able", "", mGt1}, {"ible", "", mGt1},
		{"ant", "", mGt1}, {"ement", "", mGt1}, {"ment", "", mGt1}, {"ent", "", mGt1},
		{"ion", "", mGt1SorT}, {"ou", "", mGt1},
		{"ism", "", mGt1}, {"ate", "", mGt1}, {"iti", "", mGt1}, {"ous", "", mGt1}, {"ive", "", mGt1}, {"ize", "", mGt1},
	}
)

func isVowel(c byte, yIsVowel bool) bool {
	return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || yIsVowel && c == 'y'
}

// gobbleVC returns the length of z's shortest prefix holding a vowel and then a consonant,
// or 0; prevCons says whether the letter before z was a consonant (a y after one is a vowel).
func gobbleVC(z []byte, prevCons bool) int {
	cons := prevCons
	i := 0
	for ; i < len(z); i++ {
		if cons = !isVowel(z[i], cons); !cons {
			break
		}
	}
	for i++; i < len(z); i++ {
		if cons = !isVowel(z[i], cons); cons {
			return i + 1
		}
	}
	return 0
}

// mGt0, mGt1 and mEq1 are Porter's conditions on the measure m of a stem (its count of
// vowel-consonant sequences).
func mGt0(z []byte) bool { return gobbleVC(z, false) != 0 }

func mGt1(z []byte) bool {
	n := gobbleVC(z, false)
	return n != 0 && gobbleVC(z[n:], true) != 0
}

func mEq1(z []byte) bool {
	n := gobbleVC(z, false)
	return n != 0 && gobbleVC(z[n:], true) == 0
}

func mGt1SorT(z []byte) bool {
	c := z[len(z)-1]
	return (c == 's' || c == 't') && mGt1(z)
}

// oStar is *o: z ends consonant-vowel-consonant, the last not w, x or y.
func oStar(z []byte) bool {
	if c := z[len(z)-1]; c == 'w' || c == 'x' || c == 'y' {
		return false
	}
	mask, cons := 0, false
	for _, c := range z {
		cons = !isVowel(c, cons)
		mask <<= 1
		if cons {
			mask |= 1
		}
	}
	return mask&7 == 5
}

// hasVowel is *v*: z holds a vowel, y counting as one anywhere but first.
func hasVowel(z []byte) bool {
	for i, c := range z {
		if isVowel(c, i > 0) {
			return true
		}
	}
	return false
}
