package sqlite

import (
	"bytes"
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"regexp"
	"sync"
	"unicode/utf8"

	"github.com/klauspost/compress/s2"
	sqlitedrv "modernc.org/sqlite"

	"github.com/relaydev/relay/internal/bufpool"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/blob"
)

// Artifact bytes are stored s2-compressed when that saves at least an eighth: source,
// markdown and logs shrink to about half, at ~2 ms per MB on the put path (and less WAL
// to write and fsync); random binary stays as it came. enc records which, so contents
// written before compression existed read back as they are.
const (
	encRaw = 0
	encS2  = 1
	// encBucket: the body is in the bucket (bucket.go); the row keeps only the text the
	// search index reads, as it is indexed.
	encBucket = 2
)

// compressBufs and decodeBufs keep the buffers content is compressed into on its way in
// and decompressed into on its way to the index: each lives only until its row is written or
// its text copied out, and a new one each time was a quarter of what a 100 KB put left for
// the collector (random bytes, stored uncompressed, paid for it too). Up to 1 MB of content.
var compressBufs, decodeBufs = bufpool.Pool{Max: s2.MaxEncodedLen(1 << 20)}, bufpool.Pool{Max: 1 << 20}

// encodeContent returns how to store b. stored may share a buffer with the next put: call
// release once stored has been written (again is harmless).
func encodeContent(b []byte) (enc int, stored []byte, release func()) {
	if len(b) < 256 {
		return encRaw, b, func() {}
	}
	buf := compressBufs.Get(s2.MaxEncodedLen(len(b)))
	c := s2.Encode(buf[:cap(buf)], b) // a nil buf (content over the pool's bound): s2 allocates
	if len(c) > len(b)-len(b)/8 {
		compressBufs.Put(buf)
		return encRaw, b, func() {}
	}
	return encS2, c, func() {
		compressBufs.Put(buf)
		buf = nil // a second call puts nothing
	}
}

// decodeContent returns the bytes stored as enc. The length is checked before anything
// is allocated: the database file is data, not trust.
func decodeContent(enc int, stored []byte) ([]byte, error) {
	return decodeContentInto(nil, enc, stored)
}

// decodeContentInto is decodeContent decompressing into dst when it has room.
func decodeContentInto(dst []byte, enc int, stored []byte) ([]byte, error) {
	switch enc {
	case encRaw:
		return stored, nil
	case encS2:
		n, err := s2.DecodedLen(stored)
		if err != nil {
			return nil, fmt.Errorf("stored artifact content is corrupt: %w", err)
		}
		if n > memory.MaxArtifactSize {
			return nil, fmt.Errorf("stored artifact content claims %d bytes, over the %d limit", n, memory.MaxArtifactSize)
		}
		if cap(dst) < n {
			dst = make([]byte, n)
		}
		out, err := s2.Decode(dst[:n], stored)
		if err != nil {
			return nil, fmt.Errorf("stored artifact content is corrupt: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("stored artifact content has unknown encoding %d", enc)
}

// tagRE strips HTML markup before indexing; compiled on first use.
var tagRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?s)<script.*?</script>|<style.*?</style>|<[^>]*>`)
})

// indexText is the text search indexes for an artifact: nothing for binary or non-UTF-8
// content (found by name only), the first MaxIndexedBytes otherwise, HTML without tags.
func indexText(typ string, content []byte) string {
	if typ == memory.TypeBinary || !utf8.Valid(content) {
		return ""
	}
	if len(content) > MaxIndexedBytes {
		content = content[:MaxIndexedBytes]
		// the whole was valid UTF-8, so only the last rune can have been cut
		for i := len(content) - 1; i >= 0 && i >= len(content)-utf8.UTFMax; i-- {
			if utf8.RuneStart(content[i]) {
				if !utf8.FullRune(content[i:]) {
					content = content[:i]
				}
				break
			}
		}
	}
	body := string(content)
	if typ == memory.TypeHTML {
		body = tagRE().ReplaceAllString(body, " ")
	}
	return body
}

// searchText decodes stored content and returns its indexText.
func searchText(typ string, stored []byte, enc int) (string, error) {
	if enc == encBucket {
		return string(stored), nil
	}
	if enc != encS2 {
		b, err := decodeContent(enc, stored)
		if err != nil {
			return "", err
		}
		return indexText(typ, b), nil
	}
	b, err := decodeContentInto(decodeBufs.Get(0), enc, stored)
	if err != nil {
		return "", err
	}
	defer decodeBufs.Put(b) // indexText copies the text out of it
	return indexText(typ, b), nil
}

// searchTextFunc is the SQL function relay_search_text(type, content, enc) that the index
// layout of migration 0200 read artifact text through; registered still because that
// migration's view names it until migration 0300 drops it.
const searchTextFunc = "relay_search_text"

var registerFuncs = sync.OnceValue(func() error {
	err := sqlitedrv.RegisterScalarFunction(artifactTextFunc, 2, func(ctx *sqlitedrv.FunctionContext, args []driver.Value) (driver.Value, error) {
		token, _ := args[0].(string)
		ref, _ := args[1].(string)
		return artifactText(token, ref)
	})
	if err != nil {
		return err
	}
	return sqlitedrv.RegisterDeterministicScalarFunction(searchTextFunc, 3, func(ctx *sqlitedrv.FunctionContext, args []driver.Value) (driver.Value, error) {
		typ, _ := args[0].(string)
		var stored []byte
		switch v := args[1].(type) {
		case []byte:
			stored = v
		case string:
			stored = []byte(v)
		}
		enc, _ := args[2].(int64)
		s, err := searchText(typ, stored, int(enc))
		if err != nil {
			return "", nil // a corrupt row must not break every search; it just has no snippet
		}
		return s, nil
	})
})

// openContent returns a reader of an artifact's body stored as enc, which fails at its end
// unless the bytes hash to sum.
func (s *SQLite) openContent(ctx context.Context, sum string, enc int, stored []byte) (io.ReadCloser, error) {
	if enc == encBucket {
		return s.openBucket(ctx, sum)
	}
	b, err := decodeContent(enc, stored)
	if err != nil {
		return nil, err
	}
	return blob.Verify(io.NopCloser(bytes.NewReader(b)), sum, "artifact body "+sum[:min(12, len(sum))]), nil
}
