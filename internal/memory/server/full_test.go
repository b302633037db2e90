package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/memory/sqlite"
)

// TestStorageFull: a write the database has no room for (a real SQLITE_FULL, from
// max_page_count, as a full disk gives) is answered 507 storage_full with where the data
// lives, stores nothing, and once there is room again the same write and the next ones
// succeed: the writer recovers from a real failed commit, not an injected one.
func TestStorageFull(t *testing.T) {
	a := newTestAPI(t, "tok")
	th := a.newThread()
	ctx := context.Background()
	var pages int
	if err := a.store.ReadDB().QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	setCap := func(n int) {
		t.Helper()
		if err := a.store.WriteTx(ctx, func(tx sqlite.Tx) error {
			_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", n))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	setCap(pages + 4) // a 100 KB body needs 25 pages of 4 KB
	content := make([]byte, 100<<10)
	rand.Read(content)
	body, _ := json.Marshal(map[string]string{"type": "binary", "content_base64": base64.StdEncoding.EncodeToString(content)})
	path := "/threads/" + th + "/artifacts"

	code, _, resp := a.do("POST", path, "application/json", body)
	if code != http.StatusInsufficientStorage || errCode(resp) != "storage_full" || !strings.Contains(string(resp), a.store.Path()) {
		t.Fatalf("put into a full store: %d %s; want 507 storage_full naming %s", code, resp, a.store.Path())
	}
	if code, _, resp := a.do("GET", "/threads/"+th, "", nil); code != 200 || !strings.Contains(string(resp), `"artifact_count":0`) {
		t.Fatalf("after the refused put: %d %s; want no artifact", code, resp)
	}

	setCap(1 << 30) // room again
	if code, _, resp := a.do("POST", path, "application/json", body); code != http.StatusCreated {
		t.Fatalf("the same put with room: %d %s", code, resp)
	}
	patch := `[{"op":"add","path":"/facts/-","value":{"id":"a","key":"k","value":1}}]`
	if code, _, resp := a.do("POST", "/threads/"+th+"/state/patch", "application/json", []byte(patch)); code != 200 {
		t.Fatalf("a patch after: %d %s", code, resp)
	}
	if code, _, resp := a.do("GET", "/threads/"+th, "", nil); code != 200 || !strings.Contains(string(resp), `"artifact_count":1`) {
		t.Fatalf("at the end: %d %s; want one artifact", code, resp)
	}
}
