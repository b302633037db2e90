package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errors"
	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/workspace"
)

func TestBrowserCommand(t *testing.T) {
	const u = "http://127.0.0.1:7474/ui/"
	onPath := func(names ...string) func(string) (string, error) {
		return func(n string) (string, error) {
			for _, x := range names {
				if x == n {
					return "/usr/bin/" + n, nil
				}
			}
			return "", errors.New("not found")
		}
	}
	tests := []struct {
		name    string
		goos    string
		env     map[string]string
		path    []string
		want    []string
		wantErr string
	}{
		{"linux display xdg-open", "linux", map[string]string{"DISPLAY": ":0"}, []string{"xdg-open"}, []string{"xdg-open", u}, ""},
		{"linux wayland fallback", "linux", map[string]string{"WAYLAND_DISPLAY": "wayland-0"}, []string{"sensible-browser"}, []string{"sensible-browser", u}, ""},
		{"linux ssh no display", "linux", nil, []string{"xdg-open"}, nil, "no graphical display"},
		{"linux nothing installed", "linux", map[string]string{"DISPLAY": ":0"}, nil, nil, "xdg-open not found"},
		{"wsl", "linux", map[string]string{"WSL_DISTRO_NAME": "Ubuntu"}, []string{"wslview", "xdg-open"}, []string{"wslview", u}, ""},
		{"darwin", "darwin", nil, []string{"open"}, []string{"open", u}, ""},
		{"windows", "windows", nil, []string{"rundll32"}, []string{"rundll32", "url.dll,FileProtocolHandler", u}, ""},
		{"BROWSER plain", "linux", map[string]string{"BROWSER": "firefox"}, []string{"firefox"}, []string{"firefox", u}, ""},
		{"BROWSER with %s and fallback list", "linux", map[string]string{"BROWSER": "nope:w3m -o x %s"}, []string{"w3m"}, []string{"w3m", "-o", "x", u}, ""},
		{"BROWSER not on PATH", "linux", map[string]string{"BROWSER": "nope", "DISPLAY": ":0"}, []string{"xdg-open"}, nil, "none of $BROWSER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			got, err := browserCommand(tt.goos, u, getenv, onPath(tt.path...))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, errNoBrowser) {
					t.Fatalf("err = %v, want errNoBrowser containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("argv (-want +got):\n%s", diff)
			}
		})
	}
}

// fakeDaemon serves the few routes `relay open` uses.
func fakeDaemon(t *testing.T, threads map[string]string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	writeErr := func(w http.ResponseWriter, status int, code, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg}})
	}
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("GET /threads/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		name, ok := threads[id]
		if !ok {
			writeErr(w, 404, "not_found", "thread "+id+" not found")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"thread_id": id, "name": name})
	})
	mux.HandleFunc("GET /threads", func(w http.ResponseWriter, r *http.Request) {
		var list []map[string]any
		for id, name := range threads {
			list = append(list, map[string]any{"thread_id": id, "name": name})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"threads": list})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestOpenRun(t *testing.T) {
	threads := map[string]string{
		"550e8400-e29b-41d4-a716-446655440000": "my-first-run",
		"550e9999-0000-4000-8000-000000000000": "other",
		"7c1d0000-0000-4000-8000-000000000000": "dup",
		"7c2d0000-0000-4000-8000-000000000000": "dup",
	}
	srv := fakeDaemon(t, threads)

	tests := []struct {
		name       string
		thread     string
		browserErr error
		noBrowser  bool
		wantURL    string
		wantOpened bool
		wantErr    string
	}{
		{"list", "", nil, false, "/ui/", true, ""},
		{"full id", "550e8400-e29b-41d4-a716-446655440000", nil, false, "/ui/#/t/550e8400-e29b-41d4-a716-446655440000", true, ""},
		{"prefix", "550e84", nil, false, "/ui/#/t/550e8400-e29b-41d4-a716-446655440000", true, ""},
		{"name", "other", nil, false, "/ui/#/t/550e9999-0000-4000-8000-000000000000", true, ""},
		{"ambiguous prefix", "550e", nil, false, "", false, `"550e" matches 2 threads`},
		{"ambiguous name", "dup", nil, false, "", false, `"dup" matches 2 threads`},
		{"unknown", "nope", nil, false, "", false, `no thread "nope"`},
		{"no browser prints", "other", errNoBrowser, false, "/ui/#/t/550e9999-0000-4000-8000-000000000000", false, ""},
		{"--no-browser", "", nil, true, "/ui/", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, out, errOut := iostreams.Test()
			var opened []string
			o := &OpenOptions{
				IO:        ios,
				Getenv:    func(string) string { return "" },
				Thread:    tt.thread,
				NoBrowser: tt.noBrowser,
				JSON:      true,
				Client:    func() (*client.Client, error) { return &client.Client{BaseURL: srv.URL, HTTP: srv.Client()}, nil },
				Browser: func(_ context.Context, u string) error {
					opened = append(opened, u)
					return tt.browserErr
				},
			}
			err := openRun(context.Background(), o)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if len(opened) != 0 {
					t.Errorf("opened a browser on error: %v", opened)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v (stderr %s)", err, errOut)
			}
			var got struct {
				URL    string `json:"url"`
				Opened bool   `json:"opened"`
			}
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("stdout is not JSON: %q", out)
			}
			if got.URL != srv.URL+tt.wantURL || got.Opened != tt.wantOpened {
				t.Errorf("got %+v, want url %s opened %v", got, srv.URL+tt.wantURL, tt.wantOpened)
			}
			if tt.noBrowser && len(opened) != 0 {
				t.Errorf("--no-browser still opened %v", opened)
			}
		})
	}
}

func TestOpenPrintsURLWhenNoBrowser(t *testing.T) {
	srv := fakeDaemon(t, nil)
	ios, _, out, errOut := iostreams.Test()
	o := &OpenOptions{
		IO:     ios,
		Getenv: func(string) string { return "" },
		Client: func() (*client.Client, error) {
			return &client.Client{BaseURL: srv.URL, Token: "t", HTTP: srv.Client()}, nil
		},
		Browser: func(context.Context, string) error { return errNoBrowser },
	}
	if err := openRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if out.String() != srv.URL+"/ui/\n" {
		t.Errorf("stdout %q", out)
	}
	if !strings.Contains(errOut.String(), "open this URL yourself") || !strings.Contains(errOut.String(), "API token") {
		t.Errorf("stderr %q", errOut)
	}
}

func TestOpenDaemonDown(t *testing.T) {
	srv := fakeDaemon(t, nil)
	url := srv.URL
	srv.Close()
	ios, _, _, _ := iostreams.Test()
	o := &OpenOptions{
		IO:      ios,
		Getenv:  func(string) string { return "" },
		Client:  func() (*client.Client, error) { return &client.Client{BaseURL: url, HTTP: &http.Client{}}, nil },
		Browser: func(context.Context, string) error { t.Fatal("browser opened although the daemon is down"); return nil },
	}
	err := openRun(context.Background(), o)
	if _, hint := workspace.Explain(err, workspace.Person); err == nil || hint != "relay up" {
		t.Fatalf("err = %#v, want a hint to run relay up", err)
	}
}
