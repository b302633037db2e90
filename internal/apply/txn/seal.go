package txn

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/relaydev/relay/internal/relayhome"
)

// RecordKeyFile is the per-machine secret, inside $RELAY_HOME, that seals the
// records relay writes: anything in .relaycode/ may have come with a clone,
// so recovery only acts on records sealed with this key.
const RecordKeyFile = relayhome.RecordKeyFile

const sealPrefix = "seal: "

// LoadRecordKey returns the record key in home, creating it (0600) when it is
// missing.
func LoadRecordKey(home string) ([]byte, error) {
	key, err := ReadRecordKey(home)
	if err != nil || key != nil {
		return key, err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", home, err)
	}
	buf := make([]byte, 32)
	_, _ = rand.Read(buf)
	name := filepath.Join(home, RecordKeyFile)
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return ReadRecordKey(home) // another relay created it first
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	if _, err := f.WriteString(hex.EncodeToString(buf) + "\n"); err != nil {
		f.Close()
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return buf, f.Close()
}

// ReadRecordKey returns the record key in home, or nil when there is none.
func ReadRecordKey(home string) ([]byte, error) {
	name := filepath.Join(home, RecordKeyFile)
	fi, err := os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > 256 {
		return nil, fmt.Errorf("%s is not a relay record key (a small regular file); move it aside and run relay again", name)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(string(bytes.TrimSpace(b)))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("%s is not a relay record key (64 hex digits); move it aside and run relay again", name)
	}
	return key, nil
}

func sealMAC(key, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("relay record v1\x00"))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// SealRecord is a record body as relay writes it with key: the body, then
// its MAC as the last line (a YAML key that readers ignore).
func SealRecord(key, body []byte) []byte { return seal(key, body) }

func seal(key, body []byte) []byte {
	if key == nil {
		return body
	}
	out := make([]byte, 0, len(body)+len(sealPrefix)+65)
	out = append(out, body...)
	return append(append(append(out, sealPrefix...), sealMAC(key, body)...), '\n')
}

// errNoSeal is a record without the seal relay writes.
var errNoSeal = errors.New("it carries no seal from relay on this machine, so relay did not write it here (it may have come with the repository, or from a relay version before records were sealed)")

// errUnsealed is a record that this machine's relay did not write.
func errUnsealed() error {
	return errors.New("its seal does not match the key in " + recordKeyPath() + ", so relay did not write it here (it may have come with the repository)")
}

// recordKeyPath names the record key's file as the user finds it on this machine.
func recordKeyPath() string {
	if home, err := relayhome.Dir(); err == nil {
		return filepath.Join(home, RecordKeyFile)
	}
	return "$RELAY_HOME/" + RecordKeyFile
}

// unseal checks the last line's MAC and returns the record without it.
func unseal(key, data []byte) ([]byte, error) {
	if key == nil {
		return nil, errors.New("there is no record key (" + recordKeyPath() + ") on this machine, so relay did not write it here")
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		return nil, errNoSeal
	}
	i := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	last := data[i : len(data)-1]
	if !bytes.HasPrefix(last, []byte(sealPrefix)) {
		return nil, errNoSeal
	}
	body := data[:i]
	if !hmac.Equal(last[len(sealPrefix):], []byte(sealMAC(key, body))) {
		return nil, errUnsealed()
	}
	return body, nil
}
