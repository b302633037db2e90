package tokens

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"hash/maphash"
	"io/fs"
	"math/bits"
	"strconv"

	"github.com/dlclark/regexp2"
	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// Counting with OpenAI's published vocabularies, by hand: tiktoken-go keeps each vocabulary
// in three Go maps and slices (23.6 MB resident for o200k_base, held for the daemon's life
// once a savings figure is asked for); a rank needs only the token bytes back to back and
// an open-addressing table of their ranks (about 4 MB).

// encodings holds what differs between the vocabularies: the file of base64 tokens and
// ranks (embedded by tiktoken-go-loader) and the pattern that splits text into pieces
// before byte-pair merging, as OpenAI's tiktoken defines them.
var encodings = map[string]struct{ file, pattern string }{
	O200k: {"o200k_base.tiktoken", `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`},
	CL100k: {"cl100k_base.tiktoken", `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`},
}

// vocab maps token bytes to their ranks (the token ids).
type vocab struct {
	seed  maphash.Seed
	blob  []byte   // every token's bytes, back to back, in file order
	start []uint32 // token i is blob[start[i]:start[i+1]]
	rank  []uint32 // token i's rank
	slots []uint32 // open addressing by hash of the bytes: token index + 1, 0 when empty
	mask  uint64
	split *regexp2.Regexp
}

// loadVocab parses an embedded vocabulary: a line per token, "base64 rank".
func loadVocab(name string) (*vocab, error) {
	enc, ok := encodings[name]
	if !ok {
		return nil, fmt.Errorf("unknown token encoding %q; use %s or %s", name, O200k, CL100k)
	}
	data, err := fs.ReadFile(assets.Assets, enc.file)
	if err != nil {
		return nil, err
	}
	n := bytes.Count(data, []byte{'\n'}) + 1
	v := &vocab{seed: maphash.MakeSeed(), start: make([]uint32, 0, n+1), rank: make([]uint32, 0, n)}
	v.blob = make([]byte, 0, len(data)*3/4/2)
	for line := range bytes.Lines(data) {
		line = bytes.TrimRight(line, "\n")
		if len(line) == 0 {
			continue
		}
		sp := bytes.IndexByte(line, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("token vocabulary %s: bad line %q", enc.file, line)
		}
		r, err := strconv.ParseUint(string(line[sp+1:]), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("token vocabulary %s: bad rank in %q", enc.file, line)
		}
		v.start = append(v.start, uint32(len(v.blob)))
		if v.blob, err = base64.StdEncoding.AppendDecode(v.blob, line[:sp]); err != nil {
			return nil, fmt.Errorf("token vocabulary %s: bad token in %q", enc.file, line)
		}
		v.rank = append(v.rank, uint32(r))
	}
	v.start = append(v.start, uint32(len(v.blob)))
	size := uint64(1) << bits.Len(uint(2*len(v.rank))) // at most half full
	v.slots, v.mask = make([]uint32, size), size-1
	for i := range v.rank {
		h := maphash.Bytes(v.seed, v.token(i)) & v.mask
		for v.slots[h] != 0 {
			h = (h + 1) & v.mask
		}
		v.slots[h] = uint32(i + 1)
	}
	if v.split, err = regexp2.Compile(enc.pattern, regexp2.None); err != nil {
		return nil, err
	}
	return v, nil
}

func (v *vocab) token(i int) []byte { return v.blob[v.start[i]:v.start[i+1]] }

// lookup returns b's rank, or false when b is not a token.
func (v *vocab) lookup(b []byte) (uint32, bool) {
	h := maphash.Bytes(v.seed, b) & v.mask
	for {
		s := v.slots[h]
		if s == 0 {
			return 0, false
		}
		if bytes.Equal(v.token(int(s-1)), b) {
			return v.rank[s-1], true
		}
		h = (h + 1) & v.mask
	}
}

// count returns how many tokens text (valid UTF-8) encodes to, special tokens read as
// ordinary text: the pattern splits it into pieces, and each piece that is not a token
// itself is merged byte pair by byte pair.
func (v *vocab) count(text string) (int, error) {
	n := 0
	var parts []part
	m, err := v.split.FindStringMatch(text)
	for ; m != nil && err == nil; m, err = v.split.FindNextMatch(m) {
		piece := []byte(m.String())
		if _, ok := v.lookup(piece); ok {
			n++
			continue
		}
		parts = v.merge(piece, parts[:0])
		n += len(parts) - 1
	}
	return n, err
}

// part is a boundary in a piece being merged, with the rank of the token that starts at it
// and spans to the boundary after next (noRank when that is not a token).
type part struct {
	at   int
	rank uint32
}

const noRank = ^uint32(0)

// merge is byte-pair merging: starting from single bytes, the adjacent pair that forms the
// lowest-ranked token (the leftmost on a tie) is merged until no pair is a token. It
// returns the boundaries left, the piece's ends included (tokens = boundaries - 1).
func (v *vocab) merge(piece []byte, parts []part) []part {
	pairRank := func(a, b int) uint32 {
		if r, ok := v.lookup(piece[a:b]); ok {
			return r
		}
		return noRank
	}
	for i := 0; i+1 < len(piece); i++ {
		parts = append(parts, part{i, pairRank(i, i+2)})
	}
	parts = append(parts, part{len(piece) - 1, noRank}, part{len(piece), noRank})
	// rankAt is the rank of the token from boundary i to boundary i+3, once i+1 is merged away.
	rankAt := func(i int) uint32 {
		if i+3 < len(parts) {
			return pairRank(parts[i].at, parts[i+3].at)
		}
		return noRank
	}
	for {
		best, at := noRank, -1
		for i := 0; i+1 < len(parts); i++ {
			if parts[i].rank < best {
				best, at = parts[i].rank, i
			}
		}
		if at < 0 {
			return parts
		}
		if at > 0 {
			parts[at-1].rank = rankAt(at - 1)
		}
		parts[at].rank = rankAt(at)
		parts = append(parts[:at+1], parts[at+2:]...)
	}
}
