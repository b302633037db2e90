package ask

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/relaydev/relay/internal/ask/ledger"
)

// Ledger is relay ask's record of every call to a friend, kept in
// $RELAY_HOME/ask/ledger.jsonl (one JSON line a call, mode 0600), so
// `relay stats --friends` can say per friend and model how often it was
// asked, how it failed, how long it took and what it cost.
type Ledger struct {
	Path string
}

// LedgerEntry is one call; LedgerRow sums one friend and model (package ledger, which
// the thread's report shares).
type (
	LedgerEntry = ledger.Entry
	LedgerRow   = ledger.Row
)

// Summarize groups entries by friend and model.
func Summarize(entries []LedgerEntry) []LedgerRow { return ledger.Summarize(entries) }

// maxLedgerBytes: past this the ledger starts over (the old one is kept as
// ledger.jsonl.1), so a busy machine's record stays bounded.
const maxLedgerBytes = 8 << 20

// Record appends one entry per answer; a ledger that cannot be written never
// fails the ask.
func (l *Ledger) Record(now time.Time, answers []Answer) error {
	if l == nil || l.Path == "" || len(answers) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(l.Path), 0o700); err != nil {
		return err
	}
	if fi, err := os.Lstat(l.Path); err == nil && (!fi.Mode().IsRegular() || fi.Size() > maxLedgerBytes) {
		if !fi.Mode().IsRegular() {
			return errors.New("the ledger is not a regular file")
		}
		_ = os.Rename(l.Path, l.Path+".1")
	}
	f, err := os.OpenFile(l.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	for _, a := range answers {
		e := LedgerEntry{Time: now.UTC(), Backend: a.Backend, Model: a.Model, Failure: a.Failure,
			DurationMS: a.Duration.Milliseconds(), InputTokens: a.InputTokens, OutputTokens: a.OutputTokens, CostUSD: a.CostUSD}
		e.Failure = a.FailureKind()
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		w.Write(append(b, '\n'))
	}
	return w.Flush()
}

// Read returns every entry; lines that are not entries are skipped.
func (l *Ledger) Read() ([]LedgerEntry, error) {
	f, err := os.Open(l.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []LedgerEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e LedgerEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Backend != "" {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// FailureKind is the kind of the answer's failure ("" when it answered).
func (a Answer) FailureKind() string {
	if a.Failure == "" && a.Err != nil {
		return a.Err.Kind.String()
	}
	return a.Failure
}
