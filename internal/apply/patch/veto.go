package patch

import "fmt"

// veto refuses a fuzzy match whose differing lines change a number or swap
// an identifier for a different one: that is a different place, not a typo.
func veto(pat, file []string) string {
	for i := range pat {
		if collapseWS(pat[i]) == collapseWS(file[i]) {
			continue
		}
		if why := vetoLine(tokens(pat[i]), tokens(file[i])); why != "" {
			return fmt.Sprintf("line %d: %s", i+1, why)
		}
	}
	return ""
}

type tokKind uint8

const (
	tkWord tokKind = iota
	tkNum
	tkPunct
)

type token struct {
	s    string
	kind tokKind
}

func tokens(s string) []token {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case isDigit(c):
			j := i + 1
			for j < len(s) && (isWordByte(s[j]) || s[j] == '.') {
				j++
			}
			out = append(out, token{s[i:j], tkNum})
			i = j
		case isWordByte(c) || c >= 0x80:
			j := i + 1
			for j < len(s) && (isWordByte(s[j]) || s[j] >= 0x80) {
				j++
			}
			out = append(out, token{s[i:j], tkWord})
			i = j
		default:
			out = append(out, token{s[i : i+1], tkPunct})
			i++
		}
	}
	return out
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isWordByte(c byte) bool {
	return c == '_' || c == '$' || isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

// vetoLine aligns the tokens and inspects each run of differences.
func vetoLine(a, b []token) string {
	if len(a)*len(b) > 40000 {
		return ""
	}
	// LCS table over tokens.
	n, m := len(a), len(b)
	dp := make([][]int32, n+1)
	for i := range dp {
		dp[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i].s == b[j].s {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	var ga, gb []token
	flush := func() string {
		defer func() { ga, gb = ga[:0], gb[:0] }()
		var wa, wb []string
		for _, t := range ga {
			if t.kind == tkNum {
				return fmt.Sprintf("number %s differs", t.s)
			}
			if t.kind == tkWord {
				wa = append(wa, t.s)
			}
		}
		for _, t := range gb {
			if t.kind == tkNum {
				return fmt.Sprintf("number %s differs", t.s)
			}
			if t.kind == tkWord {
				wb = append(wb, t.s)
			}
		}
		if len(wa) == len(wb) {
			for k := range wa {
				if !typoClose(wa[k], wb[k]) {
					return fmt.Sprintf("%q is not %q", wa[k], wb[k])
				}
			}
		}
		return ""
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i].s == b[j].s:
			if why := flush(); why != "" {
				return why
			}
			i++
			j++
		case j < m && (i == n || dp[i][j+1] >= dp[i+1][j]):
			gb = append(gb, b[j])
			j++
		default:
			ga = append(ga, a[i])
			i++
		}
	}
	return flush()
}

// typoClose allows about one slip per five characters (transpositions count
// once) in words of four or more letters; digits must match (x1 is not x2).
func typoClose(a, b string) bool {
	if min(len(a), len(b)) < 4 || max(len(a), len(b)) > 64 || digitsOf(a) != digitsOf(b) {
		return false
	}
	return osa(a, b) <= max(1, min(len(a), len(b))/5)
}

func digitsOf(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			b = append(b, s[i])
		}
	}
	return string(b)
}

// osa is the optimal-string-alignment distance (Levenshtein plus adjacent swaps).
func osa(a, b string) int {
	n, m := len(a), len(b)
	if n == 0 {
		return m
	}
	if m == 0 {
		return n
	}
	d := make([][]int, n+1)
	for i := range d {
		d[i] = make([]int, m+1)
		d[i][0] = i
	}
	for j := 0; j <= m; j++ {
		d[0][j] = j
	}
	for i := 1; i <= n; i++ {
		for j := 1; j <= m; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[n][m]
}
