package attack

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/relaydev/relay/internal/testsupport"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A hostile bundle: a zip someone sends you to `relay import` (POST /import).
// Its hashes are valid (the attacker computed them), so only validating the
// content and counting the inflated bytes protect the daemon.

// bundleFixture is a real export of a thread with state history, artifacts
// and events, made through the API of a running daemon.
func bundleFixture(t *testing.T, d *daemon) (threadID string, zipb []byte) {
	t.Helper()
	tid := d.NewThread(t, "exported")
	for i := range 3 {
		st, b := d.Do(t, "POST", "/threads/"+tid+"/artifacts?name=notes"+strconv.Itoa(i)+".md&type=markdown",
			strings.NewReader(fmt.Sprintf("# notes %d\n", i)), "Content-Type", "application/octet-stream")
		if st >= 300 {
			t.Fatalf("put artifact: %d %s", st, b)
		}
	}
	for i := range 5 {
		patch := fmt.Sprintf(`[{"op":"add","path":"/facts/-","value":{"id":"f%d","key":"k","value":%d}}]`, i, i)
		if st := d.JSON(t, "POST", "/threads/"+tid+"/state/patch", json.RawMessage(patch), nil); st >= 300 {
			t.Fatalf("patch state: %d", st)
		}
	}
	st, b := d.Do(t, "GET", "/threads/"+tid+"/export", nil)
	if st != 200 {
		t.Fatalf("export: %d %s", st, b)
	}
	return tid, b
}

// bundle is an unpacked export that can be edited and signed again.
type bundle struct {
	files    map[string][]byte
	manifest map[string]any
}

func unpack(t *testing.T, zipb []byte) *bundle {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(zipb), int64(len(zipb)))
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{files: map[string][]byte{}}
	for _, f := range zr.File {
		rc, _ := f.Open()
		c, _ := io.ReadAll(rc)
		rc.Close()
		if f.Name == "manifest.json" {
			if err := json.Unmarshal(c, &b.manifest); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b.files[f.Name] = c
	}
	return b
}

// sign zips the bundle with a manifest whose hashes and sizes all match.
func (b *bundle) sign() []byte {
	files, sizes := map[string]any{}, map[string]any{}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, c := range b.files {
		sum := sha256.Sum256(c)
		files[name], sizes[name] = hex.EncodeToString(sum[:]), len(c)
		w, _ := zw.Create(name)
		w.Write(c)
	}
	m := map[string]any{}
	for k, v := range b.manifest {
		m[k] = v
	}
	m["files"], m["sizes"] = files, sizes
	mb, _ := json.Marshal(m)
	w, _ := zw.Create("manifest.json")
	w.Write(mb)
	zw.Close()
	return buf.Bytes()
}

// editRows applies fn to rows of a .jsonl entry (which < 0: every row).
func (b *bundle) editRows(t *testing.T, name string, which int, fn func(row map[string]any)) {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(b.files[name]), []byte("\n"))
	var out bytes.Buffer
	for i, l := range lines {
		row := map[string]any{}
		dec := json.NewDecoder(bytes.NewReader(l))
		dec.UseNumber()
		if err := dec.Decode(&row); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if which < 0 || which == i {
			fn(row)
		}
		nb, _ := json.Marshal(row)
		out.Write(nb)
		out.WriteByte('\n')
	}
	b.files[name] = out.Bytes()
}

// moveThread rewrites the thread id everywhere to another spelling.
func (b *bundle) moveThread(form func(string) string) {
	old := b.manifest["thread_id"].(string)
	id := form(old)
	b.manifest["thread_id"] = id
	for n, c := range b.files {
		b.files[n] = bytes.ReplaceAll(c, []byte(old), []byte(id))
	}
}

func TestHostileBundleContent(t *testing.T) {
	s := newSandbox(t)
	d := startDaemon(t, s)
	tid, good := bundleFixture(t, d)
	attacks := []struct {
		name string
		edit func(t *testing.T, b *bundle)
		want string
	}{
		{"event type forges an SSE frame", func(t *testing.T, b *bundle) {
			b.editRows(t, "events.jsonl", 0, func(r map[string]any) { r["type"] = "x\n\nevent: state.patched\ndata: {\"forged\":true}\n" })
		}, "has type"},
		{"event type with OSC 52", func(t *testing.T, b *bundle) {
			b.editRows(t, "events.jsonl", 0, func(r map[string]any) { r["type"] = "\x1b]52;c;eA==\x07" })
		}, "has type"},
		{"event type with C1 CSI", func(t *testing.T, b *bundle) {
			b.editRows(t, "events.jsonl", 0, func(r map[string]any) { r["type"] = "a\u009b2J" })
		}, "has type"},
		{"event time not a time", func(t *testing.T, b *bundle) {
			b.editRows(t, "events.jsonl", 0, func(r map[string]any) { r["at"] = "yesterday\x1b[2J" })
		}, "not an RFC 3339 time"},
		{"state snapshot []", func(t *testing.T, b *bundle) {
			b.editRows(t, "snapshots.jsonl", 0, func(r map[string]any) { r["doc"] = json.RawMessage(`[]`) })
		}, "not a valid state document"},
		{"state snapshot null", func(t *testing.T, b *bundle) {
			b.editRows(t, "snapshots.jsonl", 0, func(r map[string]any) { r["doc"] = json.RawMessage(`null`) })
		}, "not a valid state document"},
		{"state snapshot number", func(t *testing.T, b *bundle) {
			b.editRows(t, "snapshots.jsonl", 0, func(r map[string]any) { r["doc"] = json.RawMessage(`7`) })
		}, "not a valid state document"},
		{"state snapshot of another thread", func(t *testing.T, b *bundle) {
			b.files["snapshots.jsonl"] = bytes.ReplaceAll(b.files["snapshots.jsonl"], []byte(tid), []byte("00000000-0000-4000-8000-000000000000"))
		}, "belongs to thread"},
		{"state patch that cannot apply", func(t *testing.T, b *bundle) {
			b.editRows(t, "versions.jsonl", 2, func(r map[string]any) { r["patch"] = json.RawMessage(`[{"op":"replace","path":"/missing","value":1}]`) })
		}, "does not apply"},
		{"thread id upper case", func(t *testing.T, b *bundle) { b.moveThread(strings.ToUpper) }, "canonical form"},
		{"thread id in braces", func(t *testing.T, b *bundle) { b.moveThread(func(s string) string { return "{" + s + "}" }) }, "canonical form"},
		{"thread id urn", func(t *testing.T, b *bundle) { b.moveThread(func(s string) string { return "urn:uuid:" + s }) }, "canonical form"},
		{"thread id hex only", func(t *testing.T, b *bundle) {
			b.moveThread(func(s string) string { return strings.ReplaceAll(s, "-", "") })
		}, "canonical form"},
		{"thread id path traversal", func(t *testing.T, b *bundle) { b.moveThread(func(s string) string { return "../../" + s[6:] }) }, ""},
		{"mime text/html", func(t *testing.T, b *bundle) {
			b.editRows(t, "artifacts.jsonl", 0, func(r map[string]any) { r["mime"] = "TEXT/HTML" })
		}, "has mime"},
		{"mime header injection", func(t *testing.T, b *bundle) {
			b.editRows(t, "artifacts.jsonl", 0, func(r map[string]any) { r["mime"] = "text/plain\r\nSet-Cookie: relay=1" })
		}, "has mime"},
		{"mime no subtype", func(t *testing.T, b *bundle) {
			b.editRows(t, "artifacts.jsonl", 0, func(r map[string]any) { r["mime"] = "javascript" })
		}, "has mime"},
		{"artifact name two lines", func(t *testing.T, b *bundle) {
			b.editRows(t, "artifacts.jsonl", 0, func(r map[string]any) { r["name"] = "ok\nREF  TYPE  forged" })
		}, "one line"},
		{"artifact source ref traversal", func(t *testing.T, b *bundle) {
			b.editRows(t, "artifacts.jsonl", 0, func(r map[string]any) { r["source_refs"] = `["../../x"]` })
		}, "not an artifact ref"},
		{"artifact size lies", func(t *testing.T, b *bundle) {
			b.editRows(t, "artifacts.jsonl", 0, func(r map[string]any) { r["size"] = 1 })
		}, "sha256/size"},
		{"extra executable entry", func(t *testing.T, b *bundle) { b.files["run.sh"] = []byte("#!/bin/sh\nid\n") }, "unexpected entry"},
		{"entry escaping the bundle", func(t *testing.T, b *bundle) { b.files["../../.bashrc"] = []byte("evil\n") }, "unsafe path"},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			b := unpack(t, good)
			a.edit(t, b)
			st, body := d.Do(t, "POST", "/import", bytes.NewReader(b.sign()), "Content-Type", "application/zip")
			if st != 400 || !strings.Contains(string(body), "unsafe_bundle") || !strings.Contains(string(body), a.want) {
				t.Fatalf("status %d %s; want 400 unsafe_bundle mentioning %q", st, body, a.want)
			}
		})
	}
	// Nothing was imported, and every thread still reads without a 500.
	var list struct {
		Threads []struct {
			ID string `json:"thread_id"`
		} `json:"threads"`
	}
	if st := d.JSON(t, "GET", "/threads", nil, &list); st != 200 || len(list.Threads) != 1 {
		t.Fatalf("threads after the attacks: status %d, %d threads (want only the original)", st, len(list.Threads))
	}
	for _, p := range []string{"", "/state", "/state/header", "/artifacts", "/events"} {
		if st, b := d.Do(t, "GET", "/threads/"+tid+p, nil); st != 200 {
			t.Errorf("GET /threads/%s%s: %d %s", tid, p, st, b)
		}
	}
	// The signed original imports (as a copy): the refusals came from the edits.
	if st, b := d.Do(t, "POST", "/import?as_new=1", bytes.NewReader(unpack(t, good).sign())); st != 200 {
		t.Fatalf("import of the re-signed export: %d %s", st, b)
	}
}

// zeroEntry is the deflated form of n zero bytes (the last one replaced by
// tail) with its CRC, computed once so a bomb of many such entries costs
// nothing to build.
func zeroEntry(n int, tail byte) (deflated []byte, crc uint32, sum string) {
	var buf bytes.Buffer
	fw, _ := flate.NewWriter(&buf, flate.BestCompression)
	zeros := make([]byte, 1<<20)
	h, c := sha256.New(), crc32.NewIEEE()
	for left := n; left > 0; left -= len(zeros) {
		chunk := zeros[:min(left, len(zeros))]
		if left <= len(zeros) {
			chunk = append(bytes.Clone(chunk[:len(chunk)-1]), tail)
		}
		fw.Write(chunk)
		h.Write(chunk)
		c.Write(chunk)
	}
	fw.Close()
	return buf.Bytes(), c.Sum32(), hex.EncodeToString(h.Sum(nil))
}

// zipBomb builds a bundle of the fixture's metadata plus count artifacts of
// size zero bytes each, with honest sizes; the last artifact (in ref order)
// does not match the hash it declares, so even an import that inflates and
// hashes every entry ends refused and writes nothing.
func zipBomb(t *testing.T, good []byte, count, size int) []byte {
	t.Helper()
	b := unpack(t, good)
	deflated, crc, sum := zeroEntry(size, 0)
	poison, poisonCRC, _ := zeroEntry(size, 1)
	var rows bytes.Buffer
	files, sizes := map[string]any{}, map[string]any{}
	for n := range b.files {
		if strings.HasPrefix(n, "artifacts/") {
			delete(b.files, n)
		}
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range count {
		ref := fmt.Sprintf("%026x", 0xb0b0000+i)
		name := "artifacts/" + ref
		data, c := deflated, crc
		if i == count-1 {
			data, c = poison, poisonCRC
		}
		w, err := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate, CRC32: c,
			CompressedSize64: uint64(len(data)), UncompressedSize64: uint64(size)})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
		files[name], sizes[name] = sum, size
		r, _ := json.Marshal(map[string]any{"ref": ref, "type": "binary", "mime": "application/octet-stream", "name": "zeros",
			"size": size, "hash": sum, "created_at": "2026-01-01T00:00:00Z"})
		rows.Write(r)
		rows.WriteByte('\n')
	}
	b.files["artifacts.jsonl"] = rows.Bytes()
	b.files["cap_calls.jsonl"] = nil
	for name, c := range b.files {
		h := sha256.Sum256(c)
		files[name], sizes[name] = hex.EncodeToString(h[:]), len(c)
		w, _ := zw.Create(name)
		w.Write(c)
	}
	m := b.manifest
	m["files"], m["sizes"] = files, sizes
	mb, _ := json.Marshal(m)
	w, _ := zw.Create("manifest.json")
	w.Write(mb)
	zw.Close()
	return buf.Bytes()
}

// peakRSS is the daemon's peak resident memory (VmHWM) in bytes.
func peakRSS(t *testing.T, s *sandbox) int64 {
	t.Helper()
	var info struct {
		PID int `json:"pid"`
	}
	b, _ := os.ReadFile(filepath.Join(s.Relay, "daemon.json"))
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile("/proc/" + strconv.Itoa(info.PID) + "/status")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/<pid>/status")
	return 0
}

// TestZipBombImport: a 4 MB zip that inflates to 4 GB, and three imports at
// once of a bundle that inflates to just under the 1 GiB cap, must be refused
// with the daemon's peak memory staying far below what they inflate to.
func TestZipBombImport(t *testing.T) {
	s := newSandbox(t)
	d := startDaemon(t, s)
	_, good := bundleFixture(t, d)
	base := peakRSS(t, s)

	bomb := zipBomb(t, good, 80, 50<<20) // 4 GB declared
	if len(bomb) > 8<<20 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	st, body := d.Do(t, "POST", "/import", bytes.NewReader(bomb), "Content-Type", "application/zip")
	if st != 400 || !strings.Contains(string(body), "the limit is") {
		t.Fatalf("4 GB bomb: %d %s", st, body)
	}

	// Just under the cap: every entry is inflated and hashed. The race detector makes
	// inflating ten times slower, so a race build gets a smaller one.
	count, size := 19, 50<<20 // 950 MB
	if testsupport.RaceEnabled {
		count, size = 8, 20<<20 // 160 MB
	}
	under := zipBomb(t, good, count, size)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, body := d.Do(t, "POST", "/import", bytes.NewReader(under), "Content-Type", "application/zip")
			if st != 400 || !strings.Contains(string(body), "does not match the manifest's sha256") {
				t.Errorf("%d MB bomb: %d %s", count*size>>20, st, body)
			}
		}()
	}
	wg.Wait()
	peak := peakRSS(t, s)
	limit := int64(300 << 20)
	if testsupport.RaceEnabled {
		limit *= 3 // the race detector's shadow memory
	}
	t.Logf("daemon peak RSS: %d MB before, %d MB after a %d-byte 4 GB bomb and three %d MB bombs at once", base>>20, peak>>20, len(bomb), count*size>>20)
	if peak > limit {
		t.Fatalf("daemon peak RSS %d MB, want under %d MB", peak>>20, limit>>20)
	}
}
