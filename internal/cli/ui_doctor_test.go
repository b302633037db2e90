package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/iostreams"
)

func TestCheckWebUI(t *testing.T) {
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ui/" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			return
		}
		http.NotFound(w, r)
	}))
	defer html.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	defer other.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()

	for _, tt := range []struct {
		name, url string
		status    checkStatus
		detail    string
	}{
		{"served", html.URL, statusOK, "served at " + html.URL + "/ui/"},
		{"something else on the port", other.URL, statusFail, "answered 404"},
		{"daemon down", downURL, statusOK, "once the daemon runs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			home := t.TempDir()
			f := &Factory{IO: ios, Home: func() (string, error) { return home, nil },
				Getenv: func(k string) string {
					if k == "RELAY_URL" {
						return tt.url
					}
					return ""
				}}
			got := checkWebUI(context.Background(), f)
			if got.Status != tt.status || !strings.Contains(got.Detail, tt.detail) {
				t.Errorf("got %+v, want %s containing %q", got, tt.status, tt.detail)
			}
		})
	}
}

func TestCheckBrowserWithoutDisplay(t *testing.T) {
	f := &Factory{Getenv: func(string) string { return "" }}
	got := checkBrowser(context.Background(), f)
	if got.Status == statusFail {
		t.Fatalf("a missing browser must never fail doctor: %+v", got)
	}
}
