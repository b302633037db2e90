package tokens

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"hash/maphash"
	"io/fs"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// Counting with OpenAI's published vocabularies, by hand: tiktoken-go keeps each vocabulary
// in three Go maps and slices (23.6 MB resident for o200k_base, held for the daemon's life
// once a savings figure is asked for) and splits text with regexp2 at ~2 MB/s; a rank needs
// only the token bytes back to back and an open-addressing table of their ranks (4.3 MB),
// and the split is a scanner (split.go). BenchmarkCount2KB: 1.87 -> 29 MB/s.

// encodings holds what differs between the vocabularies: the file of base64 tokens and
// ranks (embedded by tiktoken-go-loader) and the splitting of text into pieces before
// byte-pair merging, with the pattern OpenAI's tiktoken defines it by (FuzzSplit runs it).
var encodings = map[string]struct {
	file    string
	next    func(s string, i int) int // the end of the piece that starts at byte i (split.go)
	pattern string                    // what next follows
}{
	O200k: {"o200k_base.tiktoken", nextO200k, `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`},
	CL100k: {"cl100k_base.tiktoken", nextCL100k, `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`},
}

// vocab maps token bytes to their ranks (the token ids). A token's rank is its line number
// in the vocabulary's file (loadVocab refuses a file where it is not), so it is also the
// token's index here.
type vocab struct {
	seed  maphash.Seed
	blob  []byte   // every token's bytes, back to back, in rank order
	start []uint32 // token i is blob[start[i]:start[i+1]]
	slots []uint32 // open addressing by hash of the bytes: rank + 1, 0 when empty
	mask  uint64
	next  func(s string, i int) int
}

// loadVocab parses an embedded vocabulary.
func loadVocab(name string) (*vocab, error) {
	enc, ok := encodings[name]
	if !ok {
		return nil, fmt.Errorf("unknown token encoding %q; use %s or %s", name, O200k, CL100k)
	}
	data, err := fs.ReadFile(assets.Assets, enc.file)
	if err != nil {
		return nil, err
	}
	v, err := parseVocab(data)
	if err != nil {
		return nil, fmt.Errorf("token vocabulary %s: %w", enc.file, err)
	}
	v.next = enc.next
	return v, nil
}

// parseVocab reads a vocabulary's lines, "base64 rank", the ranks counting up from 0.
func parseVocab(data []byte) (*vocab, error) {
	n := bytes.Count(data, []byte{'\n'}) + 1
	v := &vocab{seed: maphash.MakeSeed(), start: make([]uint32, 0, n+1)}
	v.blob = make([]byte, 0, len(data)*3/4/2) // about the tokens' share of the lines, decoded
	for line := range bytes.Lines(data) {
		line = bytes.TrimRight(line, "\n")
		if len(line) == 0 {
			continue
		}
		sp := bytes.IndexByte(line, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("bad line %q", line)
		}
		r, err := strconv.ParseUint(string(line[sp+1:]), 10, 32)
		if err != nil || r != uint64(len(v.start)) {
			return nil, fmt.Errorf("rank %q where %d was due", line[sp+1:], len(v.start))
		}
		v.start = append(v.start, uint32(len(v.blob)))
		if v.blob, err = base64.StdEncoding.AppendDecode(v.blob, line[:sp]); err != nil {
			return nil, fmt.Errorf("bad token in %q", line)
		}
	}
	tokens := len(v.start)
	v.start = append(v.start, uint32(len(v.blob)))
	size := uint64(1) << bits.Len(uint(2*tokens)) // at most half full
	v.slots, v.mask = make([]uint32, size), size-1
	for i := range tokens {
		h := maphash.Bytes(v.seed, v.token(i)) & v.mask // as maphash.String of the same bytes
		for v.slots[h] != 0 {
			h = (h + 1) & v.mask
		}
		v.slots[h] = uint32(i + 1)
	}
	return v, nil
}

func (v *vocab) token(i int) []byte { return v.blob[v.start[i]:v.start[i+1]] }

// lookup returns s's rank, or false when s is not a token.
func (v *vocab) lookup(s string) (uint32, bool) {
	h := maphash.String(v.seed, s) & v.mask
	for {
		slot := v.slots[h]
		if slot == 0 {
			return 0, false
		}
		if string(v.token(int(slot-1))) == s {
			return slot - 1, true
		}
		h = (h + 1) & v.mask
	}
}

// count returns how many tokens text (valid UTF-8) encodes to, special tokens read as
// ordinary text: the pattern splits it into pieces, and each piece that is not a token
// itself is merged byte pair by byte pair.
func (v *vocab) count(text string) int {
	n := 0
	var parts []part
	for i := 0; i < len(text); {
		end := v.next(text, i)
		if end <= i { // never: every rune starts a piece; but never loop either
			_, size := utf8.DecodeRuneInString(text[i:])
			end = i + size
		}
		piece := text[i:end]
		i = end
		if _, ok := v.lookup(piece); ok {
			n++
			continue
		}
		parts = v.merge(piece, parts[:0])
		n += len(parts) - 1
	}
	return n
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
func (v *vocab) merge(piece string, parts []part) []part {
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
