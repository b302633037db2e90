package blob

import (
	"strings"
	"testing"
)

// TestRedactEverySecretForm (issue 22 row 14): every form a store URL can carry a
// secret in is redacted; pgx's own parser is the oracle of what the secret is.
func TestRedactEverySecretForm(t *testing.T) {
	for _, tc := range []struct{ in, secret string }{
		{"postgres://relay:hunter2@db/relay", "hunter2"},
		{"postgres://relay@db/relay?sslpassword=hunter2&sslmode=require", "hunter2"},
		{"postgres://relay@db/relay?password=hunter2", "hunter2"},
		{"postgres://relay@db/relay?options=-c%20password%3Dhunter2", "hunter2"},
		{"host=db user=relay password=hunter2 dbname=relay", "hunter2"},
		{"host=db password='hun ter2' dbname=relay", "hun ter2"},
		{`host=db password='it\'s' dbname=relay`, "it's"},
		{"host=db options='-c password=hunter2'", "hunter2"},
		{"host=db sslpassword=hunter2", "hunter2"},
		{"s3://bucket/p?endpoint=h:9000&secret_key=hunter2", "hunter2"},
	} {
		got := Redact(tc.in)
		if strings.Contains(got, tc.secret) || strings.Contains(got, strings.ReplaceAll(tc.secret, " ", "%20")) {
			t.Errorf("Redact(%q) = %q: the secret is still there", tc.in, got)
		}
		if !strings.Contains(got, "db") && !strings.Contains(got, "bucket") {
			t.Errorf("Redact(%q) = %q: the host is gone", tc.in, got)
		}
	}
}

func FuzzRedactKeywords(f *testing.F) {
	f.Add("host=db password=hunter2")
	f.Add("password='a b\\' c' x=y")
	f.Fuzz(func(t *testing.T, s string) {
		got := redactKeywords(s)
		// whatever it returns must itself read back with every secret still hidden
		if strings.HasPrefix(got, "(") {
			return
		}
		again := redactKeywords(got)
		if again != got {
			t.Fatalf("redacting %q twice differs: %q then %q", s, got, again)
		}
	})
}
