package patch

import (
	"errors"
	"strings"
	"testing"
)

func TestApplyEdits(t *testing.T) {
	tests := []struct {
		name    string
		content string
		edits   []Edit
		want    string
		err     error
	}{
		{"substring inside a line", "const a = 1;\nconst b = 2;\n", []Edit{{OldString: "b = 2", NewString: "b = 3"}}, "const a = 1;\nconst b = 3;\n", nil},
		{"refuses two occurrences", "x = 1\nx = 1\n", []Edit{{OldString: "x = 1", NewString: "x = 2"}}, "", ErrEditAmbiguous},
		{"replace_all", "x = 1\ny\nx = 1\n", []Edit{{OldString: "x = 1", NewString: "x = 2", ReplaceAll: true}}, "x = 2\ny\nx = 2\n", nil},
		{"not found", "abc\n", []Edit{{OldString: "abd", NewString: "x"}}, "", ErrEditNotFound},
		{"identical is a no-op", "abc\n", []Edit{{OldString: "abc", NewString: "abc"}}, "", ErrEditNoOp},
		{"empty old on a non-empty file", "abc\n", []Edit{{OldString: "", NewString: "x"}}, "", ErrEditEmptyOld},
		{"empty old creates", "", []Edit{{OldString: "", NewString: "new\n"}}, "new\n", nil},
		{"edits apply in order", "a b c\n", []Edit{{OldString: "a", NewString: "x"}, {OldString: "x b", NewString: "y"}}, "y c\n", nil},
		{"all or nothing", "a b c\n", []Edit{{OldString: "a", NewString: "x"}, {OldString: "zzz", NewString: "y"}}, "", ErrEditNotFound},
		{"crlf file keeps crlf", "one\r\ntwo\r\nthree\r\n", []Edit{{OldString: "one\ntwo\n", NewString: "one\nTWO\nmore\n"}}, "one\r\nTWO\r\nmore\r\nthree\r\n", nil},
		{"whitespace-tolerant: trailing and inner runs", "if (a &&  b) {   \n  go()\n}\n", []Edit{{OldString: "if (a && b) {\n  go()", NewString: "if (a && b) {\n  stop()"}}, "if (a &&  b) {   \n  stop()\n}\n", nil},
		{"indentation-tolerant keeps relative indentation", "func f() {\n\tif x {\n\t\ty()\n\t}\n}\n",
			[]Edit{{OldString: "    if x {\n        y()\n    }", NewString: "    if x {\n        y()\n        z()\n    }\n    w()"}},
			"func f() {\n\tif x {\n\t\ty()\n\t\tz()\n\t}\n\tw()\n}\n", nil},
		{"indentation-tolerant, spaces deeper than written", "class A {\n        run() {\n            go();\n        }\n}\n",
			[]Edit{{OldString: "run() {\n    go();\n}", NewString: "run() {\n    go();\n    stop();\n}"}},
			"class A {\n        run() {\n            go();\n            stop();\n        }\n}\n", nil},
		{"tolerant match must still be unique", "  x  = 1\nx = 1\n", []Edit{{OldString: "x =  1", NewString: "x = 2"}}, "", ErrEditAmbiguous},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ApplyEdits(tc.content, tc.edits)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				var ee *EditError
				if !errors.As(err, &ee) || ee.Index == 0 {
					t.Fatalf("error %T %v does not name the edit", err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestEditStrategyBodies(t *testing.T) {
	content := "alpha beta\ngamma\n"
	for name, body := range map[string]string{
		"json object":                        `{"old_string": "beta", "new_string": "BETA"}`,
		"json list":                          `[{"old_string": "beta", "new_string": "BETA"}]`,
		"json edits":                         `{"edits": [{"old_string": "beta", "new_string": "BETA"}]}`,
		"search/replace with a partial line": "<<<<<<< SEARCH\nbeta\n=======\nBETA\n>>>>>>> REPLACE\n",
	} {
		t.Run(name, func(t *testing.T) {
			res, err := Apply(content, true, EditStrategy, body, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != "alpha BETA\ngamma\n" {
				t.Fatalf("got %q", res.Content)
			}
		})
	}
	_, err := Apply(content, true, EditStrategy, `{"old_string": "a", "new_string": "b"}`, Options{})
	var ae *ApplyError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "occurs 5 times, on lines 1, 2;") {
		t.Fatalf("ambiguous edit: %v", err)
	}
	if st := InferStrategy(`[{"old_string": "a", "new_string": "b", "replace_all": true}]`); st != EditStrategy {
		t.Fatalf("InferStrategy(JSON edits) = %s", st)
	}
	if st := InferStrategy(`{"old_string": "a", "new_string": "b", "name": "pkg"}`); st != Replace {
		t.Fatalf("InferStrategy(a JSON file) = %s", st)
	}
	if st, ok := ParseStrategy("edit"); !ok || st != EditStrategy {
		t.Fatal("ParseStrategy(edit)")
	}
}
