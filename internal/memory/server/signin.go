package server

// One-time sign-in codes for the web UI. `relay open` asks the daemon (with the API token) for a
// code and puts it in the URL fragment; the UI trades it once at POST /auth/code for the token.
// Codes live in memory only, are single use, expire in CodeTTL, and are never logged (they
// travel in bodies, and logRequests logs only the path).

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// CodeTTL is how long a sign-in code can be traded.
const CodeTTL = 60 * time.Second

// maxPendingCodes bounds the daemon's memory: issuing more drops the oldest.
const maxPendingCodes = 32

type signinCode struct {
	code    string
	expires time.Time
}

// signinCodes holds the codes not yet traded, oldest first.
type signinCodes struct {
	mu      sync.Mutex
	pending []signinCode
	now     func() time.Time // tests move the clock
}

// issue makes a fresh code with 192 random bits.
func (c *signinCodes) issue() (string, time.Time) {
	var b [24]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it panics on a broken system)
	code := base64.RawURLEncoding.EncodeToString(b[:])
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.dropExpired(now)
	if len(c.pending) >= maxPendingCodes {
		c.pending = c.pending[1:]
	}
	exp := now.Add(CodeTTL)
	c.pending = append(c.pending, signinCode{code: code, expires: exp})
	return code, exp
}

// redeem removes code and says whether it was pending and unexpired.
func (c *signinCodes) redeem(code string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropExpired(c.now())
	found := -1
	for i, p := range c.pending { // compare all, in constant time each: no early exit on a hit
		if subtle.ConstantTimeCompare([]byte(p.code), []byte(code)) == 1 {
			found = i
		}
	}
	if found < 0 {
		return false
	}
	c.pending = append(c.pending[:found], c.pending[found+1:]...)
	return true
}

func (c *signinCodes) dropExpired(now time.Time) {
	keep := c.pending[:0]
	for _, p := range c.pending {
		if now.Before(p.expires) {
			keep = append(keep, p)
		}
	}
	c.pending = keep
}

func (s *Server) signinRoutes() {
	s.mux.Handle("POST /auth/codes", s.api(s.handleIssueCode))
	s.mux.Handle("POST /auth/code", s.api(s.handleTradeCode))
}

// handleIssueCode (needs the token) returns {code, expires_at}.
func (s *Server) handleIssueCode(w http.ResponseWriter, r *http.Request) error {
	code, exp := s.codes.issue()
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, map[string]any{"code": code, "expires_at": exp.UTC().Format(time.RFC3339)})
	return nil
}

// handleTradeCode (public) trades {code} for {token}, once.
func (s *Server) handleTradeCode(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Code string `json:"code"`
	}
	if err := decodeJSON(w, r, 1<<10, &body); err != nil {
		return err
	}
	if body.Code == "" {
		return badRequest(`body needs "code" (from the URL relay open printed)`)
	}
	if !s.codes.redeem(body.Code) {
		return &apiError{Status: http.StatusUnauthorized, Code: "code_invalid",
			Msg: "this sign-in code is used, expired or unknown: codes work once, for 60 seconds; run relay open again for a new link"}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"token": string(s.token)})
	return nil
}
