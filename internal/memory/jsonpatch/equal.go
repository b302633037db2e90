package jsonpatch

import (
	"encoding/json"
	"math/big"
	"strings"
)

// Equal reports whether a and b are the same JSON value: object member order does not
// matter and numbers compare by exact numeric value (1, 1.0 and 10e-1 are equal).
func Equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		return ok && numberEqual(string(x), string(y))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case *Object:
		y, ok := b.(*Object)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for i, k := range x.keys {
			yv, ok := y.Get(k)
			if !ok || !Equal(x.vals[i], yv) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

// numberEqual compares two valid JSON number literals exactly, without floating point.
func numberEqual(a, b string) bool {
	if a == b {
		return true
	}
	na, nb := normalizeNumber(a), normalizeNumber(b)
	return na.neg == nb.neg && na.digits == nb.digits && na.scale.Cmp(nb.scale) == 0
}

// normNumber is value = (-1)^neg × digits × 10^scale with digits free of leading and
// trailing zeros; zero is digits "" (and never negative).
type normNumber struct {
	neg    bool
	digits string
	scale  *big.Int
}

func normalizeNumber(s string) normNumber {
	var n normNumber
	if strings.HasPrefix(s, "-") {
		n.neg = true
		s = s[1:]
	}
	mant, exp := s, "0"
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	scale, ok := new(big.Int).SetString(strings.TrimPrefix(exp, "+"), 10)
	if !ok {
		scale = new(big.Int)
	}
	scale.Sub(scale, big.NewInt(int64(len(frac))))
	digits := strings.TrimLeft(intPart+frac, "0")
	trimmed := strings.TrimRight(digits, "0")
	scale.Add(scale, big.NewInt(int64(len(digits)-len(trimmed))))
	n.digits = trimmed
	if n.digits == "" {
		n.neg = false
		scale.SetInt64(0)
	}
	n.scale = scale
	return n
}
