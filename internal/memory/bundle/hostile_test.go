package bundle

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// resign rewrites a bundle's entries with edit (which may change, add or drop
// entries, and the manifest's thread id) and signs the result: hashes and
// sizes in the manifest match, so only content validation can refuse it.
func resign(t *testing.T, good []byte, edit func(files map[string][]byte, m *Manifest)) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(good), int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	var m Manifest
	for _, f := range zr.File {
		rc, _ := f.Open()
		b, _ := io.ReadAll(rc)
		rc.Close()
		if f.Name == fManifest {
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			continue
		}
		files[f.Name] = b
	}
	edit(files, &m)
	m.Files, m.Sizes = map[string]string{}, map[string]int64{}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, b := range files {
		sum := sha256.Sum256(b)
		m.Files[name], m.Sizes[name] = hex.EncodeToString(sum[:]), int64(len(b))
		w, _ := zw.Create(name)
		w.Write(b)
	}
	mb, _ := json.Marshal(m)
	w, _ := zw.Create(fManifest)
	w.Write(mb)
	zw.Close()
	return buf.Bytes()
}

// editLines applies fn to every JSON line of a .jsonl entry.
func editLines(t *testing.T, b []byte, fn func(i int, row map[string]any)) []byte {
	t.Helper()
	var out bytes.Buffer
	for i, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		row := map[string]any{}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&row); err != nil {
			t.Fatal(err)
		}
		fn(i, row)
		nb, _ := json.Marshal(row)
		out.Write(nb)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

func setEvent(t *testing.T, key string, v any) func(map[string][]byte, *Manifest) {
	return func(f map[string][]byte, _ *Manifest) {
		f[fEvents] = editLines(t, f[fEvents], func(i int, r map[string]any) { r[key] = v })
	}
}

func setArtifact(t *testing.T, key string, v any) func(map[string][]byte, *Manifest) {
	return func(f map[string][]byte, _ *Manifest) {
		f[fArtifacts] = editLines(t, f[fArtifacts], func(i int, r map[string]any) {
			if i == 0 {
				r[key] = v
			}
		})
	}
}

// setSnapshot replaces the doc of the first (last: the last) snapshot; with
// last and a single snapshot, it adds one at the thread's current version.
func setSnapshot(t *testing.T, last bool, doc string) func(map[string][]byte, *Manifest) {
	return func(f map[string][]byte, _ *Manifest) {
		n := bytes.Count(bytes.TrimSpace(f[fSnapshots]), []byte("\n")) + 1
		if n < 2 && last {
			var th struct {
				Version int `json:"version"`
			}
			if err := json.Unmarshal(f[fThread], &th); err != nil || th.Version < 2 {
				panic(fmt.Sprintf("the test thread needs two versions: %v", err))
			}
			row, _ := json.Marshal(map[string]any{"version": th.Version, "doc": json.RawMessage(doc)})
			f[fSnapshots] = append(append(bytes.TrimSpace(f[fSnapshots]), '\n'), append(row, '\n')...)
			return
		}
		f[fSnapshots] = editLines(t, f[fSnapshots], func(i int, r map[string]any) {
			if i == 0 && !last || i == n-1 && last {
				r["doc"] = json.RawMessage(doc)
			}
		})
	}
}

// setThreadID moves the whole bundle to another spelling of its thread id.
func setThreadID(form func(id string) string) func(map[string][]byte, *Manifest) {
	return func(f map[string][]byte, m *Manifest) {
		old := m.ThreadID
		m.ThreadID = form(old)
		for name, b := range f {
			f[name] = bytes.ReplaceAll(b, []byte(old), []byte(m.ThreadID))
		}
	}
}

// TestImportRefusesHostileContent: bundles whose hashes are all valid but
// whose content would forge SSE frames, break every read of the thread, list
// a thread the API cannot open, or serve an arbitrary Content-Type. Each is
// refused before anything is written.
func TestImportRefusesHostileContent(t *testing.T) {
	st := open(t)
	good := export(t, st, fill(t, st))
	ctx := context.Background()
	tests := []struct {
		name string
		edit func(map[string][]byte, *Manifest)
		want string
	}{
		{"event type forges an SSE frame", setEvent(t, "type", "x\nevent: admin\ndata: {\"pwned\":true}\n"), "event"},
		{"event type with CR", setEvent(t, "type", "cap.invoked\r"), "has type"},
		{"event type with ESC", setEvent(t, "type", "\x1b]0;owned\x07"), "has type"},
		{"event type with space", setEvent(t, "type", "cap invoked"), "has type"},
		{"event type empty", setEvent(t, "type", ""), "has type"},
		{"event type too long", setEvent(t, "type", strings.Repeat("a", 101)), "has type"},
		{"event type unicode", setEvent(t, "type", "cap.invoked\u2028"), "has type"},
		{"event time not a time", setEvent(t, "at", "yesterday"), "not an RFC 3339 time"},
		{"snapshot is an array", setSnapshot(t, false, `[]`), "not a valid state document"},
		{"snapshot is null", setSnapshot(t, false, `null`), "not a valid state document"},
		{"snapshot is a string", setSnapshot(t, false, `"x"`), "not a valid state document"},
		{"snapshot is an empty object", setSnapshot(t, false, `{}`), "not a valid state document"},
		{"later snapshot is null", setSnapshot(t, true, `null`), "not a valid state document"},
		{"patch does not apply", func(f map[string][]byte, _ *Manifest) {
			f[fVersions] = editLines(t, f[fVersions], func(i int, r map[string]any) {
				if i == 5 {
					r["patch"] = json.RawMessage(`[{"op":"remove","path":"/nope/0"}]`)
				}
			})
		}, "does not apply"},
		{"patch is not a patch", func(f map[string][]byte, _ *Manifest) {
			f[fVersions] = editLines(t, f[fVersions], func(i int, r map[string]any) {
				if i == 5 {
					r["patch"] = json.RawMessage(`{"op":"add"}`)
				}
			})
		}, "does not apply"},
		{"thread id upper case", setThreadID(strings.ToUpper), "canonical form"},
		{"thread id in braces", setThreadID(func(id string) string { return "{" + id + "}" }), "canonical form"},
		{"thread id as urn", setThreadID(func(id string) string { return "urn:uuid:" + id }), "canonical form"},
		{"thread id without hyphens", setThreadID(func(id string) string { return strings.ReplaceAll(id, "-", "") }), "canonical form"},
		{"mime injects a header", setArtifact(t, "mime", "text/plain\r\nSet-Cookie: a=b"), "has mime"},
		{"mime upper case", setArtifact(t, "mime", "TEXT/HTML"), "has mime"},
		{"mime without subtype", setArtifact(t, "mime", "html"), "has mime"},
		{"mime with space", setArtifact(t, "mime", "text/ html"), "has mime"},
		{"mime empty", setArtifact(t, "mime", ""), "has mime"},
		{"mime quoted parameter", setArtifact(t, "mime", `text/plain; charset="x"`), "has mime"},
		{"mime huge", setArtifact(t, "mime", "text/"+strings.Repeat("a", 300)), "has mime"},
		{"artifact name with newline", setArtifact(t, "name", "a\nb"), "one line"},
		{"artifact name with NUL", setArtifact(t, "name", "a\x00b"), "one line"},
		{"artifact created_by huge", setArtifact(t, "created_by", strings.Repeat("x", 201)), "at most 200"},
		{"artifact source ref escapes", setArtifact(t, "source_refs", `["../../etc/passwd"]`), "not an artifact ref"},
		{"artifact time not a time", setArtifact(t, "created_at", "0"), "not an RFC 3339 time"},
		{"thread name with newline", func(f map[string][]byte, _ *Manifest) {
			f[fThread] = bytes.Replace(f[fThread], []byte(`"exported"`), []byte(`"a\nb"`), 1)
		}, "one line"},
		{"thread negative counter", func(f map[string][]byte, _ *Manifest) {
			f[fThread] = bytes.Replace(f[fThread], []byte(`"cache_hits": 3`), []byte(`"cache_hits": -3`), 1)
		}, "negative counter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := resign(t, good, tt.edit)
			dst := open(t)
			_, err := Import(ctx, dst, bytes.NewReader(b), int64(len(b)), ImportOptions{})
			var ue *UnsafeError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want UnsafeError containing %q", err, tt.want)
			}
			// nothing was written
			ths, err := dst.ListThreads(ctx, 10)
			if err != nil || len(ths) != 0 {
				t.Fatalf("after a refused import: %d threads, %v", len(ths), err)
			}
		})
	}
	// the re-signed original still imports: the refusals come from the edits
	b := resign(t, good, func(map[string][]byte, *Manifest) {})
	if _, err := Import(ctx, open(t), bytes.NewReader(b), int64(len(b)), ImportOptions{}); err != nil {
		t.Fatalf("re-signed good bundle: %v", err)
	}
}

// TestImportZipBombs: sizes are claims until counted. Entries that inflate
// past what the zip or the manifest declares, declared totals over the cap,
// and a bomb of many highly compressed artifacts are refused, and memory
// stays near one entry whatever the bundle inflates to.
func TestImportZipBombs(t *testing.T) {
	st := open(t)
	good := export(t, st, fill(t, st))
	ctx := context.Background()

	t.Run("manifest size disagrees with the zip", func(t *testing.T) {
		b := resign(t, good, func(map[string][]byte, *Manifest) {})
		// rewrite the manifest's declared size of events.jsonl
		b = rewriteManifest(t, b, func(m *Manifest) { m.Sizes[fEvents]-- })
		_, err := Import(ctx, open(t), bytes.NewReader(b), int64(len(b)), ImportOptions{})
		if err == nil || !strings.Contains(err.Error(), "the zip says") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("manifest declares no size", func(t *testing.T) {
		b := rewriteManifest(t, resign(t, good, func(map[string][]byte, *Manifest) {}), func(m *Manifest) { delete(m.Sizes, fThread) })
		_, err := Import(ctx, open(t), bytes.NewReader(b), int64(len(b)), ImportOptions{})
		if err == nil || !strings.Contains(err.Error(), "declares no size") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("metadata over its cap", func(t *testing.T) {
		defer func(v int64) { MaxMetaTotal = v }(MaxMetaTotal)
		MaxMetaTotal = 1000
		_, err := Import(ctx, open(t), bytes.NewReader(good), int64(len(good)), ImportOptions{})
		if err == nil || !strings.Contains(err.Error(), "metadata is") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("many compressed artifacts stream instead of piling up", func(t *testing.T) {
		// 8 artifacts of 8 MB of zeros (a few KB each compressed), honest
		// sizes; the last one (in ref order) is not what its hash says, so
		// the import is refused after every artifact was inflated and hashed.
		const n, size = 8, 8 << 20
		zeros := make([]byte, size)
		sum := sha256.Sum256(zeros)
		lastRef := fmt.Sprintf("%026x", 0xabc0000+n-1)
		bomb := resign(t, good, func(f map[string][]byte, m *Manifest) {
			var rows bytes.Buffer
			for name := range f {
				if strings.HasPrefix(name, artDir) {
					delete(f, name)
				}
			}
			for i := range n {
				ref := fmt.Sprintf("%026x", 0xabc0000+i)
				f[artDir+ref] = zeros
				r, _ := json.Marshal(artifactRow{Ref: ref, Type: "binary", Mime: "application/octet-stream", Name: "zeros", Size: size,
					Hash: hex.EncodeToString(sum[:]), CreatedAt: "2026-01-01T00:00:00Z"})
				rows.Write(r)
				rows.WriteByte('\n')
			}
			f[fArtifacts] = rows.Bytes()
			f[fCalls] = nil
			last := append(bytes.Clone(zeros[:size-1]), 1)
			f[artDir+lastRef] = last
		})
		bomb = rewriteManifest(t, bomb, func(m *Manifest) { m.Files[artDir+lastRef] = hex.EncodeToString(sum[:]) })
		if len(bomb) > 1<<20 {
			t.Fatalf("the bomb is %d bytes; it should compress to well under 1 MB", len(bomb))
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Import(ctx, open(t), bytes.NewReader(bomb), int64(len(bomb)), ImportOptions{})
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), `entry "artifacts/`+lastRef+`" does not match the manifest's sha256`) {
			t.Fatalf("err = %v", err)
		}
		// The old import held every inflated entry: at least n*size bytes.
		if got := after.TotalAlloc - before.TotalAlloc; got > n*size/4 {
			t.Fatalf("importing a %d-byte bomb of %d MB allocated %d MB; artifacts must stream", len(bomb), n*size>>20, got>>20)
		}
	})
}

func rewriteManifest(t *testing.T, b []byte, fn func(*Manifest)) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		rc, _ := f.Open()
		c, _ := io.ReadAll(rc)
		rc.Close()
		if f.Name == fManifest {
			var m Manifest
			json.Unmarshal(c, &m)
			fn(&m)
			c, _ = json.Marshal(m)
		}
		w, _ := zw.Create(f.Name)
		w.Write(c)
	}
	zw.Close()
	return buf.Bytes()
}
