package patch

import (
	"errors"
	"strings"
	"testing"
)

func TestApplyBasics(t *testing.T) {
	orig := "package main\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n"
	tests := []struct {
		name     string
		strategy Strategy
		body     string
		want     string
	}{
		{"msr", MultiSearchReplace, "<<<<<<< SEARCH\n\tfmt.Println(\"hi\")\n=======\n\tfmt.Println(\"bye\")\n>>>>>>> REPLACE\n", strings.Replace(orig, "hi", "bye", 1)},
		{"unified", Unified, "@@ -3,3 +3,3 @@\n func main() {\n-\tfmt.Println(\"hi\")\n+\tfmt.Println(\"bye\")\n }\n", strings.Replace(orig, "hi", "bye", 1)},
		{"new-unified", NewUnified, "@@ ... @@\n func main() {\n-\tfmt.Println(\"hi\")\n+\tfmt.Println(\"bye\")\n }\n", strings.Replace(orig, "hi", "bye", 1)},
		{"apply-patch", ApplyPatch, "@@ func main() {\n-\tfmt.Println(\"hi\")\n+\tfmt.Println(\"bye\")\n", strings.Replace(orig, "hi", "bye", 1)},
		{"replace", Replace, "x\n", "x\n"},
		{"indent", MultiSearchReplace, "<<<<<<< SEARCH\nfunc main() {\n    fmt.Println(\"hi\")\n}\n=======\nfunc main() {\n    if x {\n        fmt.Println(\"bye\")\n    }\n}\n>>>>>>> REPLACE\n", "package main\n\nfunc main() {\n\tif x {\n\t\tfmt.Println(\"bye\")\n\t}\n}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Apply(orig, true, tt.strategy, tt.body, Options{})
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if res.Content != tt.want {
				t.Errorf("got\n%q\nwant\n%q", res.Content, tt.want)
			}
			// Applying again must not silently apply twice.
			if tt.strategy != Replace {
				_, err := Apply(res.Content, true, tt.strategy, tt.body, Options{})
				var ae *ApplyError
				if !errors.As(err, &ae) || !ae.AlreadyApplied {
					t.Errorf("second apply: got %v, want already applied", err)
				}
			}
		})
	}
}

func TestParseBasics(t *testing.T) {
	resp := "Some reasoning.\n\n```ts // src/a.ts\nconsole.log(1)\n```\n\n```ts // src/b.ts\n//TODO: delete this file\n```\n\n```json // rename-file\n{\"from\": \"x.ts\", \"to\": \"y.ts\"}\n```\n\n```yaml\nprojectId: p\nuuid: 5e1a41d8-64a7-4663-c56e-3ebd03f7a1f5\ngitCommitMsg:\n  - a\n  - b\n```\n"
	r, err := Parse(resp)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Operations) != 3 || r.Operations[0].Kind != OpWrite || r.Operations[1].Kind != OpDelete || r.Operations[2].Kind != OpRename {
		t.Fatalf("ops = %+v", r.Operations)
	}
	if r.Control.GitCommitMsg != "a\nb" || r.Control.ProjectID != "p" {
		t.Errorf("control = %+v", r.Control)
	}
	if len(r.Reasoning) != 1 || r.Reasoning[0] != "Some reasoning." {
		t.Errorf("reasoning = %q", r.Reasoning)
	}
	_, err = Parse("just text")
	var np *NotPatchError
	if !errors.As(err, &np) {
		t.Errorf("want NotPatchError, got %v", err)
	}
}
