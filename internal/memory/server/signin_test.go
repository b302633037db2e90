package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func signinDo(t *testing.T, h http.Handler, path, token, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:7777"+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s: body %q is not JSON: %v", path, rec.Body.String(), err)
	}
	return rec.Code, out
}

func issueCode(t *testing.T, h http.Handler) string {
	t.Helper()
	st, out := signinDo(t, h, "/auth/codes", "sekrit", "")
	code, _ := out["code"].(string)
	if st != http.StatusCreated || len(code) < 22 { // ≥128 bits in base64url
		t.Fatalf("issue: %d %v", st, out)
	}
	return code
}

func TestSigninCodeTradesOnce(t *testing.T) {
	s := New(Options{Token: "sekrit"})
	h := s.Handler()
	code := issueCode(t, h)

	// The trade needs no token: the code is the credential.
	st, out := signinDo(t, h, "/auth/code", "", `{"code":"`+code+`"}`)
	if st != http.StatusOK || out["token"] != "sekrit" {
		t.Fatalf("first trade: %d %v", st, out)
	}
	st, out = signinDo(t, h, "/auth/code", "", `{"code":"`+code+`"}`)
	if st != http.StatusUnauthorized || !strings.Contains(signinErr(out, "message"), "used, expired or unknown") {
		t.Fatalf("second trade: %d %v", st, out)
	}
}

func TestSigninCodeUnknownAndExpired(t *testing.T) {
	s := New(Options{Token: "sekrit"})
	now := time.Now()
	s.codes.now = func() time.Time { return now }
	h := s.Handler()

	st, out := signinDo(t, h, "/auth/code", "", `{"code":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`)
	if st != http.StatusUnauthorized || signinErr(out, "code") != "code_invalid" {
		t.Fatalf("unknown: %d %v", st, out)
	}
	code := issueCode(t, h)
	now = now.Add(CodeTTL)
	st, out = signinDo(t, h, "/auth/code", "", `{"code":"`+code+`"}`)
	if st != http.StatusUnauthorized || signinErr(out, "code") != "code_invalid" {
		t.Fatalf("expired: %d %v", st, out)
	}
	st, out = signinDo(t, h, "/auth/code", "", `{}`)
	if st != http.StatusBadRequest {
		t.Fatalf("no code: %d %v", st, out)
	}
}

func TestSigninIssueNeedsToken(t *testing.T) {
	h := New(Options{Token: "sekrit"}).Handler()
	if st, out := signinDo(t, h, "/auth/codes", "", ""); st != http.StatusUnauthorized {
		t.Fatalf("issue without token: %d %v", st, out)
	}
	if st, out := signinDo(t, h, "/auth/codes", "wrong", ""); st != http.StatusUnauthorized {
		t.Fatalf("issue with a wrong token: %d %v", st, out)
	}
}

func TestSigninPendingCodesBounded(t *testing.T) {
	s := New(Options{Token: "sekrit"})
	h := s.Handler()
	first := issueCode(t, h)
	for range maxPendingCodes {
		issueCode(t, h)
	}
	if st, _ := signinDo(t, h, "/auth/code", "", `{"code":"`+first+`"}`); st != http.StatusUnauthorized {
		t.Fatalf("the oldest code outlived the cap: %d", st)
	}
}

func signinErr(out map[string]any, field string) string {
	e, _ := out["error"].(map[string]any)
	v, _ := e[field].(string)
	return v
}
